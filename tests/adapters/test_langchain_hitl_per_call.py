"""LangChain v1 ``HumanInTheLoopMiddleware`` in ``interrupt_mode="per_call"``, through parkgate.

The middleware interrupts once per gated tool call with a ``response_schema`` that LangGraph
checks the resume value against: a selection resumes with one decision; a cancel or an
expiry resumes with a reject saying so, and the agent finishes without running the tool.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from hitl_agent import Agent, scripted_model
from langchain.agents import create_agent
from langchain.agents.middleware import HumanInTheLoopMiddleware
from langchain_core.messages import ToolMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import tool
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

from parkgate import AsyncGateway, Gateway, ManualClock, ReplyKind, StoppingPointError
from parkgate.adapters.langgraph import ParkgateInterrupts
from parkgate.core import phrases as P
from parkgate.core.kinds import AskKind

CONFIG: RunnableConfig = {"configurable": {"thread_id": "per-call-1"}}


@pytest.fixture
def agent(tmp_path: Path) -> Iterator[Agent]:
    conn = sqlite3.connect(tmp_path / "agent.db", check_same_thread=False)
    yield Agent(SqliteSaver(conn), CONFIG, mode="per_call")
    conn.close()


def start(bridge: ParkgateInterrupts, agent: Agent) -> Any:
    return bridge.start(agent.graph, {"messages": [{"role": "user", "content": "Ship it."}]}, CONFIG, "chat-1")


def test_each_per_call_interrupt_is_a_menu_and_a_selection_passes_the_schema(gateway: Gateway, agent: Agent) -> None:
    bridge = ParkgateInterrupts(gateway)
    start(bridge, agent)
    [ask] = gateway.open_asks()
    assert ask.kind is AskKind.CHOICE
    assert ask.options == (P.HITL_APPROVE, P.HITL_REJECT, P.HITL_RESPOND)  # edit does not fit a chat
    assert "send_email" in ask.prompt
    assert "(1 of" not in ask.prompt  # one interrupt per call: no position
    asked = [ask.options]
    last: Any = None
    for reply in ("1", "reject", "-"):
        if last is not None:
            asked.extend(open_ask.options for open_ask in gateway.open_asks())
        last = bridge.drive(agent.graph, CONFIG, "chat-1", reply)
        assert last.reply.kind in (ReplyKind.SELECTED, ReplyKind.ANSWERED)
    assert asked[-2] == (P.HITL_APPROVE, P.HITL_REJECT) and asked[-1] == ()  # then the reason, as text
    assert last.finished
    assert agent.ran == ["send_email ops@example.com"]
    results = {message.name: message for message in agent.tool_messages()}
    assert results["send_email"].content == "sent to ops@example.com"
    assert results["delete_file"].status == "error"
    assert agent.graph.get_state(CONFIG).next == ()
    assert gateway.open_asks() == []
    run = gateway.run("per-call-1")
    assert run is not None and (run.status, run.outcome) == ("complete", "done")


def test_a_cancel_of_a_per_call_interrupt_rejects_saying_it_was_cancelled(gateway: Gateway, agent: Agent) -> None:
    bridge = ParkgateInterrupts(gateway)
    start(bridge, agent)
    step = bridge.drive(agent.graph, CONFIG, "chat-1", "/cancel")
    assert step.reply.kind is ReplyKind.CANCELLED and step.resumed and step.finished
    assert agent.ran == []
    results = agent.tool_messages()
    assert len(results) == 2
    for message in results:
        assert message.status == "error" and P.HITL_CANCELLED in str(message.content)
    assert agent.graph.get_state(CONFIG).next == ()
    run = gateway.run("per-call-1")
    assert run is not None and (run.status, run.outcome) == ("complete", "cancelled")


def test_an_expiry_of_a_per_call_interrupt_rejects_saying_it_expired(
    gateway: Gateway, agent: Agent, clock: ManualClock
) -> None:
    bridge = ParkgateInterrupts(gateway)
    start(bridge, agent)
    clock.advance(timedelta(hours=6, seconds=1))
    assert gateway.read_due() == 1
    assert bridge.follow_up(agent.graph) == 1
    assert agent.ran == []
    results = agent.tool_messages()
    assert len(results) == 2
    for message in results:
        assert message.status == "error" and P.HITL_EXPIRED in str(message.content)
    assert agent.graph.get_state(CONFIG).next == ()
    run = gateway.run("per-call-1")
    assert run is not None and (run.status, run.outcome) == ("complete", "expired")


def test_a_per_call_interrupt_without_reject_is_closed_by_a_cancel_as_the_tools_node(
    gateway: Gateway, tmp_path: Path
) -> None:
    ran: list[str] = []

    @tool
    def send_email(to: str) -> str:
        """Send an email."""
        ran.append(to)
        return f"sent to {to}"

    calls = [
        {"name": "send_email", "args": {"to": "ops@example.com"}, "id": "call-1"},
        {"name": "send_email", "args": {"to": "dev@example.com"}, "id": "call-2"},
    ]
    model = scripted_model(calls)
    review = HumanInTheLoopMiddleware(
        interrupt_on={"send_email": {"allowed_decisions": ["approve", "respond"]}}, interrupt_mode="per_call"
    )
    conn = sqlite3.connect(tmp_path / "strict.db", check_same_thread=False)
    try:
        graph = create_agent(model, tools=[send_email], middleware=[review], checkpointer=SqliteSaver(conn))
        bridge = ParkgateInterrupts(gateway)
        bridge.start(graph, {"messages": [{"role": "user", "content": "Ship it."}]}, CONFIG, "chat-1")
        [ask] = gateway.open_asks()
        assert ask.options == (P.HITL_APPROVE, P.HITL_RESPOND)
        step = bridge.drive(graph, CONFIG, "chat-1", "/cancel")
        assert step.reply.kind is ReplyKind.CANCELLED and step.finished
        assert ran == []
        messages = graph.get_state(CONFIG).values["messages"]
        results = [message for message in messages if isinstance(message, ToolMessage)]
        assert sorted(str(message.tool_call_id) for message in results) == ["call-1", "call-2"]
        for message in results:
            assert message.status == "error" and P.HITL_CANCELLED in str(message.content)
        assert graph.get_state(CONFIG).next == ()
    finally:
        conn.close()


def test_respond_in_per_call_mode_asks_for_the_text_the_model_gets(gateway: Gateway, agent: Agent) -> None:
    """Respond is one decision with its message, as the call's response schema wants it."""
    bridge = ParkgateInterrupts(gateway)
    start(bridge, agent)
    chosen = bridge.drive(agent.graph, CONFIG, "chat-1", "3")  # Respond
    assert chosen.reply.answer == P.HITL_RESPOND and chosen.asked is not None
    [text] = gateway.open_asks()
    assert text.kind is AskKind.TEXT and "send_email" in text.prompt
    bridge.drive(agent.graph, CONFIG, "chat-1", "Ops already know; no email needed.")
    last = bridge.drive(agent.graph, CONFIG, "chat-1", "1")  # approve the delete
    assert last.resumed and last.finished
    assert agent.ran == ["delete_file /tmp/report.txt"]
    results = {message.name: message for message in agent.tool_messages()}
    assert results["send_email"].content == "Ops already know; no email needed."
    assert results["delete_file"].content == "deleted /tmp/report.txt"
    assert agent.graph.get_state(CONFIG).next == ()


