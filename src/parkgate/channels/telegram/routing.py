"""Which ask a typed Telegram message is for, by the thread keys of posted asks.

Each posted ask's thread key is ``{chat id}/{topic id or 0}/{message id}``: its place (the
chat, and the forum topic when there is one) then its message. A typed message goes to
the ask whose message it replies to (Telegram's reply-to: that ask, open or closed, never
a newer one); a message that replies to nothing parkgate posted goes to the one open ask
posted in its place. A place where nothing is open routes nowhere: the message is
acknowledged and left alone. A place where more than one ask is open routes such a
message nowhere too, and its sender is told to reply to the question's own message: in
a chat several tenants share, a text typed for one ask never reaches another's.
"""

from __future__ import annotations

from parkgate.channels.telegram.updates import Place


def place_key(place: Place) -> str:
    """The start every thread key in ``place`` shares: ``"-100/7/"`` (``0`` for no topic)."""
    return f"{place.chat_id}/{place.thread_id or 0}/"


def thread_key(place: Place, message_id: int) -> str:
    """The thread key of the message ``message_id`` in ``place``: ``"-100/7/101"``."""
    return f"{place_key(place)}{message_id}"
