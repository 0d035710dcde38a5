"""Delivered outbox rows are marked in batches: many deliveries' rows in one commit.

``Store.callbacks_done`` marks several rows in one transaction (one statement per chunk
on the SQL stores); :class:`~parkgate.delivery.marks.DeliveredMarks` gathers the rows of
deliveries that finish while a batch is being written into the next one. Every delivery
still ends only once its row's mark is committed, and a failed write fails each of them.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

import httpx
import pytest

from parkgate import Gateway
from parkgate.core.events import Attempt, EventKind, NewEvent, delivered
from parkgate.core.model import CallbackStatus
from parkgate.delivery.marks import DeliveredMarks
from parkgate.delivery.outbox import CONCURRENCY, OutboxDeliverer
from parkgate.store import Store
from parkgate.store.outbox_sql import MARK_CHUNK
from parkgate.store.writes import QueuedCallback, Writes

NOW = datetime(2026, 12, 4, 12, 0, tzinfo=UTC)


def _queue(store: Store, count: int) -> list[int]:
    """Queue and claim ``count`` rows; their ids in the order of their asks (``ask-0`` ...)."""
    queued = tuple(QueuedCallback(f"ask-{number}", "http://hooks.test/h", "{}", NOW) for number in range(count))
    with store.transaction() as tx:
        tx.write(Writes(callbacks=queued))
    rows = store.claim_callbacks(NOW, NOW + timedelta(minutes=1), count + 10)
    assert len(rows) == count
    by_ask = {row.ask_id: row.id for row in rows}
    return [by_ask[f"ask-{number}"] for number in range(count)]


def test_several_rows_are_marked_delivered_in_one_call(store: Store) -> None:
    ids = _queue(store, MARK_CHUNK + 3)  # more than one statement's worth
    store.callbacks_done(ids[:-1], NOW)
    with store.transaction() as tx:
        states = tx.outbox.callback_states([f"ask-{n}" for n in range(len(ids))])
    delivered = [ask for ask, state in states.items() if state.status is CallbackStatus.DELIVERED]
    assert len(delivered) == len(ids) - 1 and states[f"ask-{len(ids) - 1}"].status is CallbackStatus.PENDING
    assert {state.attempts for ask, state in states.items() if ask in delivered} == {1}
    # Once its lease runs out only the unmarked row is due again.
    later = NOW + timedelta(hours=1)
    assert [row.ask_id for row in store.claim_callbacks(later, later + timedelta(minutes=1), 10_000)] == [
        f"ask-{len(ids) - 1}"
    ]


class _SlowStore:
    """Records each ``callbacks_done`` call; the first one holds until :attr:`release` is set,
    as a slow commit does, so a test decides what arrives while it is being written."""

    def __init__(self, fail: bool = False) -> None:
        self.calls: list[list[int]] = []
        #: The asks of the ``delivered`` events each call wrote with its marks.
        self.events: list[list[str]] = []
        self.fail = fail
        self.lock = threading.Lock()
        #: Set once the first write is under way.
        self.writing = threading.Event()
        #: The first write ends once this is set.
        self.release = threading.Event()

    def callbacks_done(self, ids: list[int], now: datetime, events: Sequence[NewEvent] = ()) -> None:
        first = not self.writing.is_set()
        self.writing.set()
        if first:
            assert self.release.wait(10), "the test never let the first write end"
        if self.fail:
            raise RuntimeError("the store is away")
        with self.lock:
            self.calls.append(list(ids))
            self.events.append([event.ask_id for event in events])


def _attempt(number: int) -> NewEvent:
    """The ``delivered`` event of row ``number`` (of the ask ``ask-<number>``)."""
    facts = Attempt("callback", "hooks.test", f"ask-{number}.closed", 1, 200, 1.0, "delivered")
    return delivered(f"ask-{number}", NOW, facts)


class _Clock:
    def now(self) -> datetime:
        return NOW


async def test_marks_that_arrive_during_a_write_go_in_the_next_batch() -> None:
    store = _SlowStore()
    marks = DeliveredMarks(store, _Clock())  # type: ignore[arg-type]

    first = asyncio.create_task(marks.mark(0, _attempt(0)))
    assert await asyncio.to_thread(store.writing.wait, 10)  # row 0's write is under way
    later = [asyncio.create_task(marks.mark(n, _attempt(n))) for n in range(1, 60)]
    await asyncio.sleep(0)  # every later delivery has asked for its mark
    store.release.set()
    await asyncio.gather(first, *later)
    assert store.calls == [[0], list(range(1, 60))]  # the 59 that came meanwhile: one commit
    assert store.events == [["ask-0"], [f"ask-{n}" for n in range(1, 60)]]  # each with its event


async def test_a_failed_write_fails_every_delivery_in_its_batch() -> None:
    store = _SlowStore(fail=True)
    store.release.set()
    marks = DeliveredMarks(store, _Clock())  # type: ignore[arg-type]
    results = await asyncio.gather(*(marks.mark(n, _attempt(n)) for n in range(5)), return_exceptions=True)
    assert all(isinstance(result, RuntimeError) for result in results)
    await marks.drain()


@pytest.mark.parametrize("count", [1, CONCURRENCY * 3 + 5])
async def test_every_row_is_delivered_once_and_marked(store: Store, count: int) -> None:
    gateway = Gateway(store=store)
    for number in range(count):
        gateway.ask(f"c-{number}", "Deploy?", ["Deploy", "Hold"], callback_url="http://hooks.test/h")
        gateway.handle(f"c-{number}", "1")
    seen: list[str] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(request.headers["idempotency-key"])
        return httpx.Response(200)

    async with httpx.AsyncClient(transport=httpx.MockTransport(answer)) as client:
        outbox = OutboxDeliverer(store, gateway.clock, client=client, signer=None)
        delivered = 0
        while delivered < count:
            sent = await outbox.deliver_due()
            assert sent > 0
            delivered += sent
        assert await outbox.deliver_due() == 0  # nothing left: every row was marked
    assert len(seen) == len(set(seen)) == count
    with store.transaction() as tx:
        assert tx.outbox.callback_counts()[CallbackStatus.PENDING] == 0
        logged = tx.events.between(None, None, 10 * count)
    # Each row's attempt is one event in its batch's commit, numbered after its ask's close.
    delivered_events = [event for event in logged if event.type is EventKind.DELIVERED]
    assert len({event.ask_id for event in delivered_events}) == len(delivered_events) == count
    assert {(event.seq, event.data["result"], event.data["status"]) for event in delivered_events} == {
        (4, "delivered", 200)
    }
