"""``parkgate audit clock --langgraph``: a real graph stopped in ``interrupt()``, audited.

Four threads run one graph that asks twice: one waits at its first question (aged 30
hours), one was answered once and waits at its second (aged 8 hours), one was answered
twice and finished, one waits since just now. The audit lists exactly the three that
wait, oldest first, with their questions, and exits 1 past ``--older-than``. Timestamps
are moved back by writing each waiting thread's latest checkpoint again, through the
saver, with an older ``ts``.

On PostgreSQL the same graph's checkpoints are written into ``PostgresSaver``'s tables
(``checkpoints`` with a JSONB checkpoint, ``checkpoint_writes``): the
``langgraph-checkpoint-postgres`` package is not installed here, so its layout is set
up by :func:`postgres_saver_tables` and filled from the SQLite saver's own tuples.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, TypedDict

import psycopg
import pytest
from click.testing import CliRunner, Result
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import WRITES_IDX_MAP
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, interrupt
from psycopg.types.json import Jsonb

from parkgate.cli import main

#: thread -> (answers given, hours to age its latest checkpoint by)
THREADS = {"waits-first": (0, 30.0), "waits-second": (1, 8.0), "finished": (2, 40.0), "waits-fresh": (0, 0.0)}
WAITING = ["waits-first", "waits-second", "waits-fresh"]


class State(TypedDict, total=False):
    target: str
    approved: str


def _graph(saver: Any) -> Any:
    """Two questions in two nodes, each an ``interrupt()``."""

    def pick_target(state: State) -> dict[str, Any]:
        return {"target": interrupt({"question": "Which target?", "options": ["staging", "prod"]})}

    def approve(state: State) -> dict[str, Any]:
        return {"approved": interrupt({"question": f"Deploy to {state['target']}?", "options": ["Yes", "No"]})}

    builder = StateGraph(State)
    builder.add_node("pick_target", pick_target)
    builder.add_node("approve", approve)
    builder.add_edge(START, "pick_target")
    builder.add_edge("pick_target", "approve")
    builder.add_edge("approve", END)
    return builder.compile(checkpointer=saver)


def _config(thread_id: str) -> RunnableConfig:
    return {"configurable": {"thread_id": thread_id}}


def _age(saver: SqliteSaver, thread_id: str, hours: float) -> None:
    """Write the thread's latest checkpoint again with its ``ts`` ``hours`` earlier."""
    latest = saver.get_tuple(_config(thread_id))
    assert latest is not None and latest.parent_config is not None
    checkpoint = dict(latest.checkpoint)
    checkpoint["ts"] = (datetime.fromisoformat(checkpoint["ts"]) - timedelta(hours=hours)).isoformat()
    saver.put(latest.parent_config, checkpoint, latest.metadata, {})  # type: ignore[arg-type]


@pytest.fixture
def checkpoints(tmp_path: Path) -> Iterator[Path]:
    """A SqliteSaver file holding the four threads (the connection closed before the audit)."""
    path = tmp_path / "checkpoints.db"
    connection = sqlite3.connect(path, check_same_thread=False)
    saver = SqliteSaver(connection)
    graph = _graph(saver)
    for thread_id, (answers, hours) in THREADS.items():
        result = graph.invoke({}, _config(thread_id))
        for answer in ["staging", "Yes"][:answers]:
            result = graph.invoke(Command(resume=answer), _config(thread_id))
        assert ("__interrupt__" in result) == (thread_id in WAITING)
        if hours:
            _age(saver, thread_id, hours)
    connection.close()
    yield path


def _audit(url: str, *options: str) -> tuple[Result, list[dict[str, Any]]]:
    result = CliRunner().invoke(main, ["audit", "clock", "--langgraph", url, "--json", *options])
    rows = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    return result, rows


def _check_rows(rows: list[dict[str, Any]]) -> None:
    """The three waiting threads, oldest first, each with its own question and its age."""
    assert [row["thread_id"] for row in rows] == WAITING
    assert [json.loads(row["interrupt"])["question"] for row in rows] == [
        "Which target?",
        "Deploy to staging?",
        "Which target?",
    ]
    for row, hours in zip(rows, [30.0, 8.0, 0.0], strict=True):
        assert hours <= row["hours_open"] < hours + 0.1


def test_the_clock_lists_exactly_the_interrupted_threads_and_exits_1_past_the_bound(checkpoints: Path) -> None:
    before = hashlib.sha256(checkpoints.read_bytes()).hexdigest()
    result, rows = _audit(f"sqlite:///{checkpoints}", "--older-than", "6h")
    assert result.exit_code == 1, result.output
    _check_rows(rows)
    assert [row["overdue"] for row in rows] == [True, True, False]
    assert "3 parked" in result.stderr and "2 older than 6h" in result.stderr and "oldest 30.0" in result.stderr
    assert hashlib.sha256(checkpoints.read_bytes()).hexdigest() == before  # read, never written


def test_the_clock_exits_0_when_every_interrupt_is_within_the_bound(checkpoints: Path) -> None:
    result, rows = _audit(str(checkpoints), "--older-than", "2d")
    assert result.exit_code == 0, result.output
    assert [row["overdue"] for row in rows] == [False, False, False]


def test_the_clock_prints_a_table_with_the_summary(checkpoints: Path) -> None:
    result = CliRunner().invoke(
        main, ["audit", "clock", "--langgraph", f"sqlite:///{checkpoints}", "--older-than", "1d"]
    )
    assert result.exit_code == 1, result.output
    assert "waits-first" in result.stdout and "Which target?" in result.stdout and "too old" in result.stdout
    assert "finished" not in result.stdout
    assert "3 parked" in result.stdout and "1 older than 1d" in result.stdout


