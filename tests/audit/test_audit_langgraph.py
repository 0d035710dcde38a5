"""``parkgate audit clock --langgraph``: a real graph stopped in ``interrupt()``, audited.

Four threads run one graph that asks twice: one waits at its first question (aged 30
hours), one was answered once and waits at its second (aged 8 hours), one was answered
twice and finished, one waits since just now. The audit lists exactly the three that
wait, oldest first, with their questions, and exits 1 past ``--older-than``. Timestamps
are moved back by writing each waiting thread's latest checkpoint again, through the
saver, with an older ``ts``.

On PostgreSQL the same graph runs on a real ``PostgresSaver`` and on a real
``ShallowPostgresSaver`` (which keeps only each thread's latest checkpoint), each set up
in the test's own schema; the audit must leave every table exactly as it found it.
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
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.postgres import PostgresSaver, ShallowPostgresSaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, interrupt
from psycopg import sql
from psycopg.rows import dict_row

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


def _run_threads(saver: BaseCheckpointSaver[Any]) -> None:
    """Run the four threads on ``saver``, answering each as :data:`THREADS` says, then age them."""
    graph = _graph(saver)
    for thread_id, (answers, hours) in THREADS.items():
        result = graph.invoke({}, _config(thread_id))
        for answer in ["staging", "Yes"][:answers]:
            result = graph.invoke(Command(resume=answer), _config(thread_id))
        assert ("__interrupt__" in result) == (thread_id in WAITING)
        if hours:
            _age(saver, thread_id, hours)


def _age(saver: BaseCheckpointSaver[Any], thread_id: str, hours: float) -> None:
    """Write the thread's latest checkpoint again with its ``ts`` ``hours`` earlier."""
    latest = saver.get_tuple(_config(thread_id))
    assert latest is not None
    checkpoint = dict(latest.checkpoint)
    checkpoint["ts"] = (datetime.fromisoformat(checkpoint["ts"]) - timedelta(hours=hours)).isoformat()
    parent = latest.parent_config or latest.config  # a shallow saver keeps no parent
    saver.put(parent, checkpoint, latest.metadata, {})  # type: ignore[arg-type]


@pytest.fixture
def checkpoints(tmp_path: Path) -> Iterator[Path]:
    """A SqliteSaver file holding the four threads (the connection closed before the audit)."""
    path = tmp_path / "checkpoints.db"
    connection = sqlite3.connect(path, check_same_thread=False)
    _run_threads(SqliteSaver(connection))
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


def _table_digest(connection: psycopg.Connection[Any]) -> dict[str, tuple[int, str | None]]:
    """Every table of the schema: its row count and a digest of all its rows."""
    listed = connection.execute("SELECT tablename FROM pg_tables WHERE schemaname = current_schema()")
    tables = [row[0] for row in listed]
    digest = {}
    for table in tables:
        row = connection.execute(
            sql.SQL("SELECT count(*), md5(string_agg(t::text, ',' ORDER BY t::text)) FROM {} t").format(
                sql.Identifier(table)
            )
        ).fetchone()
        assert row is not None
        digest[table] = (row[0], row[1])
    return digest


@pytest.mark.parametrize("saver_class", [PostgresSaver, ShallowPostgresSaver])
@pytest.mark.filterwarnings("ignore:ShallowPostgresSaver is deprecated:DeprecationWarning")
def test_the_clock_reads_a_postgres_saver_read_only(saver_class: type[Any], pg_url: str, pg_schema: str) -> None:
    url = schema_url(pg_url, pg_schema)
    with psycopg.connect(url, autocommit=True, prepare_threshold=0, row_factory=dict_row) as connection:
        saver = saver_class(connection)
        saver.setup()
        _run_threads(saver)
    with psycopg.connect(url, autocommit=True) as connection:
        before = _table_digest(connection)
        assert before["checkpoints"][0] > 0 and before["checkpoint_writes"][0] > 0
        result, rows = _audit(url, "--older-than", "6h")
        assert result.exit_code == 1, result.output
        _check_rows(rows)
        assert [row["overdue"] for row in rows] == [True, True, False]
        assert "3 parked" in result.stderr and "2 older than 6h" in result.stderr and "oldest 30.0" in result.stderr
        assert _table_digest(connection) == before  # read, never written
