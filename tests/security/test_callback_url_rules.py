"""The pure rules behind two callback findings: a port outside 1..65535 (0 included) is
refused, and a callback URL is logged without its query, fragment or user info."""

from __future__ import annotations

import pytest

from parkgate.core.fence import CallbackRefused, loggable_url, parse_callback_url, receiver_host


@pytest.mark.parametrize("url", ["http://example.com:0/", "http://example.com:00/h", "http://example.com:65536/"])
def test_a_port_outside_one_to_65535_is_refused(url: str) -> None:
    with pytest.raises(CallbackRefused, match="port"):
        parse_callback_url(url)


def test_the_named_and_default_ports_are_kept() -> None:
    assert parse_callback_url("http://example.com:1/").port == 1
    assert parse_callback_url("https://example.com/").port == 443


@pytest.mark.parametrize(
    ("url", "logged"),
    [
        ("https://hooks.example.com/in?token=s3cret#s3cret", "https://hooks.example.com/in"),
        ("http://user:s3cret@hooks.example.com:8080/in", "http://hooks.example.com:8080/in"),
        ("http://hooks.example.com", "http://hooks.example.com"),
    ],
)
def test_a_logged_url_keeps_scheme_host_port_and_path_only(url: str, logged: str) -> None:
    assert loggable_url(url) == logged


def test_the_receiver_host_is_the_normalised_host_without_port() -> None:
    assert receiver_host("http://Hooks.Example.COM.:8080/a") == "hooks.example.com"
    assert receiver_host("http://[::1]:9/") == "::1"
    assert receiver_host("not a url") is None
