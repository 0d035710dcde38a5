"""``AsyncGateway`` under asyncio: the same behaviour, awaited."""

from __future__ import annotations

import asyncio

import pytest

from parkgate import AskStatus, AsyncGateway, Gateway, ReplyKind, UnknownAsk
from parkgate.core import phrases as P


async def test_seed_scenario_through_the_async_gateway(gateway: Gateway) -> None:
    agw = AsyncGateway(gateway)
    parked = await agw.start("conv-async", "uml")
    assert parked.kind is ReplyKind.ASKED and parked.ask_id is not None
    kinds = [(await agw.handle("conv-async", text)).kind for text in ["x", "y", "menu", "z"]]
    assert kinds == [ReplyKind.RETRY, ReplyKind.RETRY, ReplyKind.RESHOWN, ReplyKind.ESCALATED]
    left = await agw.handle("conv-async", "/cancel")
    assert left.kind is ReplyKind.CANCELLED and left.text == P.PHRASES[ReplyKind.CANCELLED]
    assert (await agw.get(parked.ask_id)).status is AskStatus.CANCELLED
    assert await agw.open_asks() == []


async def test_async_wait_wakes_when_another_task_answers(gateway: Gateway) -> None:
    agw = AsyncGateway(gateway)
    parked = await agw.ask("conv-aw", "Deploy?", ["Yes", "No"])
    assert parked.ask_id is not None

    async def answer_soon() -> ReplyKind:
        await asyncio.sleep(0.05)  # ordering only: let the wait start first
        return (await agw.handle("conv-aw", "no")).kind

    waited, answered = await asyncio.gather(agw.wait(parked.ask_id, 30), answer_soon())
    assert answered is ReplyKind.SELECTED
    assert waited.status is AskStatus.ANSWERED and waited.answer == "No"


async def test_async_calls_on_many_conversations_at_once(gateway: Gateway) -> None:
    agw = AsyncGateway(gateway)
    conversations = [f"conv-many-{n}" for n in range(8)]
    asked = await asyncio.gather(*(agw.ask(c, "Pick", ["A", "B"]) for c in conversations))
    assert all(reply.kind is ReplyKind.ASKED for reply in asked)
    misses = await asyncio.gather(*(agw.handle(c, "?") for c in conversations))
    assert all(reply.kind is ReplyKind.RETRY for reply in misses)
    chosen = await asyncio.gather(*(agw.handle(c, "b") for c in conversations))
    assert [reply.answer for reply in chosen] == ["B"] * len(conversations)
    assert await agw.open_asks() == []


async def test_async_errors_are_the_same_errors(gateway: Gateway) -> None:
    agw = AsyncGateway(gateway)
    with pytest.raises(UnknownAsk):
        await agw.cancel("nope")
    reply = await agw.ask_from_text("conv-at", "[[ask text]]\nWhy?\n[[/ask]]")
    assert reply.kind is ReplyKind.ASKED and reply.ask_id is not None
    cancelled = await agw.cancel(reply.ask_id)
    assert cancelled.status is AskStatus.CANCELLED


@pytest.mark.parametrize("closer", ["another task", "a thread using the sync gateway"])
async def test_async_wait_wakes_on_a_close_in_this_process_without_waiting_for_its_poll(
    gateway: Gateway, monkeypatch: pytest.MonkeyPatch, closer: str
) -> None:
    # A poll interval far longer than the test's bound: only the wake-up can end the wait in time.
    monkeypatch.setattr("parkgate.store.signal.FALLBACK_READ_SECONDS", 60.0)
    monkeypatch.setattr("parkgate.gateway.FALLBACK_READ_SECONDS", 60.0)
    agw = AsyncGateway(gateway)
    parked = await agw.ask("conv-wake", "Deploy?", ["Yes", "No"])
    assert parked.ask_id is not None
    waiter = asyncio.create_task(agw.wait(parked.ask_id, 120))
    await asyncio.sleep(0.05)  # ordering only: let the wait read the open ask and sleep
    if closer == "another task":
        await agw.handle("conv-wake", "1")
    else:
        await asyncio.to_thread(gateway.handle, "conv-wake", "1")
    waited = await asyncio.wait_for(waiter, 10)
    assert waited.status is AskStatus.ANSWERED and waited.answer == "Yes"
    assert gateway.signal.waited_ids() == []  # the wait unsubscribed


def test_sync_wait_wakes_on_a_close_in_this_process_without_waiting_for_its_poll(
    gateway: Gateway, monkeypatch: pytest.MonkeyPatch
) -> None:
    import threading

    monkeypatch.setattr("parkgate.gateway.FALLBACK_READ_SECONDS", 60.0)
    parked = gateway.ask("conv-wake-sync", "Deploy?", ["Yes", "No"])
    assert parked.ask_id is not None
    result: list[object] = []
    waiter = threading.Thread(target=lambda: result.append(gateway.wait(parked.ask_id or "", 120)))
    waiter.start()
    threading.Event().wait(0.05)  # ordering only: let the wait read the open ask and sleep
    gateway.handle("conv-wake-sync", "2")
    waiter.join(10)
    assert not waiter.is_alive() and len(result) == 1
    assert getattr(result[0], "answer", None) == "No"
