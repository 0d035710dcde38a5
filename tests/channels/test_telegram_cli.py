"""``parkgate telegram``: long polling into a store with the recording Bot API, and setWebhook."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from telegram_bot_api import BotApiStandIn, bot_api
from telegram_updates import press, typed

from parkgate import Gateway
from parkgate.channels import ChannelTarget
from parkgate.channels.telegram.buttons import button_data
from parkgate.cli import main
from polling import until

TOKEN = "123:ABC"
GROUP = -100


@pytest.fixture
def api() -> Iterator[BotApiStandIn]:
    with bot_api(TOKEN) as stand_in:
        yield stand_in


def test_set_webhook_sends_the_url_and_the_secret(api: BotApiStandIn) -> None:
    env = {
        "PARKGATE_TELEGRAM_BOT_TOKEN": TOKEN,
        "PARKGATE_TELEGRAM_API_URL": api.root,
        "PARKGATE_TELEGRAM_WEBHOOK_SECRET": "s3cret-token",
    }
    url = "https://bot.example.com/telegram/webhook"
    result = CliRunner().invoke(main, ["telegram", "--set-webhook", url], env=env)
    assert result.exit_code == 0, result.output
    (call,) = api.of("setWebhook")
    assert call.params == {"url": url, "secret_token": "s3cret-token", "allowed_updates": ["message", "callback_query"]}
    missing = CliRunner().invoke(
        main, ["telegram", "--set-webhook", url], env={**env, "PARKGATE_TELEGRAM_WEBHOOK_SECRET": ""}
    )
    assert missing.exit_code == 1 and "PARKGATE_TELEGRAM_WEBHOOK_SECRET" in missing.output


def test_long_polling_posts_answers_and_edits(api: BotApiStandIn, tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'bot.db'}"
    with Gateway(db) as gateway:
        asked = gateway.ask("c1", "Deploy?", ["Deploy", "Hold"], post_to=ChannelTarget("telegram", {"chat_id": GROUP}))
    env = {**os.environ, "PARKGATE_TELEGRAM_BOT_TOKEN": TOKEN, "PARKGATE_TELEGRAM_API_URL": api.root}
    bot = subprocess.Popen(
        [sys.executable, "-m", "parkgate", "telegram", "--poll", "--db", db],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        sent = until(lambda: api.of("sendMessage"), 20, "the ask posted by the polling bot's deliverer")
        ((chat_id, message_id),) = api.texts
        assert chat_id == GROUP and "2. Hold" in sent[0].params["text"]
        api.queue_update(typed(GROUP, "/menu@OtherBot", user_id=5))
        assert asked.ask_id is not None
        api.queue_update(press(GROUP, message_id, button_data(asked.ask_id, 2), user_id=5, username="alice"))
        edits = until(lambda: api.of("editMessageText"), 20, "the message edited on close")
        assert edits[0].params["text"].endswith("Answered: Hold, by @alice")
        answered = until(lambda: api.of("answerCallbackQuery"), 20, "the press answered")
        assert "Selected 2. Hold" in answered[0].params["text"]
    finally:
        bot.terminate()
        bot.communicate(timeout=20)
    with Gateway(db) as gateway:
        assert gateway.get(asked.ask_id).answered_by == "5"
        assert json.loads(gateway.channel_post(asked.ask_id).location or "{}")["message_id"] == message_id  # type: ignore[union-attr]


def test_deliver_posts_and_edits_with_the_bot_token_alone(api: BotApiStandIn, tmp_path: Path) -> None:
    """``parkgate deliver`` serves no webhook, so it needs no webhook secret to send."""
    db = f"sqlite:///{tmp_path / 'lib.db'}"
    env = {k: v for k, v in os.environ.items() if not k.startswith("PARKGATE_")}
    env.update(PARKGATE_TELEGRAM_BOT_TOKEN=TOKEN, PARKGATE_TELEGRAM_API_URL=api.root)
    with Gateway(db) as gateway:
        asked = gateway.ask("c1", "Ship?", ["Ship"], post_to=ChannelTarget("telegram", {"chat_id": GROUP}))
        deliverer = subprocess.Popen(
            [sys.executable, "-m", "parkgate", "deliver", "--db", db],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            sent = until(lambda: api.of("sendMessage"), 20, "the ask posted by parkgate deliver")
            assert sent[0].params["chat_id"] == GROUP and "Ship?" in sent[0].params["text"]
            assert asked.ask_id is not None
            gateway.cancel(asked.ask_id)
            edits = until(lambda: api.of("editMessageText"), 20, "the message edited on close")
            assert edits[0].params["text"].endswith("Dropped by an operator, nothing ran.")
        finally:
            deliverer.terminate()
            _, err = deliverer.communicate(timeout=20)
        assert "WEBHOOK_SECRET" not in err
