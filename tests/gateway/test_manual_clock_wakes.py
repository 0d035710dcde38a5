"""Moving a ManualClock wakes the waiters of every gateway that reads it.

A test moves time instead of sleeping; a wait that sleeps until its next real-time read
would see the move only then (up to ``FALLBACK_READ_SECONDS`` later). The clock tells the
gateway's close signal, and each waiter reads again at once. The wake is the signal's,
the same on every engine: these run on SQLite.
"""

from __future__ import annotations

import threading
from datetime import timedelta
from typing import TYPE_CHECKING

from parkgate import Ask, AskStatus, ManualClock

if TYPE_CHECKING:
    from conftest import MakeGateway, StoreUrlFactory


def test_a_wait_sleeping_on_an_open_ask_sees_the_ttl_the_clock_was_moved_past(
    store_url_factory: StoreUrlFactory, make_gateway: MakeGateway, clock: ManualClock
) -> None:
    gateway = make_gateway(store_url_factory("sqlite"), clock)
    parked = gateway.ask("conv-clock", "Deploy?", ["Yes", "No"], ttl=timedelta(hours=1))
    assert parked.ask_id is not None
    result: list[Ask] = []
    # Five real seconds: without the wake the wait ends with the ask still open.
    thread = threading.Thread(target=lambda: result.append(gateway.wait(parked.ask_id or "", timeout=5)))
    thread.start()
    assert gateway.signal.wait_until_asleep(parked.ask_id, 10)
    clock.advance(timedelta(hours=1, seconds=1))
    thread.join(10)
    assert result and result[0].status is AskStatus.EXPIRED


def test_a_closed_gateway_no_longer_hears_the_clock(
    store_url_factory: StoreUrlFactory, make_gateway: MakeGateway, clock: ManualClock
) -> None:
    gateway = make_gateway(store_url_factory("sqlite"), clock)
    heard: list[object] = []
    gateway.signal.listen(lambda change, ask_id: heard.append(change))
    clock.advance(1)
    assert len(heard) == 1
    gateway.close()  # wakes its waiters once more, to find it closed
    at_close = len(heard)
    clock.advance(1)  # nothing left to wake: no error, nothing heard
    assert len(heard) == at_close


def test_a_listener_hears_every_move_until_removed() -> None:
    clock = ManualClock()
    moves: list[int] = []
    remove = clock.on_move(lambda: moves.append(1))
    clock.advance(5)
    clock.set(clock.now() + timedelta(minutes=1))
    remove()
    remove()  # twice is harmless
    clock.advance(5)
    assert len(moves) == 2
