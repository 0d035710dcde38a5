"""The deliverer runs on narrow parts (a store, a clock, the close signal, the due reads),
not on a ``Gateway``: what it is handed is all it uses."""

from __future__ import annotations

from datetime import datetime, timedelta

from flaky_store import HOOK, Hook, until

from parkgate import Gateway, ManualClock, Store
from parkgate.core.kinds import AskStatus
from parkgate.delivery import Deliverer
from parkgate.store.signal import CloseSignal


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
