"""The LangGraph bridge on an HTTP client: a real ``parkgate serve``, a real graph with
``interrupt()``, and an agent process that starts again (a new bridge on a new client and
a new checkpointer) before the person answers."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypedDict

import pytest
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import interrupt
from live_server import Server

from parkgate import AskStatus, InputError, ReplyKind, RunStatus
from parkgate.adapters.langgraph import Closed, Graph, ParkgateInterrupts
from parkgate.client import AsyncClient, Client

CONFIG: RunnableConfig = {"configurable": {"thread_id": "thread-1"}}


class State(TypedDict, total=False):
    decision: str


def _approve(state: State) -> State:
    choice = interrupt({"prompt": "Deploy to production?", "options": ["Deploy", "Hold"]})
    return {"decision": f"not deployed ({choice.outcome})" if isinstance(choice, Closed) else choice}


def _compiled(saver: Any) -> Graph:
    builder = StateGraph(State)
    builder.add_node("approve", _approve)
    builder.add_edge(START, "approve")
    builder.add_edge("approve", END)
    return builder.compile(checkpointer=saver, name="deploys")


@contextmanager
def agent(checkpoints: Path) -> Iterator[Graph]:
    """One agent process's graph: compiled on the checkpoints file, closed at the end."""
    connection = sqlite3.connect(checkpoints, check_same_thread=False)
    try:
        yield _compiled(SqliteSaver(connection))
    finally:
        connection.close()


def test_a_graph_driven_over_http_survives_a_restart_before_the_answer(served: Server, tmp_path: Path) -> None:
    checkpoints, conversation = tmp_path / "checkpoints.db", f"c-http-{tmp_path.name}"
    with agent(checkpoints) as graph, Client(served.url) as client:
        started = ParkgateInterrupts(client).start(graph, {}, CONFIG, conversation)
    assert started.asked is not None and started.asked.parked
    assert "Deploy to production?" in started.asked.text
    ask_id = started.asked.ask_id
    assert ask_id is not None

    with agent(checkpoints) as graph, Client(served.url) as client:  # the agent started again
        bridge = ParkgateInterrupts(client)
        assert graph.get_state(CONFIG).interrupts  # still waiting on the person
        driven = bridge.drive(graph, CONFIG, conversation, "1", message_id="m-1")
        assert driven.reply.kind is ReplyKind.SELECTED
        assert driven.resumed and driven.finished
        assert graph.get_state(CONFIG).values == {"decision": "Deploy"}

        again = bridge.drive(graph, CONFIG, conversation, "1", message_id="m-1")  # redelivered
        assert again.reply.kind is ReplyKind.SELECTED and not again.resumed

        closed = client.get(ask_id)
        assert closed.status is AskStatus.ANSWERED and closed.phase == "approve"
        assert client.claim_follow_up(ask_id, 60) is False  # its follow-up is done
        run = client.run(closed.run_id)
        assert run is not None and run.status is RunStatus.COMPLETE and run.outcome == "done"
        assert client.parked(conversation) is None


def test_a_follow_up_is_claimed_by_one_client_until_it_is_done(served: Server, tmp_path: Path) -> None:
    conversation = f"c-claim-{tmp_path.name}"
    with Client(served.url) as first, Client(served.url) as second:
        asked = first.ask(conversation, "Ship?", ["Yes", "No"], follow_up=True)
        assert asked.ask_id is not None
        assert first.claim_follow_up(asked.ask_id, 60) is True
        assert second.claim_follow_up(asked.ask_id, 60) is False
        first.follow_up_done(asked.ask_id)
        assert first.claim_follow_up(asked.ask_id, 60) is False
        plain = first.ask(f"{conversation}-plain", "Ship?", ["Yes", "No"])
        assert plain.ask_id is not None
        assert first.claim_follow_up(plain.ask_id, 60) is False  # parked without follow_up


def test_an_async_client_drives_the_graph_with_the_a_methods(served: Server, tmp_path: Path) -> None:
    conversation, saver = f"c-async-{tmp_path.name}", InMemorySaver()

    async def both() -> tuple[Any, Any]:
        graph = _compiled(saver)
        async with AsyncClient(served.url) as client:
            started = await ParkgateInterrupts(client).astart(graph, {}, CONFIG, conversation)
        graph = _compiled(saver)  # a new graph, bridge and client on the same checkpoints
        async with AsyncClient(served.url) as client:
            driven = await ParkgateInterrupts(client).adrive(graph, CONFIG, conversation, "Hold")
        return started, (driven, graph.get_state(CONFIG).values)

    started, (driven, values) = asyncio.run(both())
    assert started.asked is not None and started.asked.parked
    assert driven.reply.kind is ReplyKind.SELECTED and driven.finished
    assert values == {"decision": "Hold"}


