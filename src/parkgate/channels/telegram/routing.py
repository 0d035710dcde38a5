"""Which ask a typed Telegram message is for.

A typed message goes to the ask whose posted message it replies to (Telegram's
reply-to); a message that replies to nothing parkgate posted goes to the latest open ask
posted in the same place (the chat, and the forum topic when there is one). A chat where
nothing is open routes nowhere: the message is acknowledged and left alone.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from parkgate.channels.telegram.updates import Place, TypedMessage


@dataclass(frozen=True, slots=True)
class PostedAsk:
    """An ask as it was posted to Telegram: where, as which message, when, and whether it is open."""

    ask_id: str
    place: Place
    message_id: int
    posted_at: datetime
    is_open: bool


def ask_for(message: TypedMessage, posted: Iterable[PostedAsk]) -> str | None:
    """The id of the ask ``message`` is for, ``None`` when it is for none.

    Args:
        message: The typed message.
        posted: The asks posted in the message's chat (open or closed; others are ignored).

    Returns:
        The ask whose message it replies to (open or not: a reply to a closed ask is for
        that ask, never for a newer one), else the latest open ask posted in its place.
    """
    here = [ask for ask in posted if ask.place.chat_id == message.place.chat_id]
    if message.reply_to_message_id is not None:
        for ask in here:
            if ask.message_id == message.reply_to_message_id:
                return ask.ask_id
    open_here = [ask for ask in here if ask.is_open and ask.place == message.place]
    if not open_here:
        return None
    return max(open_here, key=lambda ask: (ask.posted_at, ask.message_id)).ask_id
