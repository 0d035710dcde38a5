"""Where an ask is posted, in the web console (a real Chromium against a real server that
serves Slack, against its recording stand-in): the open asks list shows, under the
question, the channel an ask is posted on and where, for each channel the server's
registry holds; an ask posted nowhere shows no such line."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from live_server import Server, running
from playwright.sync_api import expect

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "channels"))

from slack_stand_in import BOT_TOKEN, SIGNING_SECRET, SlackWebApi

from polling import until

pytestmark = pytest.mark.browser

TOKEN = "console-channels-token"


@pytest.fixture
def slack_server(tmp_path: Path) -> Iterator[tuple[Server, SlackWebApi]]:
    slack = SlackWebApi().start()
    env = {
        "PARKGATE_SLACK_BOT_TOKEN": BOT_TOKEN,
        "PARKGATE_SLACK_SIGNING_SECRET": SIGNING_SECRET,
        "PARKGATE_SLACK_API_URL": slack.url,
    }
    database = f"sqlite:///{tmp_path / 'parkgate.db'}"
    server = Server(database, tmp_path / "server.log", token=TOKEN, extra_env=env, in_thread=True)
    try:
        with running(server.start()):
            yield server, slack
    finally:
        slack.stop()


def test_the_console_shows_where_an_open_ask_is_posted(page: Any, slack_server: tuple[Server, SlackWebApi]) -> None:
    server, _ = slack_server
    body = {"prompt": "Deploy build 42?", "options": ["Deploy", "Hold"]}
    with server.client() as http:
        posted = http.post("/v1/asks", json={**body, "conversation_id": "ops-slack", "slack": {"channel": "C1"}})
        plain = http.post("/v1/asks", json={**body, "conversation_id": "ops-plain"})
        where = until(lambda: http.get(f"/v1/asks/{posted.json()['ask_id']}").json().get("slack"), 20, "the post")

    page.goto(server.url + "/")
    page.fill("#token", TOKEN)
    page.click("#token-save")
    row = page.locator(f'tr[data-ask-id="{posted.json()["ask_id"]}"]')
    expect(row.locator(".posted")).to_have_text(f'Posted on slack: {{"channel":"C1","ts":"{where["ts"]}"}}')
    expect(page.locator(f'tr[data-ask-id="{plain.json()["ask_id"]}"]')).to_have_count(1)
    expect(page.locator(f'tr[data-ask-id="{plain.json()["ask_id"]}"] .posted')).to_have_count(0)
