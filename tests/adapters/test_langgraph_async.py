"""The LangGraph adapter from asyncio: ``AsyncSqliteSaver`` on a file, an ``AsyncGateway``
on SQLite and PostgreSQL, ``astart``/``adrive`` and the ``awatch`` task."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
from test_langgraph import CONFIG, OPTIONS, UNASKABLE_PAYLOADS, Counter, build_graph, confirm_graph, deploy_graph

from parkgate import AsyncGateway, Gateway, ManualClock, ReplyKind, StoppingPointError
from parkgate.adapters.langgraph import UNASKABLE, Closed, ParkgateInterrupts

if TYPE_CHECKING:
    from conftest import Reopen


@pytest.fixture
async def saver(tmp_path: Path) -> AsyncIterator[AsyncSqliteSaver]:
    async with AsyncSqliteSaver.from_conn_string(str(tmp_path / "graph.db")) as saver:
        yield saver


async def eventually(check: Any, what: str) -> None:
    """Wait for the watcher task to have done ``what`` (polls; asserts no timing)."""
    for _ in range(3000):
        if await check():
            return
        await asyncio.sleep(0.02)
    raise AssertionError(f"never happened: {what}")


async def test_astart_and_adrive_park_bounce_and_resume(gateway: Gateway, saver: AsyncSqliteSaver) -> None:
    counter = Counter()
    graph = build_graph(saver, counter)
    bridge = ParkgateInterrupts(AsyncGateway(gateway))
    first = await bridge.astart(graph, {"topic": "search"}, CONFIG, "chat-a")
    assert first.reply.kind is ReplyKind.ASKED and OPTIONS[0] in first.text
    bounced = await bridge.adrive(graph, CONFIG, "chat-a", "zero")
    assert bounced.reply.kind is ReplyKind.RETRY and not bounced.resumed
    chosen = await bridge.adrive(graph, CONFIG, "chat-a", "1")
    assert chosen.resumed and (await graph.aget_state(CONFIG)).values["diagram"] == "Sequence"
    assert chosen.asked is not None and "Describe the Sequence diagram for search" in chosen.text
    done = await bridge.adrive(graph, CONFIG, "chat-a", "Client -> Index")
    assert done.finished
    run = gateway.run("thread-1")
    assert run is not None and (run.status, run.outcome) == ("complete", "done")


async def test_a_cancel_resumes_the_thread_with_closed_within_the_call(
    gateway: Gateway, saver: AsyncSqliteSaver
) -> None:
    counter = Counter()
    graph = build_graph(saver, counter)
    bridge = ParkgateInterrupts(gateway)
    first = await bridge.astart(graph, {"topic": "search"}, CONFIG, "chat-a")
    step = await bridge.adrive(graph, CONFIG, "chat-a", "/cancel")
    assert step.reply.kind is ReplyKind.CANCELLED and step.resumed and step.finished
    assert counter.got == [Closed("cancelled", first.reply.ask_id or "")]
    assert (await graph.aget_state(CONFIG)).next == ()


async def test_the_awatch_task_follows_up_an_expiry_and_an_operator_cancel(
    gateway: Gateway, saver: AsyncSqliteSaver, clock: ManualClock, reopen: Reopen
) -> None:
    counter = Counter()
    graph = build_graph(saver, counter)
    bridge = ParkgateInterrupts(AsyncGateway(gateway))
    first = await bridge.astart(graph, {"topic": "search"}, CONFIG, "chat-a")
    other = {"configurable": {"thread_id": "thread-2"}}
    second = await bridge.astart(graph, {"topic": "billing"}, other, "chat-b")
    watcher = asyncio.create_task(bridge.awatch(graph))
    try:
        clock.advance(timedelta(hours=5))
        reopen().cancel(second.reply.ask_id or "")  # an operator, in another process
        await eventually(lambda: _settled(graph, other), "thread-2 resumed after the operator's cancel")
        clock.advance(timedelta(hours=1, seconds=1))
        assert await AsyncGateway(gateway).read_due() == 1  # the deliverer's due read
        await eventually(lambda: _settled(graph, CONFIG), "thread-1 resumed after its expiry")
    finally:
        watcher.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await watcher
    assert sorted(counter.got, key=lambda closed: closed.outcome) == [
        Closed("cancelled", second.reply.ask_id or ""),
        Closed("expired", first.reply.ask_id or ""),
    ]
    assert gateway.open_asks() == [] and gateway.closed_follow_ups() == []


async def _closed_as_unaskable(gateway: Gateway, graph: Any, bridge: ParkgateInterrupts) -> None:
    state = await graph.aget_state(CONFIG)
    assert state.next == () and state.values["status"] == UNASKABLE
    run = gateway.run("thread-1")
    assert run is not None and (run.status, run.outcome) == ("complete", "unaskable")
    assert gateway.open_asks() == [] and gateway.closed_follow_ups() == []
    later = await bridge.adrive(graph, CONFIG, "chat-a", "1")
    assert later.reply.kind is ReplyKind.PASS and not later.resumed


@pytest.mark.parametrize(("payload", "wrong"), UNASKABLE_PAYLOADS)
async def test_astart_with_a_payload_that_cannot_be_asked_closes_the_thread_then_raises(
    gateway: Gateway, saver: AsyncSqliteSaver, payload: Any, wrong: str
) -> None:
    seen: list[Any] = []
    graph = deploy_graph(saver, payload, seen)
    bridge = ParkgateInterrupts(AsyncGateway(gateway))
    with pytest.raises(StoppingPointError, match=wrong) as raised:
        await bridge.astart(graph, {"service": "api"}, CONFIG, "chat-a")
    assert seen == [Closed(UNASKABLE, None, None, str(raised.value))]
    await _closed_as_unaskable(gateway, graph, bridge)


async def test_adrive_to_a_next_question_that_cannot_be_asked_closes_the_thread_then_raises(
    gateway: Gateway, saver: AsyncSqliteSaver
) -> None:
    seen: list[Any] = []
    graph = confirm_graph(saver, {"question": "Sure?", "choices": ["Yes", "No"], "default": "Maybe"}, seen)
    bridge = ParkgateInterrupts(AsyncGateway(gateway))
    await bridge.astart(graph, {"service": "api"}, CONFIG, "chat-a")
    with pytest.raises(StoppingPointError, match="'Maybe' is not one of the options") as raised:
        await bridge.adrive(graph, CONFIG, "chat-a", "2")
    assert seen == ["Hold", Closed(UNASKABLE, None, None, str(raised.value))]
    await _closed_as_unaskable(gateway, graph, bridge)


async def _settled(graph: Any, config: Any) -> bool:
    return (await graph.aget_state(config)).next == ()
