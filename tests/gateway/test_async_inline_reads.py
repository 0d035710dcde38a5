"""``AsyncGateway.handle`` on a store whose reads never wait (SQLite): a message that
finds nothing parked is decided on the event loop's own thread, and the reply of one with
a ``message_id``, in a conversation this process remembers free, is stored in a batch with
the others that arrive meanwhile (one commit); any message that writes more (a parked
ask's step, an expiry found on read, a late answer) goes to a worker thread and is
written once, as :meth:`Gateway.handle` writes it."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence
from datetime import timedelta

import pytest

from parkgate import AskStatus, AsyncGateway, EventKind, Gateway, ManualClock, ReplyKind
from parkgate.gateway.calls import InlineAnswer
from parkgate.gateway.offload import GATEWAY_THREADS, OffloadBatches, offload


def passes_counted(gateway: Gateway) -> float:
    labels = {"kind": "pass", "surface": gateway.metrics.surface}
    return gateway.metrics.registry.get_sample_value("parkgate_replies_total", labels) or 0.0


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


def test_answer_inline_writes_nothing_where_the_message_would_write(gateway: Gateway) -> None:
    assert gateway.store.reads_inline
    empty = gateway.answer_inline("conv-none", "hi")
    assert empty is not None and empty.reply.kind is ReplyKind.PASS and empty.unrecorded is None
    parked = gateway.ask("conv-parked", "Deploy?", ["Yes", "No"])
    assert parked.ask_id is not None
    assert gateway.answer_inline("conv-parked", "what?") is None
    assert gateway.answer_inline("conv-parked", "1") is None
    assert gateway.answer_inline("conv-parked", "1", "m-1") is None
    assert gateway.answer_inline("conv-none", "hi", "m-9", ask_id=parked.ask_id) is None  # may be a late answer
    assert gateway.answer_inline("conv-never-seen", "hi", "m-1") is None  # a worker reads it first
    ask = gateway.get(parked.ask_id)
    assert ask.status is AskStatus.OPEN and ask.mismatches == 0
    assert [event.type for event in gateway.events(parked.ask_id)] == [EventKind.PARKED]
    # Declined, the message is then answered as ever.
    assert gateway.handle("conv-parked", "1").kind is ReplyKind.SELECTED


def test_a_pass_with_a_message_id_is_stored_and_counted_only_when_recorded(gateway: Gateway) -> None:
    gateway.handle("conv-id", "hello")  # the conversation is remembered free from now on
    before = passes_counted(gateway)
    answer = gateway.answer_inline("conv-id", "hi", "m-1")
    assert answer is not None and answer.reply.kind is ReplyKind.PASS
    assert answer.unrecorded is not None and answer.unrecorded.message_id == "m-1"
    assert passes_counted(gateway) == before  # nothing is stored yet, nothing counted
    gateway.ask("conv-id", "Deploy?", ["Yes", "No"])
    assert gateway.record_inline([answer]) == [False]  # it would now be a step of the parked ask
    assert gateway.handle("conv-id", "1", "m-1").kind is ReplyKind.SELECTED

    answer = gateway.answer_inline("conv-id", "hi", "m-2")
    assert answer is not None and answer.unrecorded is not None
    assert gateway.record_inline([answer]) == [True]
    assert passes_counted(gateway) == before + 1
    # A redelivery is not stored twice, nor counted twice: handle answers it, stored.
    again = gateway.answer_inline("conv-id", "hi", "m-2")
    assert again is not None and gateway.record_inline([again]) == [False]
    gateway.ask("conv-id", "Again?", ["Yes", "No"])
    assert gateway.handle("conv-id", "1", "m-2").kind is ReplyKind.PASS
    assert passes_counted(gateway) == before + 1


def test_record_inline_stores_each_reply_only_where_nothing_changed(gateway: Gateway) -> None:
    said = [("conv-a", "m-1"), ("conv-b", "m-1"), ("conv-a", "m-1"), ("conv-c", "m-1")]
    for conversation in ("conv-a", "conv-b", "conv-c"):
        gateway.handle(conversation, "hello")  # remembered free
    answers = [gateway.answer_inline(conversation, "hi", mid) for conversation, mid in said]
    assert all(answer is not None and answer.unrecorded is not None for answer in answers)
    gateway.ask("conv-c", "Deploy?", ["Yes", "No"])  # parked after conv-c's message was read
    stored = gateway.record_inline([answer for answer in answers if answer is not None])
    # conv-a's second copy is a redelivery of the first; conv-c has an ask open now.
    assert stored == [True, True, False, False]
    assert gateway.handle("conv-a", "other", "m-1").kind is ReplyKind.PASS
    assert gateway.handle("conv-c", "2", "m-1").kind is ReplyKind.SELECTED


async def test_concurrent_passes_with_message_ids_share_commits_and_each_is_stored(gateway: Gateway) -> None:
    batches: list[int] = []
    record = gateway.record_inline

    def counted(answers: Sequence[InlineAnswer]) -> list[bool]:
        batches.append(len(answers))
        return record(answers)

    gateway.record_inline = counted  # type: ignore[method-assign]
    agw = AsyncGateway(gateway)
    for n in range(7):
        await agw.handle(f"conv-{n}", "hello")  # remembered free
    replies = await asyncio.gather(*(agw.handle(f"conv-{n % 7}", "hi", f"m-{n}") for n in range(60)))
    assert all(reply.kind is ReplyKind.PASS for reply in replies)
    assert sum(batches) == 60 and len(batches) < 60, batches
    for n in range(7):
        gateway.ask(f"conv-{n}", "Deploy?", ["Yes", "No"])
    again = await asyncio.gather(*(agw.handle(f"conv-{n % 7}", "1", f"m-{n}") for n in range(60)))
    assert all(reply.kind is ReplyKind.PASS for reply in again)  # redeliveries: stored, not steps
    assert passes_counted(gateway) >= 60


async def test_a_batch_that_fails_answers_each_message_on_its_own(gateway: Gateway) -> None:
    def failing(answers: Sequence[InlineAnswer]) -> list[bool]:
        raise RuntimeError("the batch's commit failed")

    gateway.record_inline = failing  # type: ignore[method-assign]
    agw = AsyncGateway(gateway)
    for n in range(4):
        await agw.handle(f"conv-{n}", "hello")  # remembered free
    gateway.ask("conv-2", "Deploy?", ["Yes", "No"])
    replies = await asyncio.gather(*(agw.handle(f"conv-{n}", "1", f"m-{n}") for n in range(4)))
    assert [reply.kind for reply in replies] == [ReplyKind.PASS, ReplyKind.PASS, ReplyKind.SELECTED, ReplyKind.PASS]
    assert (await agw.handle("conv-0", "1", "m-0")).kind is ReplyKind.PASS


async def test_a_flood_of_items_is_cut_into_batches_of_at_most_most() -> None:
    calls: list[list[int]] = []

    def doubled(items: Sequence[int]) -> list[int]:
        calls.append(list(items))
        return [2 * item for item in items]

    batches: OffloadBatches[int, int] = OffloadBatches(doubled, failed=-1, most=3)
    results = await asyncio.gather(*(batches(n) for n in range(10)))
    assert results == [2 * n for n in range(10)]
    assert sorted(n for call in calls for n in call) == list(range(10))
    assert calls and max(len(call) for call in calls) == 3
    with pytest.raises(ValueError):
        OffloadBatches(doubled, failed=-1, most=0)