def test_an_answer_given_while_the_agent_is_down_resumes_the_thread_when_it_is_back(
    served: Server, tmp_path: Path
) -> None:
    checkpoints, conversation = tmp_path / "checkpoints.db", f"c-down-{tmp_path.name}"
    with agent(checkpoints) as graph, Client(served.url) as client:
        asked = ParkgateInterrupts(client).start(graph, {}, CONFIG, conversation).asked
    assert asked is not None and asked.ask_id is not None
    with Client(served.url) as surface:  # the person answers on a surface of its own
        assert surface.handle(conversation, "Hold").kind is ReplyKind.SELECTED

    with agent(checkpoints) as graph, Client(served.url) as client:
        assert ParkgateInterrupts(client).follow_up(graph) == 1
        assert graph.get_state(CONFIG).values == {"decision": "Hold"}
        run = client.run(asked.run_id or "")
        assert run is not None and (run.status, run.outcome) == (RunStatus.COMPLETE, "done")


def test_an_operators_cancel_is_followed_up_over_http_by_a_restarted_agent(served: Server, tmp_path: Path) -> None:
    checkpoints, conversation = tmp_path / "checkpoints.db", f"c-cancel-{tmp_path.name}"
    with agent(checkpoints) as graph, Client(served.url) as client:
        asked = ParkgateInterrupts(client).start(graph, {}, CONFIG, conversation).asked
    assert asked is not None and asked.ask_id is not None
    with Client(served.url) as operator:
        operator.cancel(asked.ask_id, outcome="abandoned")  # no message: nothing resumes the thread yet

    with agent(checkpoints) as graph, Client(served.url) as client:
        assert asked.ask_id in {ask.id for ask in client.closed_follow_ups()}
        bridge = ParkgateInterrupts(client)
        assert bridge.follow_up(graph) == 1  # the thread resumed with Closed
        assert graph.get_state(CONFIG).values == {"decision": "not deployed (cancelled)"}
        assert not graph.get_state(CONFIG).interrupts
        assert asked.ask_id not in {ask.id for ask in client.closed_follow_ups()}
        assert bridge.follow_up(graph) == 0


def _unaskable(state: State) -> State:
    choice = interrupt({"prompt": "Pick one", "options": []})  # a choice of nothing
    return {"decision": f"not deployed ({choice.outcome})" if isinstance(choice, Closed) else choice}


def test_a_first_question_that_cannot_be_asked_closes_its_thread_and_records_its_run(
    served: Server, tmp_path: Path
) -> None:
    conversation = f"c-unaskable-{tmp_path.name}"
    thread = f"t-{tmp_path.name}"  # the server is the module's: a thread id of this test's own
    config: RunnableConfig = {"configurable": {"thread_id": thread}}
    builder = StateGraph(State)
    builder.add_node("approve", _unaskable)
    builder.add_edge(START, "approve")
    builder.add_edge("approve", END)
    graph = builder.compile(checkpointer=InMemorySaver(), name="unaskable")
    with Client(served.url) as client:
        with pytest.raises(InputError, match="unaskable"):
            ParkgateInterrupts(client).start(graph, {}, config, conversation)
        assert graph.get_state(config).values == {"decision": "not deployed (unaskable)"}
        run = client.run(thread)
        assert run is not None and (run.status, run.outcome) == (RunStatus.COMPLETE, "unaskable")
        assert run.conversation_id == conversation and client.parked(conversation) is None


def test_what_needs_the_database_is_refused_with_what_to_do(served: Server, tmp_path: Path) -> None:
    with agent(tmp_path / "checkpoints.db") as graph, Client(served.url) as client:
        bridge = ParkgateInterrupts(client)
        stop = threading.Event()
        stop.set()
        with pytest.raises(InputError, match=r"docs/adapters/langgraph\.md"):
            bridge.watch(graph, stop=stop)
        with pytest.raises(InputError, match="give an AsyncClient"):
            asyncio.run(bridge.adrive(graph, CONFIG, "c-refused", "1"))
    with pytest.raises(InputError, match="not str"):
        ParkgateInterrupts("http://127.0.0.1:1")  # type: ignore[arg-type]
