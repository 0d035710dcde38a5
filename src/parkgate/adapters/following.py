"""How an adapter's watcher follows up closed asks: one loop for every adapter, woken by
the close signal (:mod:`parkgate.signal`) whenever an ask may have closed, here or in
another process (a due read's expiry among them), and at least every
:data:`~parkgate.signal.FALLBACK_READ_SECONDS`."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable

from parkgate.signal import FALLBACK_READ_SECONDS, Change, CloseSignal

#: The signals after which a closed ask may wait to be followed up.
FOLLOW_UP_CHANGES = frozenset({Change.CLOSED, Change.COMMITTED, Change.ANY})


async def follow_up_until_cancelled(
    signal: CloseSignal, follow_up: Callable[[], Awaitable[object]], log: logging.Logger, what: str
) -> None:
    """Run ``follow_up()`` at once, then on every :data:`FOLLOW_UP_CHANGES` signal and at
    least every :data:`~parkgate.signal.FALLBACK_READ_SECONDS`, until the task is cancelled.

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
