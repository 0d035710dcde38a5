"""Telegram updates as the Bot API sends them, for tests: typed messages and button presses."""

from __future__ import annotations

import itertools
from typing import Any

_ids = itertools.count(5000)
DATE = 1767603600


def user(user_id: int, username: str | None = None, first_name: str | None = None) -> dict[str, Any]:
    """A person's ``User`` object (first name "User <id>" unless given)."""
    found: dict[str, Any] = {"id": user_id, "is_bot": False, "first_name": first_name or f"User {user_id}"}
    if username is not None:
        found["username"] = username
    return found


def chat(chat_id: int) -> dict[str, Any]:
    """A private chat for a positive id, a supergroup for a negative one."""
    return {"id": chat_id, "type": "private" if chat_id > 0 else "supergroup"}


def typed(
    chat_id: int,
    text: str,
    *,
    user_id: int = 1,
    username: str | None = None,
    first_name: str | None = None,
    thread_id: int | None = None,
    reply_to: int | None = None,
    update_id: int | None = None,
) -> dict[str, Any]:
    """An update with a typed text message (a bot command's entity marked, as Telegram does)."""
    message: dict[str, Any] = {
        "message_id": next(_ids),
        "date": DATE,
        "chat": chat(chat_id),
        "from": user(user_id, username, first_name),
        "text": text,
    }
    if text.startswith("/"):
        message["entities"] = [{"type": "bot_command", "offset": 0, "length": len(text.split()[0])}]
    if thread_id is not None:
        message["message_thread_id"] = thread_id
        message["is_topic_message"] = True
    if reply_to is not None:
        message["reply_to_message"] = {"message_id": reply_to, "date": DATE, "chat": chat(chat_id)}
    return {"update_id": update_id if update_id is not None else next(_ids), "message": message}


def press(
    chat_id: int,
    message_id: int,
    data: str,
    *,
    user_id: int = 1,
    username: str | None = None,
    first_name: str | None = None,
    update_id: int | None = None,
) -> dict[str, Any]:
    """An update with a callback query: ``user_id`` pressed a button on the bot's message."""
    return {
        "update_id": update_id if update_id is not None else next(_ids),
        "callback_query": {
            "id": str(next(_ids)),
            "from": user(user_id, username, first_name),
            "chat_instance": "ci-1",
            "data": data,
            "message": {
                "message_id": message_id,
                "date": DATE,
                "chat": chat(chat_id),
                "from": {"id": 777, "is_bot": True, "first_name": "Your Bot", "username": "YourBot"},
                "text": "question",
            },
        },
    }
