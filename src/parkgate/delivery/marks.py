"""Marking delivered outbox rows, many deliveries' rows in one commit, each with the
``delivered`` event that records its attempt."""

from __future__ import annotations

import asyncio

from parkgate.clock import Clock
from parkgate.core.events import NewEvent
from parkgate.store import Store


class DeliveredMarks:
    """Marks delivered outbox rows, many deliveries' rows in one transaction (a group commit).

    A delivery that got its 2xx awaits :meth:`mark`; while one batch is being written, the
    rows of deliveries that finish meanwhile gather into the next, so under load a commit
    marks many rows and when idle each row is marked at once. A delivery ends only once
    its row's mark is committed (a failed write fails every delivery in its batch, which
    are then retried: at least once, never lost).
    """

    def __init__(self, store: Store, clock: Clock) -> None:
        self.store = store
        self.clock = clock
        self._ids: list[int] = []
        self._events: list[NewEvent] = []
        self._written: asyncio.Future[None] | None = None
        self._writer: asyncio.Task[None] | None = None

    async def mark(self, callback_id: int, event: NewEvent) -> None:
        """Mark ``callback_id`` delivered, with ``event`` (its ``delivered`` event) in the
        same commit; returns once that is committed (raises if it failed)."""
        if self._written is None:
            self._written = asyncio.get_running_loop().create_future()
        self._ids.append(callback_id)
        self._events.append(event)
        written = self._written
        if self._writer is None:
            self._writer = asyncio.create_task(self._write_batches(), name="parkgate-callback-marks")
        await asyncio.shield(written)

    async def _write_batches(self) -> None:
        written: asyncio.Future[None] | None = None
        try:
            while self._ids:
                ids, self._ids = self._ids, []
                events, self._events = self._events, []
                written, self._written = self._written, None
                assert written is not None
                try:
                    await asyncio.to_thread(self.store.callbacks_done, ids, self.clock.now(), events)
                except Exception as error:  # each delivery in the batch records it
                    written.set_exception(error)
                    written.exception()  # retrieved here too: no "never retrieved" warning
                else:
                    written.set_result(None)
        finally:
            self._writer = None
            for waiting in (written, self._written):  # cancelled mid-write: nobody waits forever
                if waiting is not None and not waiting.done():
                    waiting.cancel()
            if self._written is not None and self._written.done():
                self._written, self._ids, self._events = None, [], []

    async def drain(self) -> None:
        """Wait for the marks being written or gathered to be committed."""
        writer = self._writer
        if writer is not None:
            await asyncio.gather(writer, return_exceptions=True)
