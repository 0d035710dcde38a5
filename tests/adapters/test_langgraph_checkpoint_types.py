"""``Closed`` in a LangGraph checkpoint: read back as a ``Closed``, with no serde warning.

A node that asks again after a ``Closed`` is run again on the next resume, and LangGraph
then reads the first ``Closed`` back from the checkpoint's pending writes. With a saver
whose msgpack serializer keeps an allowlist (strict mode, or an explicit list), the bridge
adds parkgate's types to it (``with_allowlist``); a saver built with
``CHECKPOINT_TYPES`` in its list needs nothing more. LangGraph's serde events say whether
a type was read unregistered or blocked.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypedDict

import pytest
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.serde.event_hooks import register_serde_event_listener
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import interrupt

from parkgate import Gateway
from parkgate.adapters.langgraph import CHECKPOINT_TYPES, Closed, ParkgateInterrupts

CONFIG: RunnableConfig = {"configurable": {"thread_id": "t-1"}}


class State(TypedDict, total=False):
    status: str


@pytest.fixture
def serde_events() -> Iterator[list[dict[str, Any]]]:
    events: list[dict[str, Any]] = []
    remove = register_serde_event_listener(lambda event: events.append(dict(event)))
    yield events
    remove()


def asks_twice(saver: SqliteSaver, got: list[Any]) -> Any:
    """A node that asks again after a Closed (so it runs again, reading the first back)."""

    def approve(state: State) -> dict[str, Any]:
        first = interrupt({"question": "Deploy api?", "options": ["Deploy", "Hold"]})
        got.append(first)
        second = interrupt({"question": "Really not?", "options": ["Deploy", "Hold"]})
        got.append(second)
        return {"status": f"{type(first).__name__} then {type(second).__name__}"}

    builder = StateGraph(State)
    builder.add_node("approve", approve)
    builder.add_edge(START, "approve")
    builder.add_edge("approve", END)
    return builder.compile(checkpointer=saver, name="twice")


SAVERS: dict[str, Callable[[sqlite3.Connection], SqliteSaver]] = {
    # LangGraph's strict mode: only its own safe types, unless the bridge adds parkgate's.
    "strict": lambda conn: SqliteSaver(conn, serde=JsonPlusSerializer(allowed_msgpack_modules=None)),
    # A saver built as docs/adapters/langgraph.md shows.
    "listed": lambda conn: SqliteSaver(conn, serde=JsonPlusSerializer(allowed_msgpack_modules=CHECKPOINT_TYPES)),
}


@pytest.mark.parametrize("kind", sorted(SAVERS))
def test_closed_reads_back_as_closed_without_a_warning(
    gateway: Gateway, tmp_path: Path, serde_events: list[dict[str, Any]], kind: str
) -> None:
    conn = sqlite3.connect(tmp_path / "graph.db", check_same_thread=False)
    got: list[Any] = []
    graph = asks_twice(SAVERS[kind](conn), got)
    bridge = ParkgateInterrupts(gateway)
    bridge.start(graph, {}, CONFIG, "chat-1")
    step = bridge.drive(graph, CONFIG, "chat-1", "/cancel")
    assert step.resumed and step.finished
    assert graph.get_state(CONFIG).values["status"] == "Closed then Closed"
    assert all(isinstance(value, Closed) and value.outcome == "cancelled" for value in got)
    assert len(got) == 3  # the first Closed was read back once, from the checkpoint
    list(graph.get_state_history(CONFIG))  # every checkpoint's pending writes read back too
    assert [event for event in serde_events if "Closed" in str(event.get("name"))] == []
    conn.close()


def test_closed_is_named_by_its_public_module() -> None:
    assert (Closed.__module__, Closed.__name__) in CHECKPOINT_TYPES
    assert {("parkgate.adapters.langgraph", "Closed")} == CHECKPOINT_TYPES
