"""The watcher's deliverer: ``with bridge.running(graph):`` runs a deliverer and the watcher
together (an ask nobody answers closes on time and its thread is resumed), and a watch
with no deliverer on its database says so once, on SQLite and PostgreSQL."""

from __future__ import annotations

import logging
import sqlite3
import threading
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any, TypedDict

import pytest
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import interrupt

from parkgate import Gateway, InputError, ManualClock
from parkgate.adapters.langgraph import Closed, ParkgateInterrupts
from parkgate.client import Client
from parkgate.store.signal import Change
from polling import until

CONFIG: Any = {"configurable": {"thread_id": "thread-1"}}
TTL = timedelta(minutes=10)


class State(TypedDict, total=False):
    status: str


def build(checkpointer: Any, got: list[Any]) -> Any:
    def approve(state: State) -> dict[str, Any]:
        choice = interrupt({"question": "Deploy?", "options": ["Deploy", "Hold"], "ttl_seconds": TTL.total_seconds()})
        got.append(choice)
        return {"status": choice.outcome if isinstance(choice, Closed) else choice}

    builder = StateGraph(State).add_node("approve", approve)
    return builder.add_edge(START, "approve").add_edge("approve", END).compile(checkpointer=checkpointer, name="deploy")


@pytest.fixture
def got() -> list[Any]:
    return []


@pytest.fixture
def graph(tmp_path: Path, got: list[Any]) -> Iterator[Any]:
    conn = sqlite3.connect(tmp_path / "graph.db", check_same_thread=False)
    yield build(SqliteSaver(conn), got)
    conn.close()


def _no_deliverer_warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [record.getMessage() for record in caplog.records if "with no deliverer" in record.getMessage()]


def test_running_closes_an_unanswered_ask_on_time_and_resumes_its_thread(
    gateway: Gateway, graph: Any, clock: ManualClock, got: list[Any], caplog: pytest.LogCaptureFixture
) -> None:
    bridge = ParkgateInterrupts(gateway)
    with caplog.at_level(logging.WARNING, logger="parkgate.langgraph"), bridge.running(graph):
        asked = bridge.start(graph, {}, CONFIG, "chat-1")
        until(lambda: gateway.delivering, 30, "the deliverer running")
        clock.advance(TTL + timedelta(seconds=1))
        gateway.signal.changed(Change.ANY)  # the deliverer looks again, at the moved clock
        until(lambda: graph.get_state(CONFIG).next == (), 60, "the thread resumed after the due read")
    assert got == [Closed("expired", asked.reply.ask_id or "")]
    assert graph.get_state(CONFIG).values["status"] == "expired"
    assert not gateway.delivering  # the deliverer stopped with the block
    assert not any(thread.name == "parkgate-graph-watcher" for thread in threading.enumerate())
    assert _no_deliverer_warnings(caplog) == []


def test_a_watch_with_no_deliverer_logs_one_warning_naming_the_fix(
    gateway: Gateway, graph: Any, caplog: pytest.LogCaptureFixture
) -> None:
    stop = threading.Event()
    stop.set()  # one look, then the watch ends
    with caplog.at_level(logging.WARNING, logger="parkgate.langgraph"):
        ParkgateInterrupts(gateway).watch(graph, stop=stop)
    (warning,) = _no_deliverer_warnings(caplog)
    assert "'deploy'" in warning and "bridge.running(graph)" in warning and "deliver=True" in warning


def test_a_watch_beside_a_deliverer_says_nothing(
    gateway: Gateway, graph: Any, clock: ManualClock, reopen: Any, caplog: pytest.LogCaptureFixture
) -> None:
    stop = threading.Event()
    stop.set()
    with reopen(deliver=True) as delivering, caplog.at_level(logging.WARNING, logger="parkgate.langgraph"):
        until(lambda: delivering.delivering, 30, "the other gateway's deliverer running")
        ParkgateInterrupts(delivering).watch(graph, stop=stop)
        # Another process's deliverer counts too, by its heartbeat on the shared database.
        until(lambda: _beat(gateway) is not None, 30, "the deliverer's heartbeat")
        ParkgateInterrupts(gateway).watch(graph, stop=stop)
    assert _no_deliverer_warnings(caplog) == []


def _beat(gateway: Gateway) -> Any:
    with gateway.store.transaction() as tx:
        return tx.heartbeats.last_beat()


def test_a_bridge_on_an_http_client_refuses_the_watcher_with_what_to_do_instead(graph: Any) -> None:
    stop = threading.Event()
    stop.set()
    with Client("http://127.0.0.1:9") as client:  # nothing listens: the refusal sends nothing
        bridge = ParkgateInterrupts(client)
        with pytest.raises(InputError, match=r"needs a Gateway on the database \(docs/adapters/langgraph\.md\)"):
            bridge.watch(graph, stop=stop)
        with pytest.raises(InputError, match=r"docs/adapters/langgraph\.md"), bridge.running(graph):
            pass
