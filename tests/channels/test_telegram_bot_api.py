"""The Bot API client against the recording stand-in: the URL form, the answers, the failures."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from telegram_bot_api import BOT_USERNAME, bot_api

from parkgate.channels.telegram.api import BotApi
from parkgate.channels.telegram.polling import poll
from parkgate.errors import ChannelJobFailed

TOKEN = "123:ABC"


def _call(root: str, method: str, params: dict[str, Any], token: str = TOKEN) -> Any:
    api = BotApi(token, root)
    try:
        return api.call(method, params)
    finally:
        api.close()


def test_calls_go_to_root_bot_token_method_and_return_the_result() -> None:
    with bot_api(TOKEN) as api:
        sent = _call(api.root, "sendMessage", {"chat_id": 42, "text": "Deploy?"})
        edited = _call(api.root, "editMessageText", {"chat_id": 42, "message_id": sent["message_id"], "text": "Done"})
        assert _call(api.root, "getMe", {})["username"] == BOT_USERNAME
        assert edited["text"] == "Done"
        assert [call.method for call in api.calls] == ["sendMessage", "editMessageText", "getMe"]
        assert api.texts[(42, sent["message_id"])] == "Done"


def test_an_outage_is_worth_a_retry_and_a_refusal_is_not() -> None:
    with bot_api(TOKEN) as api:
        api.fail("sendMessage", 1)
        with pytest.raises(ConnectionError, match="sendMessage: Bad Gateway"):
            _call(api.root, "sendMessage", {"chat_id": 42, "text": "x"})
        with pytest.raises(ChannelJobFailed, match="Unauthorized"):
            _call(api.root, "sendMessage", {"chat_id": 42, "text": "x"}, token="999:WRONG")
        with pytest.raises(ChannelJobFailed, match="Not Found"):
            _call(api.root, "editMessageText", {"chat_id": 42, "message_id": 1, "text": "x"})
        assert _call(api.root, "sendMessage", {"chat_id": 42, "text": "x"})["text"] == "x"


def test_an_unreachable_server_is_worth_a_retry() -> None:
    with bot_api(TOKEN) as api:
        root = api.root
    with pytest.raises(ConnectionError, match="sendMessage: ConnectError"):
        _call(root, "sendMessage", {"chat_id": 42, "text": "x"})


def test_long_polling_hands_every_update_over_once_and_survives_a_failing_handler() -> None:
    seen: list[int] = []

    def go(root: str) -> int:
        api = BotApi(TOKEN, root)
        stop = threading.Event()

        def handle(update: dict[str, Any]) -> None:
            seen.append(update["update_id"])
            if update["update_id"] == 2:
                raise RuntimeError("a handler's bug")
            if len(seen) == 3:
                stop.set()

        try:
            return poll(api, handle, stop=stop, poll_seconds=1, retry_seconds=0.05)
        finally:
            api.close()

    with bot_api(TOKEN) as api:
        api.fail("getUpdates", 1)  # an outage first: polling goes on after it
        for update_id in (1, 2, 3):
            api.queue_update({"update_id": update_id, "message": {"message_id": update_id, "date": 0, "chat": {}}})
        assert go(api.root) == 3
    assert seen == [1, 2, 3]