def test_the_clock_on_a_file_that_is_not_a_checkpointer_names_why(tmp_path: Path) -> None:
    missing = CliRunner().invoke(main, ["audit", "clock", "--langgraph", f"sqlite:///{tmp_path / 'none.db'}"])
    assert missing.exit_code == 1 and "no SQLite database at" in missing.output
    other = tmp_path / "other.db"
    sqlite3.connect(other).execute("CREATE TABLE t (x)").connection.commit()
    result = CliRunner().invoke(main, ["audit", "clock", "--langgraph", f"sqlite:///{other}"])
    assert result.exit_code == 1 and "not a LangGraph checkpointer's tables" in result.output
    assert "Traceback" not in result.output


def test_an_interrupt_inside_a_subgraph_is_listed_once(tmp_path: Path) -> None:
    def ask(state: State) -> dict[str, Any]:
        return {"approved": interrupt("inner question")}

    inner = StateGraph(State)
    inner.add_node("ask", ask)
    inner.add_edge(START, "ask")
    inner.add_edge("ask", END)
    outer = StateGraph(State)
    outer.add_node("review", inner.compile())
    outer.add_edge(START, "review")
    outer.add_edge("review", END)
    connection = sqlite3.connect(tmp_path / "sub.db", check_same_thread=False)
    outer.compile(checkpointer=SqliteSaver(connection)).invoke({}, _config("nested"))
    connection.close()
    result, rows = _audit(str(tmp_path / "sub.db"))
    assert result.exit_code == 0, result.output
    assert [(row["thread_id"], row["interrupt"]) for row in rows] == [("nested", "inner question")]


def test_an_unreachable_postgres_is_one_error_line() -> None:
    result = CliRunner().invoke(main, ["audit", "clock", "--langgraph", "postgresql://audit:s3cret@127.0.0.1:9/x"])
    assert result.exit_code == 1 and result.output.startswith("Error: cannot reach the PostgreSQL database")
    assert "s3cret" not in result.output and "Traceback" not in result.output


def schema_url(pg_url: str, schema: str) -> str:
    """``pg_url`` with its connections' search_path set to ``schema``."""
    return f"{pg_url}{'&' if '?' in pg_url else '?'}options=-csearch_path%3D{schema}"


def postgres_saver_tables(connection: psycopg.Connection[Any]) -> None:
    """The tables ``PostgresSaver`` reads and writes, with its column names and types."""
    connection.execute(
        "CREATE TABLE checkpoints (thread_id TEXT NOT NULL, checkpoint_ns TEXT NOT NULL DEFAULT '', "
        "checkpoint_id TEXT NOT NULL, parent_checkpoint_id TEXT, type TEXT, checkpoint JSONB NOT NULL, "
        "metadata JSONB NOT NULL DEFAULT '{}', PRIMARY KEY (thread_id, checkpoint_ns, checkpoint_id))"
    )
    connection.execute(
        "CREATE TABLE checkpoint_writes (thread_id TEXT NOT NULL, checkpoint_ns TEXT NOT NULL DEFAULT '', "
        "checkpoint_id TEXT NOT NULL, task_id TEXT NOT NULL, task_path TEXT NOT NULL DEFAULT '', "
        "idx INTEGER NOT NULL, channel TEXT NOT NULL, type TEXT, blob BYTEA NOT NULL, "
        "PRIMARY KEY (thread_id, checkpoint_ns, checkpoint_id, task_id, idx))"
    )


def _copy_to_postgres(path: Path, connection: psycopg.Connection[Any]) -> None:
    """Every checkpoint and pending write of the SQLite saver, as ``PostgresSaver`` stores them."""
    saver = SqliteSaver(sqlite3.connect(path, check_same_thread=False))
    for thread_id in THREADS:
        for saved in saver.list(_config(thread_id)):
            ids = saved.config["configurable"]
            parent = (saved.parent_config or {}).get("configurable", {}).get("checkpoint_id")
            stored = {key: value for key, value in saved.checkpoint.items() if key != "channel_values"}
            connection.execute(
                "INSERT INTO checkpoints (thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id, "
                "checkpoint, metadata) VALUES (%s, %s, %s, %s, %s, %s)",
                (thread_id, ids["checkpoint_ns"], ids["checkpoint_id"], parent, Jsonb(stored), Jsonb(saved.metadata)),
            )
            for position, (task_id, channel, value) in enumerate(saved.pending_writes or []):
                kind, blob = saver.serde.dumps_typed(value)
                connection.execute(
                    "INSERT INTO checkpoint_writes (thread_id, checkpoint_ns, checkpoint_id, task_id, idx, "
                    "channel, type, blob) VALUES (%s, %s, %s, %s, %s, %s, %s, %s)",
                    (thread_id, ids["checkpoint_ns"], ids["checkpoint_id"], task_id,
                     WRITES_IDX_MAP.get(channel, position), channel, kind, blob),
                )  # fmt: skip
    saver.conn.close()


def test_the_clock_reads_postgres_saver_tables_read_only(checkpoints: Path, pg_url: str, pg_schema: str) -> None:
    with psycopg.connect(schema_url(pg_url, pg_schema), autocommit=True) as connection:
        postgres_saver_tables(connection)
        _copy_to_postgres(checkpoints, connection)
        result, rows = _audit(schema_url(pg_url, pg_schema), "--older-than", "6h")
        assert result.exit_code == 1, result.output
        _check_rows(rows)
        counts = connection.execute(
            "SELECT (SELECT count(*) FROM checkpoints), (SELECT count(*) FROM checkpoint_writes)"
        ).fetchone()
        assert counts is not None and counts[0] > 0 and counts[1] > 0
