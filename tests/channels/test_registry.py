"""The channel registry (:mod:`parkgate.channels.registry`): the channels that ship are
registered on first use, each once; a declaration that does not hold, or a second channel
of a taken name, is refused; a module ``PARKGATE_CHANNELS`` names that does not import
stops the start with its name; a channel package without its platform's library still
declares its channel, and names the extra to install when more is used."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys

import pytest

from parkgate.channels.registry import names, register, registered, spec_of
from parkgate.errors import SettingsError

SLACK = spec_of("slack")


def test_the_channels_that_ship_are_registered_with_what_the_api_reads() -> None:
    assert names()[:3] == ("slack", "telegram", "discord")
    assert [spec.name for spec in registered()] == list(names())
    assert SLACK is not None and SLACK.switch == "PARKGATE_SLACK_BOT_TOKEN" and SLACK.target_id == "channel"
    assert SLACK.imported(SLACK.target).model_fields.keys() == {"channel", "thread_ts"}
    assert spec_of("mattermost") is None


def test_registering_again_is_a_no_op_and_a_taken_name_is_refused() -> None:
    assert SLACK is not None
    assert register(SLACK) is SLACK
    with pytest.raises(SettingsError, match="'slack' is registered already"):
        register(dataclasses.replace(SLACK, title="Another Slack"))
    assert spec_of("slack") is SLACK


@pytest.mark.parametrize(
    ("change", "named"),
    [
        ({"name": "not a name"}, "identifier"),
        ({"switch": "PARKGATE_NOT_A_SETTING"}, "is not one of its settings"),
        ({"required": ("PARKGATE_NOT_A_SETTING",)}, "its required PARKGATE_NOT_A_SETTING is not one"),
        ({"serve": "no.module.or.name"}, "'module:name'"),
    ],
)
def test_a_declaration_that_does_not_hold_is_refused(change: dict[str, object], named: str) -> None:
    assert SLACK is not None
    with pytest.raises(SettingsError, match=named):
        dataclasses.replace(SLACK, **change)


def _run(script: str, **env: str) -> subprocess.CompletedProcess[str]:
    """``script`` in a fresh interpreter, with none of this process's PARKGATE_ settings but ``env``."""
    clean = {key: value for key, value in os.environ.items() if not key.startswith("PARKGATE_")}
    return subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, env=clean | env)


def test_a_channel_module_that_does_not_import_stops_the_start_with_its_name() -> None:
    done = _run("from parkgate.channels.registry import names; names()", PARKGATE_CHANNELS="parkgate_no_such_channel")
    assert done.returncode != 0
    assert "SettingsError: PARKGATE_CHANNELS names 'parkgate_no_such_channel', which does not import" in done.stderr


def test_a_channel_package_without_its_library_declares_its_channel_and_names_the_extra() -> None:
    script = (
        "import sys; sys.modules['slack_bolt'] = None; sys.modules['slack_sdk'] = None\n"
        "import parkgate.channels.slack as slack\n"
        "from parkgate.http.models import AskIn\n"
        "from parkgate.errors import MissingExtra\n"
        "assert slack.SPEC.name == 'slack' and 'slack' in AskIn.model_fields\n"
        "try:\n"
        "    slack.SlackChannel\n"
        "except MissingExtra as error:\n"
        "    print(error)\n"
    )
    done = _run(script)
    assert done.returncode == 0, done.stderr
    assert "parkgate.channels.slack needs" in done.stdout and "pip install 'parkgate[slack]'" in done.stdout
