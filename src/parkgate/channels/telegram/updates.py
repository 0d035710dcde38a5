"""A Telegram ``Update`` read into what parkgate acts on: a typed message or a button press.

The update is parsed by python-telegram-bot's own :meth:`telegram.Update.de_json`, so
parkgate reads exactly the fields the library does. The sender is the Telegram user id
(as a string) and the message id handed to the gateway is the update id: Telegram
redelivers an update with the same id, and the gateway applies it once.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from telegram import Update, User

from parkgate.channels.telegram.texts import plain
from parkgate.errors import InputError


@dataclass(frozen=True, slots=True)
class Place:
    """Where in Telegram a message is: a chat, and a forum topic of it when there is one."""

    chat_id: int
    thread_id: int | None = None


@dataclass(frozen=True, slots=True)
class TypedMessage:
    """A text message: routed to the ask it replies to, else the one open ask in its place."""

    update_id: int
    place: Place
    text: str
    sender: str
    #: The sender's name (``@username``, else the first name).
    name: str
    #: The message it replies to (Telegram's reply-to), when it replies to one.
    reply_to_message_id: int | None
    #: The message itself (what a line about it replies to).
    message_id: int | None = None


@dataclass(frozen=True, slots=True)
class ButtonPress:
    """A press of an inline keyboard's button (a callback query)."""

    update_id: int
    callback_query_id: str
    data: str | None
    sender: str
    #: The presser's name (``@username``, else the first name).
    name: str
    #: The message the keyboard is on, when Telegram still has it.
    place: Place | None
    message_id: int | None


Event = TypedMessage | ButtonPress


def read_update(payload: Mapping[str, Any]) -> Event | None:
    """The event in one update, or ``None`` for one parkgate does not act on.

    Args:
        payload: The update's JSON object, as the webhook or ``getUpdates`` gives it.

    Returns:
        A :class:`TypedMessage` for a text message from a person, a :class:`ButtonPress`
        for a callback query, ``None`` for any other update (an edit, a photo, a bot's own
        message, a member joining).

    Raises:
        InputError: The payload is not an update (a 400 that changes nothing).
    """
    update = _parse(payload)
    query = update.callback_query
    if query is not None:
        return _press(update.update_id, query)
    message = update.message
    if message is None or message.text is None or message.from_user is None or message.from_user.is_bot:
        return None
    reply_to = message.reply_to_message
    return TypedMessage(
        update_id=update.update_id,
        place=Place(message.chat.id, message.message_thread_id if message.is_topic_message else None),
        text=message.text,
        sender=str(message.from_user.id),
        name=user_name(message.from_user),
        reply_to_message_id=reply_to.message_id if reply_to is not None else None,
        message_id=message.message_id,
    )


def _parse(payload: Mapping[str, Any]) -> Update:
    """python-telegram-bot's reading of ``payload``; anything it cannot read is an :class:`InputError`."""
    if not isinstance(payload, Mapping) or not isinstance(payload.get("update_id"), int):
        raise InputError("not a Telegram update: a JSON object with an integer update_id is expected")
    try:
        return Update.de_json(dict(payload), None)
    except (KeyError, TypeError, ValueError, AttributeError) as error:
        raise InputError(f"not a Telegram update: {type(error).__name__}: {error}") from error


def _press(update_id: int, query: Any) -> ButtonPress:
    """The :class:`ButtonPress` of a callback query (its message may be gone: then no place)."""
    message = query.message
    place = None
    message_id = None
    if message is not None:
        thread = getattr(message, "message_thread_id", None) if getattr(message, "is_topic_message", False) else None
        place = Place(message.chat.id, thread)
        message_id = message.message_id
    return ButtonPress(
        update_id=update_id,
        callback_query_id=query.id,
        data=query.data,
        sender=str(query.from_user.id),
        name=user_name(query.from_user),
        place=place,
        message_id=message_id,
    )


def user_name(user: User) -> str:
    """A person's name as parkgate shows it: ``@username`` (Telegram's own, a mention),
    else the first name, which its owner writes, quoted so it mentions no one (:func:`plain`)."""
    return f"@{user.username}" if user.username else plain(user.first_name)
