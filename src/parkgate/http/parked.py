"""What a surface learns of a conversation: its parked ask, read now or waited for.

``GET /v1/conversations/{id}?wait=S`` holds the request while nothing is parked in the
conversation. Each read is the conversation's open ask on its index (never the list of
open asks); the wait reads again when this process parks an ask or the store's watcher
hears another process commit, and at least every :data:`PARK_READ_SECONDS` (a park in
another process on PostgreSQL is announced only by a close or a due time).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable

from parkgate.core.model import Ask
from parkgate.gateway.async_gateway import AsyncGateway
from parkgate.store.signal import Change

#: The longest a wait for a park sleeps between two reads of the conversation.
PARK_READ_SECONDS = 1.0
_WAKING = frozenset({Change.PARKED, Change.DUE, Change.COMMITTED, Change.ANY})


async def parked_now(gateway: AsyncGateway, conversation_id: str) -> Ask | None:
    """The conversation's open ask, ``None`` when there is none; one found past its TTL is
    closed as ``expired`` by this read (so it is not shown as parked)."""
    ask = await gateway.parked(conversation_id)
    if ask is not None and ask.is_expired(gateway.sync.clock.now()):
        ask = await gateway.get(ask.id)
    return ask if ask is not None and ask.is_open else None


async def wait_for_parked(
    gateway: AsyncGateway,
    conversation_id: str,
    seconds: float,
    *,
    give_up: Callable[[], Awaitable[bool]] | None = None,
    turns: asyncio.Semaphore | None = None,
) -> Ask | None:
    """The conversation's open ask as soon as there is one, or ``None`` once ``seconds``
    pass (or ``give_up()`` says so: the client hung up) with nothing parked.

    Args:
        gateway: The gateway to read.
        conversation_id: The conversation to look at.
        seconds: The longest to wait.
        give_up: Asked after each sleep; true ends the wait.
        turns: A semaphore each read takes a turn of (the server's long-poll reads).

    Returns:
        The open ask, or ``None``.
    """
    loop = asyncio.get_running_loop()
    deadline = loop.time() + seconds
    woken = asyncio.Event()

    def heard(change: Change, ask_id: str | None) -> None:
        if change in _WAKING:
            with contextlib.suppress(RuntimeError):  # the loop is closing
                loop.call_soon_threadsafe(woken.set)

    remove = gateway.sync.signal.listen(heard)
    try:
        while True:
            woken.clear()  # before the read: a park after it still wakes this wait
            async with turns if turns is not None else contextlib.nullcontext():
                ask = await parked_now(gateway, conversation_id)
            remaining = deadline - loop.time()
            if ask is not None or remaining <= 0:
                return ask
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(min(remaining, PARK_READ_SECONDS)):
                    await woken.wait()
            if give_up is not None and await give_up():
                return None
    finally:
        remove()
