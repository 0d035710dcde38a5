"""Chat handlers in process, for ``parkgate audit door --python module:function``.

``handle`` and ``is_parked`` are the write-up's ``handleChoice`` and ``isParked`` on a
parkgate :class:`~parkgate.AsyncGateway` (set :data:`gateway` first); ``handle_reply``
returns the whole reply as a mapping. ``scold`` is a broken door: the same scold for
everything, and nothing ever leaves.
"""

from __future__ import annotations

from typing import Any

from parkgate import AsyncGateway

#: The gateway the handlers answer through; a test sets it.
gateway: AsyncGateway | None = None


def _gateway() -> AsyncGateway:
    assert gateway is not None, "set door_handlers.gateway first"
    return gateway


async def handle(conversation: str, text: str) -> str:
    """The reply's text, as a chat surface shows it."""
    return (await _gateway().handle(conversation, text)).text


async def is_parked(conversation: str) -> bool:
    """Whether the conversation still has an open ask."""
    return await _gateway().parked(conversation) is not None


def handle_reply(conversation: str, text: str) -> dict[str, Any]:
    """The whole reply (``text``, ``parked``, ``kind``, ...), synchronously."""
    return _gateway().sync.handle(conversation, text).to_dict()


def scold(conversation: str, text: str) -> dict[str, Any]:
    """A strict matcher with no door: the same scold for every message, parked for ever."""
    return {"text": "That did not match any option.", "parked": True}


def crash(conversation: str, text: str) -> str:
    """A handler that fails on the third message."""
    if text == "help":
        raise KeyError("no handler for help")
    return f"No match for {text}."
