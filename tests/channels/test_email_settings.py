"""The email channel's settings: read from the environment and checked at start, so a
half configuration stops ``parkgate serve`` naming what is missing; the SMTP URL's
forms (STARTTLS, TLS, a relay in the clear; the login in the URL or its own variables);
and a server that does not offer the STARTTLS the URL asks for is never sent to in the clear."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from email_setup import ALICE, email_env
from live_server import free_port
from smtp_server import SmtpServer

from parkgate import ChannelTarget, Gateway
from parkgate.channels.email.channel import EmailChannel
from parkgate.channels.email.settings import SmtpServer as Smtp
from parkgate.channels.email.settings import email_settings, smtp_server
from parkgate.errors import ChannelJobFailed, InputError, SettingsError

PUBLIC = "https://parkgate.example.com"


@pytest.fixture
def smtp() -> Iterator[SmtpServer]:
    running = SmtpServer().start()
    yield running
    running.stop()


@pytest.mark.parametrize(
    ("url", "extra", "expected"),
    [
        ("smtp://mail.example.com", {}, Smtp("mail.example.com", 587, tls=False, starttls=True)),
        ("smtps://mail.example.com", {}, Smtp("mail.example.com", 465, tls=True, starttls=False)),
        ("smtp://127.0.0.1:2525?starttls=off", {}, Smtp("127.0.0.1", 2525, tls=False, starttls=False)),
        (
            "smtps://bot%40example.com:p%3Ass@mail.example.com:4650",
            {},
            Smtp("mail.example.com", 4650, tls=True, starttls=False, user="bot@example.com", password="p:ss"),
        ),
        (
            "smtp://mail.example.com",
            {"PARKGATE_SMTP_USER": "bot", "PARKGATE_SMTP_PASSWORD": "secret"},
            Smtp("mail.example.com", 587, tls=False, starttls=True, user="bot", password="secret"),
        ),
    ],
)
def test_the_smtp_url_names_the_server_its_tls_and_its_login(url: str, extra: dict[str, str], expected: Smtp) -> None:
    assert smtp_server({"PARKGATE_SMTP_URL": url, **extra}) == expected


@pytest.mark.parametrize(
    ("environ", "named"),
    [
        ({"PARKGATE_SMTP_URL": "http://mail.example.com"}, "PARKGATE_SMTP_URL"),
        ({"PARKGATE_SMTP_URL": "smtp://"}, "PARKGATE_SMTP_URL"),
        ({"PARKGATE_SMTP_URL": "smtps://mail.example.com?starttls=off"}, "PARKGATE_SMTP_URL"),
        ({"PARKGATE_SMTP_URL": "smtp://bot@mail.example.com"}, "PARKGATE_SMTP_PASSWORD"),
        ({"PARKGATE_SMTP_URL": "smtp://mail.example.com", "PARKGATE_SMTP_PASSWORD": "x"}, "PARKGATE_SMTP_USER"),
    ],
)
def test_a_bad_smtp_url_or_half_a_login_is_refused_naming_it(environ: dict[str, str], named: str) -> None:
    with pytest.raises(SettingsError, match=named):
        smtp_server(environ)


@pytest.mark.parametrize(
    ("missing", "value"),
    [
        ("PARKGATE_EMAIL_FROM", ""),
        ("PARKGATE_EMAIL_FROM", "not an address"),
        ("PARKGATE_EMAIL_SECRET", ""),
        ("PARKGATE_EMAIL_SECRET", "a-short-password"),
        ("PARKGATE_EMAIL_SECRET", "whsec_c2hvcnQ="),  # 5 bytes: too weak to sign with
        ("PARKGATE_PUBLIC_URL", ""),
        ("PARKGATE_PUBLIC_URL", "parkgate.example.com"),
    ],
)
def test_each_missing_or_weak_setting_stops_the_start_naming_it(smtp: SmtpServer, missing: str, value: str) -> None:
    environ = {**email_env(smtp, PUBLIC), missing: value}
    with pytest.raises(SettingsError, match=missing):
        email_settings(environ)


def test_parkgate_serve_refuses_a_half_configuration_and_says_which_variable_is_missing(
    smtp: SmtpServer, tmp_path: Path
) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PARKGATE_")}
    env.update(email_env(smtp, PUBLIC))
    del env["PARKGATE_EMAIL_SECRET"]
    env["PARKGATE_DB"] = f"sqlite:///{tmp_path / 'parkgate.db'}"
    command = [sys.executable, "-m", "parkgate", "serve", "--host", "127.0.0.1", "--port", str(free_port())]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert done.returncode != 0
    assert "email needs PARKGATE_EMAIL_SECRET" in done.stdout + done.stderr


def test_a_server_without_the_starttls_the_url_asks_for_is_never_sent_to(smtp: SmtpServer, gateway: Gateway) -> None:
    environ = {**email_env(smtp, PUBLIC), "PARKGATE_SMTP_URL": f"smtp://127.0.0.1:{smtp.port}"}
    channel = EmailChannel(email_settings(environ))
    gateway.add_channel(channel)
    gateway.ask("c", "Deploy?", ["Deploy"], post_to=ChannelTarget("email", {"to": [ALICE]}))
    (ask,) = gateway.open_asks()
    with pytest.raises(ChannelJobFailed, match="does not offer STARTTLS"):
        channel.post(ask, {"to": [ALICE]})
    assert smtp.got() == []


def test_addresses_that_could_not_answer_are_refused_when_the_ask_is_parked(smtp: SmtpServer, gateway: Gateway) -> None:
    gateway.add_channel(EmailChannel(email_settings(email_env(smtp, PUBLIC))))
    for where, words in (
        ({"to": []}, "a list of 1 to"),
        ({"to": ["Alice <alice@example.com>"]}, "not an address"),
        ({"to": ["alice@example.com\r\nBcc: eve@example.com"]}, "not an address"),
        ({"to": [ALICE, ALICE]}, "twice"),
        ({"to": [ALICE], "cc": [ALICE]}, "not 'cc'"),
    ):
        with pytest.raises(InputError, match=words):
            gateway.ask("c", "Deploy?", ["Deploy"], post_to=ChannelTarget("email", where))
    with pytest.raises(InputError, match="not one of the ask's responders"):
        target = ChannelTarget("email", {"to": [ALICE, "eve@example.com"]})
        gateway.ask("c", "Deploy?", ["Deploy"], post_to=target, responders=[ALICE])
    assert gateway.open_asks() == []


def test_a_tokens_channels_patterns_must_allow_every_address_an_ask_is_sent_to() -> None:
    from parkgate.http.channel_targets import channel_refusal
    from parkgate.http.tokens import ALL_SCOPES, Caller

    ops = Caller("ops-bot", ALL_SCOPES, channels=("email:*@example.com",))
    assert channel_refusal(ops, ChannelTarget("email", {"to": [ALICE, "bob@example.com"]})) is None
    refusal = channel_refusal(ops, ChannelTarget("email", {"to": [ALICE, "eve@elsewhere.org"]}))
    assert refusal is not None and "may not post to email:eve@elsewhere.org" in refusal
