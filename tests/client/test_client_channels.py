"""Both clients post an ask on a channel the server serves (``slack=``, ``telegram=``, as
``POST /v1/asks`` takes them) and read back where it was posted, through a real
``parkgate serve`` with recording Slack Web API and Telegram Bot API stand-ins, on
SQLite and PostgreSQL."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "channels"))

from slack_stand_in import BOT_TOKEN, SIGNING_SECRET, SlackWebApi
from telegram_bot_api import BotApiStandIn, bot_api

from parkgate.errors import InputError
from polling import until

TELEGRAM_TOKEN = "123456:TEST-bot-token"
GROUP = -1001


@pytest.fixture
def platforms() -> Iterator[tuple[SlackWebApi, BotApiStandIn]]:
    slack = SlackWebApi().start()
    try:
        with bot_api(TELEGRAM_TOKEN) as telegram:
            yield slack, telegram
    finally:
        slack.stop()


@pytest.fixture
def server(launch: Any, database: Any, platforms: tuple[SlackWebApi, BotApiStandIn]) -> Any:
    slack, telegram = platforms
    env = {
        "PARKGATE_SLACK_BOT_TOKEN": BOT_TOKEN,
        "PARKGATE_SLACK_SIGNING_SECRET": SIGNING_SECRET,
        "PARKGATE_SLACK_API_URL": slack.url,
        "PARKGATE_TELEGRAM_BOT_TOKEN": TELEGRAM_TOKEN,
        "PARKGATE_TELEGRAM_WEBHOOK_SECRET": "webhook-secret",
        "PARKGATE_TELEGRAM_API_URL": telegram.root,
    }
    return launch(database, extra_env=env)


def test_an_ask_is_posted_on_slack_and_its_view_says_where(
    server: Any, connect: Any, conv: str, platforms: tuple[SlackWebApi, BotApiStandIn]
) -> None:
    slack, _ = platforms
    client = connect(server)
    asked = client.ask(conv, "Deploy?", ["Deploy", "Hold"], slack={"channel": "C1"})
    view = until(lambda: client.get(asked.ask_id).slack, 20, "the ask posted on Slack")
    (post,) = slack.of("chat.postMessage")
    assert post.args["channel"] == "C1" and "Deploy?" in post.args["text"]
    assert view == {"channel": "C1", "ts": "1712345678.000001"}
    threaded = client.ask(f"{conv}-t", "Roll back?", ["Yes"], slack={"channel": "C1", "thread_ts": view["ts"]})
    until(lambda: client.get(threaded.ask_id).slack, 20, "the second ask posted")
    assert slack.of("chat.postMessage")[1].args["thread_ts"] == view["ts"]


def test_an_ask_is_posted_on_telegram_and_its_view_says_where(
    server: Any, connect: Any, conv: str, platforms: tuple[SlackWebApi, BotApiStandIn]
) -> None:
    _, telegram = platforms
    client = connect(server)
    asked = client.ask(conv, "Deploy?", ["Deploy", "Hold"], telegram={"chat_id": GROUP})
    view = until(lambda: client.get(asked.ask_id).telegram, 20, "the ask posted on Telegram")
    (sent,) = telegram.of("sendMessage")
    assert sent.params["chat_id"] == GROUP and "Deploy?" in sent.params["text"]
    assert view["chat_id"] == GROUP and (GROUP, view["message_id"]) in telegram.texts
    assert client.get(asked.ask_id).slack is None


def test_an_ask_goes_to_one_channel_and_a_bad_target_is_refused(server: Any, connect: Any, conv: str) -> None:
    client = connect(server)
    with pytest.raises(InputError, match="one channel"):
        client.ask(conv, "Deploy?", ["Deploy"], slack={"channel": "C1"}, telegram={"chat_id": GROUP})
    with pytest.raises(InputError):
        client.ask(conv, "Deploy?", ["Deploy"], telegram={"chat_id": "not a number"})  # type: ignore[dict-item]
    with pytest.raises(TypeError, match="mattermost"):
        client.ask(conv, "Deploy?", ["Deploy"], mattermost={"channel": "x"})
    assert client.parked(conv) is None