def test_a_per_call_tool_that_allows_only_edit_is_unaskable_and_its_agent_is_resumed(
    gateway: Gateway, tmp_path: Path
) -> None:
    ran: list[str] = []

    @tool
    def delete_file(path: str) -> str:
        """Delete a file."""
        ran.append(path)
        return f"deleted {path}"

    calls = [{"name": "delete_file", "args": {"path": "/tmp/report.txt"}, "id": "call-1"}]
    model = scripted_model(calls)
    review = HumanInTheLoopMiddleware(
        interrupt_on={"delete_file": {"allowed_decisions": ["edit"]}}, interrupt_mode="per_call"
    )
    conn = sqlite3.connect(tmp_path / "edit-only.db", check_same_thread=False)
    try:
        graph = create_agent(model, tools=[delete_file], middleware=[review], checkpointer=SqliteSaver(conn))
        bridge = ParkgateInterrupts(gateway)
        with pytest.raises(StoppingPointError, match="allows none of approve, reject or respond"):
            bridge.start(graph, {"messages": [{"role": "user", "content": "Clean up."}]}, CONFIG, "chat-1")
        assert ran == []
        messages = graph.get_state(CONFIG).values["messages"]
        [result] = [message for message in messages if isinstance(message, ToolMessage)]
        assert result.status == "error" and result.tool_call_id == "call-1"
        assert graph.get_state(CONFIG).next == ()
        assert gateway.open_asks() == []
        run = gateway.run("per-call-1")
        assert run is not None and (run.status, run.outcome) == ("complete", "unaskable")
    finally:
        conn.close()


async def test_from_asyncio_per_call_interrupts_are_asked_and_a_cancel_rejects_the_rest(
    gateway: Gateway, tmp_path: Path
) -> None:
    async with AsyncSqliteSaver.from_conn_string(str(tmp_path / "per-call-async.db")) as saver:
        agent = Agent(saver, CONFIG, mode="per_call")
        bridge = ParkgateInterrupts(AsyncGateway(gateway))
        await bridge.astart(agent.graph, {"messages": [{"role": "user", "content": "Ship it."}]}, CONFIG, "chat-1")
        approved = await bridge.adrive(agent.graph, CONFIG, "chat-1", "1")  # approve the email
        assert approved.reply.kind is ReplyKind.SELECTED and approved.asked is not None
        step = await bridge.adrive(agent.graph, CONFIG, "chat-1", "/cancel")  # the delete is cancelled
        assert step.reply.kind is ReplyKind.CANCELLED and step.resumed and step.finished
        assert agent.ran == []  # the email approved before the cancel did not run either
        state = await agent.graph.aget_state(CONFIG)
        assert state.next == ()
        results = {message.name: message for message in state.values["messages"] if isinstance(message, ToolMessage)}
        for message in results.values():
            assert message.status == "error" and P.HITL_CANCELLED in str(message.content)
        assert set(results) == {"send_email", "delete_file"}
        run = gateway.run("per-call-1")
        assert run is not None and (run.status, run.outcome) == ("complete", "cancelled")
