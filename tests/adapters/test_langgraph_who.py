"""Who may answer, through LangGraph and LangChain's ``HumanInTheLoopMiddleware``.

A payload names its ``responders`` (and ``quorum``); the bridge's ``drive`` passes each
message's ``sender``; a middleware review is asked per tool with its own TTL and
responders (:class:`ToolReview`); a reject asks for the reason the agent is told and
records who rejected it; the arguments are shown once, as JSON; and an application
that streams the graph itself hands the interrupted thread over with ``park``.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any, TypedDict

import pytest
from hitl_agent import Agent
from langchain_core.messages import AIMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import interrupt

from parkgate import AskStatus, Gateway, InputError, ManualClock, ReplyKind, StoppingPointError
from parkgate.adapters.langgraph import ApprovedBy, Closed, ParkgateInterrupts, ToolReview
from parkgate.core import phrases as P
from parkgate.core.kinds import AskKind

CONFIG: RunnableConfig = {"configurable": {"thread_id": "who-1"}}
TEAM = ["U_ALICE", "U_BOB", "U_CAROL"]


@pytest.fixture
def saver(tmp_path: Path) -> Iterator[SqliteSaver]:
    conn = sqlite3.connect(tmp_path / "who.db", check_same_thread=False)
    yield SqliteSaver(conn)
    conn.close()


class State(TypedDict, total=False):
    choice: Any


def approval_graph(saver: SqliteSaver, **payload: Any) -> Any:
    def decide(state: State) -> State:
        return {"choice": interrupt({"prompt": "Deploy build 42?", "options": ["Deploy", "Hold"], **payload})}

    builder = StateGraph(State)
    builder.add_node("decide", decide)
    builder.add_edge(START, "decide")
    builder.add_edge("decide", END)
    return builder.compile(checkpointer=saver, name="deploys")


def test_a_payloads_responders_answer_and_a_quorum_takes_their_votes(gateway: Gateway, saver: SqliteSaver) -> None:
    graph = approval_graph(saver, responders=TEAM, quorum=2)
    bridge = ParkgateInterrupts(gateway)
    bridge.start(graph, {}, CONFIG, "ops")
    [ask] = gateway.open_asks()
    assert (ask.responders, ask.quorum) == (tuple(TEAM), 2)

    for sender, kind in (("U_MALLORY", ReplyKind.NOT_YOURS), (None, ReplyKind.NOT_YOURS), ("U_ALICE", ReplyKind.VOTED)):
        step = bridge.drive(graph, CONFIG, "ops", "1", sender=sender)
        assert step.reply.kind is kind and not step.resumed
    assert graph.get_state(CONFIG).next == ("decide",)  # still waiting
    done = bridge.drive(graph, CONFIG, "ops", "1", sender="U_CAROL")
    assert done.resumed and done.finished and done.output["choice"] == "Deploy"
    closed = gateway.get(ask.id)
    assert (closed.answered_by, [vote.sender for vote in closed.votes]) == ("U_CAROL", ["U_ALICE", "U_CAROL"])


def test_a_responders_cancel_resumes_the_node_with_closed(gateway: Gateway, saver: SqliteSaver) -> None:
    graph = approval_graph(saver, responders=["U_ALICE"])
    bridge = ParkgateInterrupts(gateway)
    bridge.start(graph, {}, CONFIG, "ops")
    assert bridge.drive(graph, CONFIG, "ops", "/cancel", sender="U_BOB").reply.kind is ReplyKind.NOT_YOURS
    step = bridge.drive(graph, CONFIG, "ops", "/cancel", sender="U_ALICE")
    assert step.resumed and isinstance(step.output["choice"], Closed) and step.output["choice"].outcome == "cancelled"
    assert gateway.get(step.reply.ask_id or "").closed_by == "U_ALICE"


@pytest.mark.parametrize(
    "payload, says",
    [
        ({"responders": []}, "responders is empty"),
        ({"responders": ["U_A", "U_A"]}, "twice"),
        ({"responders": ["U_A"], "quorum": 2}, "quorum of 2"),
        ({"quorum": 2}, "quorum needs responders"),
    ],
)
def test_a_payload_with_bad_responders_is_unaskable(
    gateway: Gateway, saver: SqliteSaver, payload: dict[str, Any], says: str
) -> None:
    graph = approval_graph(saver, **payload)
    with pytest.raises(StoppingPointError, match=says):
        ParkgateInterrupts(gateway).start(graph, {}, CONFIG, "ops")
    assert gateway.open_asks() == []


# -- LangChain's HumanInTheLoopMiddleware --------------------------------------------------
def start_agent(bridge: ParkgateInterrupts, agent: Agent) -> Any:
    return bridge.start(agent.graph, {"messages": [{"role": "user", "content": "Ship it."}]}, agent.config, "chat-1")


def test_each_tool_is_reviewed_with_its_own_ttl_responders_and_quorum(gateway: Gateway, saver: SqliteSaver) -> None:
    agent = Agent(saver, CONFIG)
    review = ToolReview(ttl=timedelta(minutes=5), responders=TEAM, quorum=2)
    bridge = ParkgateInterrupts(gateway, ttl=timedelta(hours=2), tools={"delete_file": review})
    start_agent(bridge, agent)
    [email] = gateway.open_asks()
    assert (email.responders, email.ttl_seconds) == ((), 7200)  # no review of its own: the bridge's
    bridge.drive(agent.graph, CONFIG, "chat-1", "1")

    [deletion] = gateway.open_asks()
    assert (deletion.responders, deletion.quorum, deletion.ttl_seconds) == (tuple(TEAM), 2, 300)
    assert bridge.drive(agent.graph, CONFIG, "chat-1", "2", sender="U_MALLORY").reply.kind is ReplyKind.NOT_YOURS
    assert bridge.drive(agent.graph, CONFIG, "chat-1", "2", sender="U_ALICE").reply.kind is ReplyKind.VOTED
    assert bridge.drive(agent.graph, CONFIG, "chat-1", "2", sender="U_BOB").reply.kind is ReplyKind.SELECTED

    [why] = gateway.open_asks()  # the reason: for the same responders, one answer
    assert (why.kind, why.responders, why.quorum, why.ttl_seconds) == (AskKind.TEXT, tuple(TEAM), 1, 300)
    assert bridge.drive(agent.graph, CONFIG, "chat-1", "no", sender="U_MALLORY").reply.kind is ReplyKind.NOT_YOURS
    done = bridge.drive(agent.graph, CONFIG, "chat-1", "The auditors need it.", sender="U_CAROL")
    assert done.resumed and done.finished
    assert agent.ran == ["send_email ops@example.com"]
    results = {message.name: message for message in agent.tool_messages()}
    assert results["delete_file"].status == "error"
    assert results["delete_file"].content == (
        "User rejected the tool call for `delete_file` with reason: The auditors need it. (rejected by U_BOB)"
    )


def test_a_reject_without_a_reason_still_says_who_rejected(gateway: Gateway, saver: SqliteSaver) -> None:
    agent = Agent(saver, CONFIG)
    bridge = ParkgateInterrupts(gateway)
    start_agent(bridge, agent)
    bridge.drive(agent.graph, CONFIG, "chat-1", "1", sender="U_ALICE")
    bridge.drive(agent.graph, CONFIG, "chat-1", "2", sender="U_ALICE")
    bridge.drive(agent.graph, CONFIG, "chat-1", P.HITL_NO_REASON, sender="U_ALICE")
    results = {message.name: message for message in agent.tool_messages()}
    assert results["delete_file"].content == (
        "User rejected the tool call for `delete_file` with reason: rejected by U_ALICE"
    )


def test_a_reason_nobody_gives_is_a_reject_without_one(
    gateway: Gateway, clock: ManualClock, saver: SqliteSaver
) -> None:
    agent = Agent(saver, CONFIG)
    bridge = ParkgateInterrupts(gateway, ttl=timedelta(minutes=10))
    start_agent(bridge, agent)
    bridge.drive(agent.graph, CONFIG, "chat-1", "1")
    bridge.drive(agent.graph, CONFIG, "chat-1", "2")
    [why] = gateway.open_asks()
    clock.advance(timedelta(minutes=11))
    assert gateway.open_asks() == []  # the read that finds it past its TTL closes it, with its default
    assert (gateway.get(why.id).status, gateway.get(why.id).answer) == (AskStatus.EXPIRED, P.HITL_NO_REASON)
    assert bridge.follow_up(agent.graph) == 1
    results = {message.name: message for message in agent.tool_messages()}
    assert results["send_email"].content == "sent to ops@example.com"  # the approval stands
    assert results["delete_file"].status == "error" and "with reason" not in str(results["delete_file"].content)
    assert agent.graph.get_state(CONFIG).next == ()


def test_a_bad_tool_review_is_refused_naming_the_tool(gateway: Gateway) -> None:
    with pytest.raises(InputError, match=r"delete_file.*quorum of 3"):
        ParkgateInterrupts(gateway, tools={"delete_file": ToolReview(responders=["U_A", "U_B"], quorum=3)})
    with pytest.raises(InputError, match=r"send_email.*responders"):
        ParkgateInterrupts(gateway, tools={"send_email": ToolReview(responders=[])})


def test_the_arguments_are_shown_once_as_json_with_or_without_a_description(
    gateway: Gateway, saver: SqliteSaver
) -> None:
    agent = Agent(saver, CONFIG)
    bridge = ParkgateInterrupts(gateway)
    start_agent(bridge, agent)
    [email] = gateway.open_asks()  # no description: the middleware's default shows them as Python
    shown = json.dumps({"body": "Release 1.4", "to": "ops@example.com"}, sort_keys=True)
    assert P.HITL_ARGUMENTS.format(arguments=shown) in email.prompt
    assert "{'to'" not in email.prompt and "Tool: send_email" not in email.prompt
    bridge.drive(agent.graph, CONFIG, "chat-1", "1")
    [deletion] = gateway.open_asks()  # a description of its own: the same JSON line after it
    assert (
        "Deleting is forever.\n" + P.HITL_ARGUMENTS.format(arguments='{"path": "/tmp/report.txt"}') in deletion.prompt
    )


def test_an_app_that_streams_the_agent_parks_its_thread_without_running_it_again(
    gateway: Gateway, saver: SqliteSaver
) -> None:
    agent = Agent(saver, CONFIG)
    chunks = list(agent.graph.stream({"messages": [{"role": "user", "content": "Ship it."}]}, CONFIG))
    assert any("__interrupt__" in chunk for chunk in chunks)  # the app ran it to its interrupt itself
    bridge = ParkgateInterrupts(gateway)
    parked = bridge.park(agent.graph, CONFIG, "chat-1")
    assert parked.reply.kind is ReplyKind.ASKED and "send_email" in parked.text
    again = bridge.park(agent.graph, CONFIG, "chat-1")  # handed over twice: one question
    assert again.reply.ask_id == parked.reply.ask_id and len(gateway.open_asks()) == 1

    bridge.drive(agent.graph, CONFIG, "chat-1", "1")
    done = bridge.drive(agent.graph, CONFIG, "chat-1", "1")  # approves both: the agent runs on
    assert done.resumed and done.finished
    assert sorted(agent.ran) == ["delete_file /tmp/report.txt", "send_email ops@example.com"]  # run in parallel
    messages = agent.graph.get_state(CONFIG).values["messages"]
    # The model ran twice, once before the review and once after: never again for the park.
    assert [m.content for m in messages if isinstance(m, AIMessage)] == ["", "Done."]
    assert gateway.get(parked.reply.ask_id or "").status is AskStatus.ANSWERED


def test_park_refuses_a_thread_the_graph_never_ran(gateway: Gateway, saver: SqliteSaver) -> None:
    with pytest.raises(InputError, match="no checkpoint"):
        ParkgateInterrupts(gateway).park(Agent(saver, CONFIG).graph, CONFIG, "chat-1")
    assert gateway.open_asks() == []


@pytest.mark.parametrize("mode", ["batched", "per_call"])
def test_the_result_of_an_approved_call_says_who_approved_it(gateway: Gateway, saver: SqliteSaver, mode: Any) -> None:
    agent = Agent(saver, CONFIG, mode, more=(ApprovedBy(),))
    bridge = ParkgateInterrupts(gateway)
    start_agent(bridge, agent)
    bridge.drive(agent.graph, CONFIG, "chat-1", "1", sender="U_ALICE")  # approve the email
    bridge.drive(agent.graph, CONFIG, "chat-1", "1")  # approve the deletion, with no sender
    assert bridge.follow_up(agent.graph) == 0 and agent.graph.get_state(CONFIG).next == ()
    results = {message.name: message for message in agent.tool_messages()}
    assert results["send_email"].content == "sent to ops@example.com"
    assert results["send_email"].response_metadata["approved_by"] == "U_ALICE"
    assert "approved_by" not in results["delete_file"].response_metadata  # nobody named: nothing claimed


def test_without_approved_by_the_tools_results_are_as_the_tools_return_them(
    gateway: Gateway, saver: SqliteSaver
) -> None:
    agent = Agent(saver, CONFIG)
    bridge = ParkgateInterrupts(gateway)
    start_agent(bridge, agent)
    bridge.drive(agent.graph, CONFIG, "chat-1", "1", sender="U_ALICE")
    bridge.drive(agent.graph, CONFIG, "chat-1", "1", sender="U_ALICE")
    results = {message.name: message for message in agent.tool_messages()}
    assert all("approved_by" not in message.response_metadata for message in results.values())
