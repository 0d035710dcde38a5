"""How an adapter's watcher follows up closed asks: one loop for every adapter, woken by
the close signal (:mod:`parkgate.store.signal`) whenever an ask may have closed, here or in
another process (a due read's expiry among them), and at least every
:data:`~parkgate.store.signal.FALLBACK_READ_SECONDS`.

Each adapter parks its asks with ``follow_up=<its watcher's name>`` and lists only the
closed asks named for it (``closed_follow_ups(watcher=...)``, filtered by the store's
query), a page after another until the last: nobody else's closed asks (another tenant's,
another agent's whose watcher is down) take a place in its page, and those named for it
that it cannot resume (another process's graph of the same name) never hide the rest.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import Protocol, TypeVar

from parkgate.errors import InputError
from parkgate.gateway.checks import check_id
from parkgate.store.signal import FALLBACK_READ_SECONDS, Change, CloseSignal

#: The signals after which a closed ask may wait to be followed up.
FOLLOW_UP_CHANGES = frozenset({Change.CLOSED, Change.COMMITTED, Change.ANY})


class Listed(Protocol):
    """What paging needs of a listed ask (an :class:`~parkgate.Ask`, or a client's view)."""

    @property
    def id(self) -> str: ...


T = TypeVar("T", bound=Listed)


def watcher_name(adapter: str, name: str) -> str:
    """The name an adapter's watcher parks its asks under and lists them by:
    ``<adapter>:<name>`` (``langgraph:deploys``), or ``<adapter>:sha256:<hex>`` of a name
    that is no id (over 200 characters, or with control characters)."""
    named = f"{adapter}:{name}"
    try:
        return check_id(named, "watcher")
    except InputError:
        return f"{adapter}:sha256:{hashlib.sha256(name.encode('utf-8', 'surrogatepass')).hexdigest()}"


async def pages(read: Callable[[str | None], Awaitable[Sequence[T]]], size: int) -> AsyncIterator[T]:
    """Every ask ``read(after)`` lists, a page of ``size`` after another: ``after`` is the
    last ask's id of the page before (``None`` for the first); a short page is the last."""
    after: str | None = None
    while True:
        page = await read(after)
        for ask in page:
            yield ask
        if len(page) < size:
            return
        after = page[-1].id


async def follow_up_until_cancelled(
    signal: CloseSignal, follow_up: Callable[[], Awaitable[object]], log: logging.Logger, what: str
) -> None:
    """Run ``follow_up()`` at once, then on every :data:`FOLLOW_UP_CHANGES` signal and at
    least every :data:`~parkgate.store.signal.FALLBACK_READ_SECONDS`, until the task is cancelled.

    Args:
        signal: The gateway's close signal.
        follow_up: One pass over the closed asks.
        log: Where a failed pass is logged; the loop goes on after it.
        what: Names what is followed up in that log line.
    """
    loop = asyncio.get_running_loop()
    wake = asyncio.Event()

    def heard(change: Change, ask_id: str | None) -> None:
        if change in FOLLOW_UP_CHANGES:
            with contextlib.suppress(RuntimeError):  # the loop is closing
                loop.call_soon_threadsafe(wake.set)

    remove = signal.listen(heard)
    try:
        while True:
            wake.clear()
            try:
                await follow_up()
            except Exception:
                log.exception("following up %s failed", what)
            with contextlib.suppress(TimeoutError):  # asyncio.timeout: 3.11's wait_for can swallow a cancel
                async with asyncio.timeout(FALLBACK_READ_SECONDS):
                    await wake.wait()
    finally:
        remove()
