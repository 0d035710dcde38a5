"""LangChain v1 ``create_agent`` with ``HumanInTheLoopMiddleware``, reviewed through parkgate.

A fake chat model from ``langchain_core`` emits real tool calls; the middleware interrupts
before they run; the bridge asks the person about each tool call in turn and resumes the
agent once with the middleware's own decisions. A cancel or an expiry rejects every call
with a message that says so: the tools do not run and the model hears "not approved".
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

CONFIG: RunnableConfig = {"configurable": {"thread_id": "agent-1"}}


@pytest.fixture
def saver(tmp_path: Path) -> Iterator[SqliteSaver]:
    conn = sqlite3.connect(tmp_path / "agent.db", check_same_thread=False)
    yield SqliteSaver(conn)
    conn.close()


@pytest.fixture
def agent(saver: SqliteSaver) -> Agent:
    return Agent(saver, CONFIG)


def start(bridge: ParkgateInterrupts, agent: Agent) -> Any:
    return bridge.start(agent.graph, {"messages": [{"role": "user", "content": "Ship it."}]}, CONFIG, "chat-1")


def test_each_tool_call_is_a_menu_and_the_agent_resumes_once_with_the_decisions(gateway: Gateway, agent: Agent) -> None:
    bridge = ParkgateInterrupts(gateway)
    first = start(bridge, agent)
    [ask] = gateway.open_asks()
    assert ask.kind is AskKind.CHOICE
    assert ask.options == (P.HITL_APPROVE, P.HITL_REJECT, P.HITL_RESPOND)  # edit does not fit a chat
    assert "send_email" in ask.prompt and "ops@example.com" in ask.prompt and "(1 of 2)" in ask.prompt
    assert ask.context is not None and ask.context["tool"] == "send_email"
    assert "1. Approve" in first.text

    one = bridge.drive(agent.graph, CONFIG, "chat-1", "1")
    assert one.reply.kind is ReplyKind.SELECTED and not one.resumed  # one decision of two
    assert agent.ran == []
    [second] = gateway.open_asks()
    assert second.options == (P.HITL_APPROVE, P.HITL_REJECT)
    assert "delete_file" in second.prompt and "Deleting is forever." in second.prompt
    assert "/tmp/report.txt" in second.prompt

    rejected = bridge.drive(agent.graph, CONFIG, "chat-1", "reject")
    assert rejected.reply.kind is ReplyKind.SELECTED and not rejected.resumed  # asked why next
    [why] = gateway.open_asks()
    assert why.kind is AskKind.TEXT and why.prompt == P.HITL_REASON_PROMPT.format(tool="delete_file", none="-")
    two = bridge.drive(agent.graph, CONFIG, "chat-1", "-")  # no reason
    assert two.resumed and two.finished
    assert agent.ran == ["send_email ops@example.com"]  # the approved call ran, the rejected did not
    results = {message.name: message for message in agent.tool_messages()}
    assert results["send_email"].content == "sent to ops@example.com"
    assert results["delete_file"].status == "error" and "rejected" in str(results["delete_file"].content)
    assert agent.graph.get_state(CONFIG).next == ()
    assert gateway.open_asks() == []
    run = gateway.run("agent-1")
    assert run is not None and (run.status, run.outcome) == ("complete", "done")


def test_respond_asks_for_the_text_that_stands_in_for_the_tool(gateway: Gateway, agent: Agent) -> None:
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


def test_a_cancel_rejects_every_tool_call_saying_it_was_cancelled(gateway: Gateway, agent: Agent) -> None:
    bridge = ParkgateInterrupts(gateway)
    start(bridge, agent)
    bridge.drive(agent.graph, CONFIG, "chat-1", "1")  # approve the email, then drop the menu
    step = bridge.drive(agent.graph, CONFIG, "chat-1", "/cancel")
    assert step.reply.kind is ReplyKind.CANCELLED and step.resumed and step.finished
    assert agent.ran == []  # "nothing ran": not even the call approved before the cancel
    results = agent.tool_messages()
    assert len(results) == 2
    for message in results:
        assert message.status == "error" and P.HITL_CANCELLED in str(message.content)
    assert agent.graph.get_state(CONFIG).next == ()
    run = gateway.run("agent-1")
    assert run is not None and (run.status, run.outcome) == ("complete", "cancelled")


def test_an_expiry_rejects_every_tool_call_saying_it_expired(
    gateway: Gateway, agent: Agent, clock: ManualClock
) -> None:
    bridge = ParkgateInterrupts(gateway)
    start(bridge, agent)
    clock.advance(timedelta(hours=6, seconds=1))
    assert gateway.read_due() == 1  # the due read closes it; the watcher's pass resumes the agent
    assert bridge.follow_up(agent.graph) == 1
    assert agent.ran == []
    for message in agent.tool_messages():
        assert message.status == "error" and P.HITL_EXPIRED in str(message.content)
    assert agent.graph.get_state(CONFIG).next == ()
    run = gateway.run("agent-1")
    assert run is not None and (run.status, run.outcome) == ("complete", "expired")


def strict_agent(saver: Any, allowed: dict[str, list[str]]) -> tuple[Any, list[str]]:
    """An agent whose model asks to delete a file (and send an email), each tool allowing
    only the decisions in ``allowed``."""
    ran: list[str] = []

    @tool
    def delete_file(path: str) -> str:
        """Delete a file."""
        ran.append(f"delete_file {path}")
        return f"deleted {path}"

    @tool
    def send_email(to: str) -> str:
        """Send an email."""
        ran.append(f"send_email {to}")
        return f"sent to {to}"

    calls = [{"name": "delete_file", "args": {"path": "/tmp/report.txt"}, "id": "call-1"}]
    if "send_email" in allowed:
        calls.append({"name": "send_email", "args": {"to": "ops@example.com"}, "id": "call-2"})
    model = scripted_model(calls)
    interrupt_on: dict[str, Any] = {name: {"allowed_decisions": decisions} for name, decisions in allowed.items()}
    review = HumanInTheLoopMiddleware(interrupt_on=interrupt_on)
    tools = [delete_file, send_email]
    return create_agent(model, tools=tools, middleware=[review], checkpointer=saver, name="strict"), ran


def rejections(graph: Any) -> dict[str, ToolMessage]:
    messages = graph.get_state(CONFIG).values["messages"]
    return {str(message.name): message for message in messages if isinstance(message, ToolMessage)}


def clean_up(bridge: ParkgateInterrupts, graph: Any) -> Any:
    return bridge.start(graph, {"messages": [{"role": "user", "content": "Clean up."}]}, CONFIG, "chat-1")


def test_a_tool_that_does_not_allow_reject_is_asked_and_a_cancel_still_resumes_the_agent(
    gateway: Gateway, saver: SqliteSaver
) -> None:
    """Approve, edit and respond would run the tool or read as its success: a cancel is
    written as a reject writes it (an error tool message), and the agent runs on."""
    graph, ran = strict_agent(saver, {"delete_file": ["approve"]})
    bridge = ParkgateInterrupts(gateway)
    first = clean_up(bridge, graph)
    [ask] = gateway.open_asks()
    assert ask.options == (P.HITL_APPROVE,) and "1. Approve" in first.text
    step = bridge.drive(graph, CONFIG, "chat-1", "/cancel")
    assert step.reply.kind is ReplyKind.CANCELLED and step.resumed and step.finished
    assert ran == []
    message = rejections(graph)["delete_file"]
    assert message.status == "error" and P.HITL_CANCELLED in str(message.content)
    assert graph.get_state(CONFIG).next == ()
    assert graph.get_state(CONFIG).values["messages"][-1].content == "Done."  # the model heard it and ran on
    run = gateway.run("agent-1")
    assert run is not None and (run.status, run.outcome) == ("complete", "cancelled")


def test_a_review_without_reject_that_expires_is_closed_by_the_watcher(
    gateway: Gateway, saver: SqliteSaver, clock: ManualClock
) -> None:
    graph, ran = strict_agent(
        saver, {"delete_file": ["approve", "edit", "respond"], "send_email": ["approve", "reject"]}
    )
    bridge = ParkgateInterrupts(gateway)
    clean_up(bridge, graph)
    assert gateway.open_asks()[0].options == (P.HITL_APPROVE, P.HITL_RESPOND)
    bridge.drive(graph, CONFIG, "chat-1", "1")  # approve the delete; the email is asked next
    clock.advance(timedelta(hours=6, seconds=1))
    assert gateway.read_due() == 1
    assert bridge.follow_up(graph) == 1
    assert ran == []  # nothing ran: not even the call approved before the expiry
    for message in rejections(graph).values():
        assert message.status == "error" and P.HITL_EXPIRED in str(message.content)
    assert set(rejections(graph)) == {"delete_file", "send_email"}
    assert graph.get_state(CONFIG).next == ()
    run = gateway.run("agent-1")
    assert run is not None and (run.status, run.outcome) == ("complete", "expired")


def test_a_tool_a_chat_cannot_decide_is_unaskable_and_its_agent_is_still_resumed(
    gateway: Gateway, saver: SqliteSaver
) -> None:
    """A tool allowing only "edit" is no question for a chat: nothing is asked, the run is
    closed, the agent resumed with the call rejected, and the error says why."""
    graph, ran = strict_agent(saver, {"delete_file": ["edit"]})
    bridge = ParkgateInterrupts(gateway)
    with pytest.raises(StoppingPointError, match="allows none of approve, reject or respond") as raised:
        clean_up(bridge, graph)
    assert any("was resumed" in note for note in raised.value.__notes__)
    assert ran == []
    assert rejections(graph)["delete_file"].status == "error"
    assert graph.get_state(CONFIG).next == ()
    assert gateway.open_asks() == [] and gateway.closed_follow_ups() == []
    run = gateway.run("agent-1")
    assert run is not None and (run.status, run.outcome) == ("complete", "unaskable")


async def test_from_asyncio_a_review_without_reject_is_closed_by_a_cancel_too(gateway: Gateway, tmp_path: Path) -> None:
    async with AsyncSqliteSaver.from_conn_string(str(tmp_path / "agent-async.db")) as saver:
        graph, ran = strict_agent(saver, {"delete_file": ["approve", "edit"]})
        bridge = ParkgateInterrupts(AsyncGateway(gateway))
        await bridge.astart(graph, {"messages": [{"role": "user", "content": "Clean up."}]}, CONFIG, "chat-1")
        step = await bridge.adrive(graph, CONFIG, "chat-1", "/cancel")
        assert step.resumed and step.finished and ran == []
        state = await graph.aget_state(CONFIG)
        assert state.next == ()
        [message] = [message for message in state.values["messages"] if isinstance(message, ToolMessage)]
        assert message.status == "error" and P.HITL_CANCELLED in str(message.content)
