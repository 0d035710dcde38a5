"""The deliverer runs on narrow parts (a store, a clock, the close signal, the due reads),
not on a ``Gateway``: what it is handed is all it uses."""

from __future__ import annotations

import asyncio
import contextlib
import time
from datetime import datetime, timedelta

from flaky_store import HOOK, Hook, until

from parkgate import Gateway, ManualClock, Store
from parkgate.core.kinds import AskStatus
from parkgate.delivery import Deliverer
from parkgate.delivery.deliverer import COMMITTED_PAUSE_SECONDS
from parkgate.store.signal import Change, CloseSignal


class CountedDueReads:
    """Due reads that pass to a gateway's, counting what the deliverer asks for."""

    def __init__(self, gateway: Gateway) -> None:
        self.gateway = gateway
        self.reads: list[int] = []

    def read_due(self, limit: int) -> int:
        self.reads.append(limit)
        return self.gateway.read_due(limit)

    def next_due(self) -> datetime | None:
        return self.gateway.next_due()


async def test_a_deliverer_made_of_parts_closes_due_asks_through_the_reads_it_was_given(
    store: Store, clock: ManualClock
) -> None:
    with Gateway(store=store, clock=clock) as gateway:
        parked = gateway.ask("c-parts", "Deploy?", ["Yes", "No"], ttl=60, callback_url=HOOK)
        due = CountedDueReads(gateway)
        signal = CloseSignal()
        hook = Hook()
        deliverer = Deliverer(store, clock, signal, due, client=hook.client())
        deliverer.outbox.open()
        try:
            await deliverer.deliver_once()
            assert due.reads and deliverer.due_reads == 0  # read, and found nothing due yet
            clock.advance(timedelta(seconds=61))
            await deliverer.deliver_once()
            assert deliverer.due_reads == 1
            assert gateway.get(parked.ask_id or "").status is AskStatus.EXPIRED
            await until(lambda: hook.statuses() == ["expired"], "the expired callback")
        finally:
            await deliverer.outbox.aclose()
            signal.close()


async def test_a_stream_of_unnamed_commits_wakes_a_pass_at_most_every_pause_and_a_due_one_at_once(
    store: Store, clock: ManualClock
) -> None:
    # On SQLite the watcher says COMMITTED for every commit of another connection, this
    # process's own included: a busy server's commits must not each run a pass.
    with Gateway(store=store, clock=clock) as gateway:
        due = CountedDueReads(gateway)
        signal = CloseSignal()
        deliverer = Deliverer(store, clock, signal, due)
        running = asyncio.create_task(deliverer.run())
        try:
            await until(lambda: due.reads, "the first pass")
            before, started = len(due.reads), time.monotonic()
            while time.monotonic() - started < 10 * COMMITTED_PAUSE_SECONDS:
                for _ in range(20):
                    signal.changed(Change.COMMITTED)
                await asyncio.sleep(0.001)
            window = time.monotonic() - started
            passes = len(due.reads) - before
            assert 1 <= passes <= window / COMMITTED_PAUSE_SECONDS + 2, (passes, window)
            # The last commit of the stream is still looked at, after the pause.
            settled = len(due.reads)
            signal.changed(Change.COMMITTED)
            await until(lambda: len(due.reads) > settled, "a pass for the last unnamed commit")
            # A named change (an ask with a due time parked in this process) wakes at once.
            woken = len(due.reads)
            signal.changed(Change.DUE)
            await until(lambda: len(due.reads) > woken, "a pass for the due change")
        finally:
            running.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await running
