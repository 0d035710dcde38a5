"""``GET /v1/directory``, in process: the display names of the configured directory
(``PARKGATE_DIRECTORY``), with the ``@username`` a served Telegram channel learnt where
the file has none (never a first name, which its owner chooses); the read scope needed."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from parkgate import Gateway, ManualClock
from parkgate.channels.telegram import BotApi, TelegramChannel
from parkgate.http.app import create_app
from parkgate.http.settings import Settings, SettingsError, settings_from_env
from parkgate.http.tokens import Scope, Tokens, digest


async def test_the_directory_is_the_files_names_and_the_usernames_a_channel_learnt(
    tmp_path: Path, clock: ManualClock
) -> None:
    people = tmp_path / "people.toml"
    people.write_text('U0ALICE = "Alice Ng"\n"111" = "Robert"\n', encoding="utf-8")
    settings = settings_from_env({"PARKGATE_DIRECTORY": str(people)})
    with Gateway(f"sqlite:///{tmp_path / 'd.db'}", clock=clock) as gateway:
        telegram = TelegramChannel(BotApi("123:ABC", "http://127.0.0.1:9"))
        gateway.add_channel(telegram)
        telegram.names.saw("111", "@bob")  # the file names 111: the file wins
        telegram.names.saw("222", "@carol")
        telegram.names.saw("333", "Alice Ng")  # a first name, which anyone may take: left out
        app = create_app(gateway, settings=settings, deliver_callbacks=False)
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://parkgate") as http:
            answer = await http.get("/v1/directory")
    assert answer.status_code == 200, answer.text
    assert answer.json() == {"names": {"U0ALICE": "Alice Ng", "111": "Robert", "222": "@carol"}}


async def test_the_directory_needs_the_read_scope(tmp_path: Path, clock: ManualClock) -> None:
    tokens = Tokens.from_tables(
        {
            "token": [
                {"name": "reader", "sha256": digest("reader-token"), "scopes": [Scope.READ.value]},
                {"name": "parker", "sha256": digest("parker-token"), "scopes": [Scope.PARK.value]},
            ]
        }
    )
    with Gateway(f"sqlite:///{tmp_path / 'd.db'}", clock=clock) as gateway:
        app = create_app(gateway, settings=Settings(tokens=tokens), deliver_callbacks=False)
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://parkgate") as http:
            read = await http.get("/v1/directory", headers={"Authorization": "Bearer reader-token"})
            parked = await http.get("/v1/directory", headers={"Authorization": "Bearer parker-token"})
    assert read.status_code == 200 and parked.status_code == 403


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ('{"U0ALICE": "' + "x" * 201 + '"}', "1 to 200 characters"),
        ('["U0ALICE"]', "must be an object of sender id to name, not list"),
        ("U0ALICE = ", "is not TOML"),
    ],
)
def test_a_bad_directory_file_is_a_settings_error_naming_the_variable_and_the_file(
    tmp_path: Path, text: str, why: str
) -> None:
    people = tmp_path / ("people.toml" if "=" in text else "people.json")
    people.write_text(text, encoding="utf-8")
    with pytest.raises(SettingsError, match="PARKGATE_DIRECTORY") as refused:
        settings_from_env({"PARKGATE_DIRECTORY": str(people)})
    assert str(people) in str(refused.value) and why in str(refused.value)
