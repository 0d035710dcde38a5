"""``AsyncGateway.handle`` on a store whose reads never wait (SQLite): a message that
changes nothing is answered on the event loop's own thread; any message that writes (a
parked ask's step, an expiry found on read, a late answer, a ``message_id`` to record)
goes to a worker thread and is written once, as :meth:`Gateway.handle` writes it."""

from __future__ import annotations

import asyncio
import threading
from datetime import timedelta

import pytest

from parkgate import AskStatus, AsyncGateway, EventKind, Gateway, ManualClock, ReplyKind
from parkgate.gateway.offload import GATEWAY_THREADS, offload


async def test_a_pass_is_answered_while_every_worker_thread_is_busy(gateway: Gateway) -> None:
    agw = AsyncGateway(gateway)
    release = threading.Event()
    started = 0
    lock = threading.Lock()

    def occupy() -> None:
        nonlocal started
        with lock:
            started += 1
        release.wait(30)

    busy = [asyncio.ensure_future(offload(occupy)) for _ in range(GATEWAY_THREADS)]
    try:
        while started < GATEWAY_THREADS:  # every worker thread is taken
            await asyncio.sleep(0.01)
        reply = await asyncio.wait_for(agw.handle("conv-free", "hello there"), timeout=10)
        assert reply.kind is ReplyKind.PASS and not reply.parked
    finally:
        release.set()
        await asyncio.gather(*busy)


@pytest.mark.engines("SQLite answers on the loop's thread, PostgreSQL on a worker's: the replies and the log agree")
async def test_a_parked_asks_steps_are_written_once_each(gateway: Gateway) -> None:
    agw = AsyncGateway(gateway)
    parked = await agw.ask("conv-steps", "Deploy?", ["Yes", "No"])
    assert parked.ask_id is not None
    missed = await agw.handle("conv-steps", "what?")
    assert missed.kind is ReplyKind.RETRY
    assert (await agw.get(parked.ask_id)).mismatches == 1
    chosen = await agw.handle("conv-steps", "2")
    assert chosen.kind is ReplyKind.SELECTED and chosen.answer == "No"
    kinds = [event.type for event in await agw.events(parked.ask_id)]
    assert kinds == [EventKind.PARKED, EventKind.TOUCHED, EventKind.TOUCHED, EventKind.CLOSED]
    after = await agw.handle("conv-steps", "2")
    assert after.kind is ReplyKind.PASS


@pytest.mark.engines("an expiry found on read is a write: SQLite hands it from the loop to a worker thread")
async def test_a_message_that_finds_its_ask_past_the_ttl_closes_it_once(gateway: Gateway, clock: ManualClock) -> None:
    agw = AsyncGateway(gateway)
    parked = await agw.ask("conv-lapsed", "Deploy?", ["Yes", "No"], ttl=timedelta(minutes=5))
    assert parked.ask_id is not None
    clock.advance(timedelta(minutes=6))
    reply = await agw.handle("conv-lapsed", "1")
    assert reply.kind is ReplyKind.PASS and reply.expired_ask_id == parked.ask_id
    assert (await agw.get(parked.ask_id)).status is AskStatus.EXPIRED
    kinds = [event.type for event in await agw.events(parked.ask_id)]
    assert kinds == [EventKind.PARKED, EventKind.CLOSED]


async def test_a_late_answer_through_the_loop_is_logged_once(gateway: Gateway) -> None:
    agw = AsyncGateway(gateway)
    parked = await agw.ask("conv-late", "Deploy?", ["Yes", "No"])
    assert parked.ask_id is not None
    await agw.handle("conv-late", "1")
    late = await agw.handle("conv-late", "2", ask_id=parked.ask_id)
    assert late.kind is ReplyKind.LATE and late.ask_id == parked.ask_id
    kinds = [event.type for event in await agw.events(parked.ask_id)]
    assert kinds.count(EventKind.LATE) == 1 and kinds[-1] is EventKind.LATE
    assert (await agw.get(parked.ask_id)).answer == "Yes"


async def test_a_message_id_is_recorded_and_a_redelivery_answers_the_same(gateway: Gateway) -> None:
    agw = AsyncGateway(gateway)
    first = await agw.handle("conv-ids", "hello", message_id="m-1")
    await agw.ask("conv-ids", "Deploy?", ["Yes", "No"])
    again = await agw.handle("conv-ids", "hello", message_id="m-1")
    assert first.kind is again.kind is ReplyKind.PASS
    assert (await agw.handle("conv-ids", "1", message_id="m-2")).kind is ReplyKind.SELECTED


def test_handle_if_unchanged_writes_nothing_where_the_message_would_write(gateway: Gateway) -> None:
    assert gateway.store.reads_inline
    empty = gateway.handle_if_unchanged("conv-none", "hi")
    assert gateway.handle_if_unchanged("conv-none", "hi", "m-1") is None  # a message_id is recorded: a write
    assert empty is not None and empty.kind is ReplyKind.PASS
    parked = gateway.ask("conv-parked", "Deploy?", ["Yes", "No"])
    assert parked.ask_id is not None
    assert gateway.handle_if_unchanged("conv-parked", "what?") is None
    assert gateway.handle_if_unchanged("conv-parked", "1") is None
    ask = gateway.get(parked.ask_id)
    assert ask.status is AskStatus.OPEN and ask.mismatches == 0
    assert [event.type for event in gateway.events(parked.ask_id)] == [EventKind.PARKED]
    # Declined, the message is then answered as ever.
    assert gateway.handle("conv-parked", "1").kind is ReplyKind.SELECTED
