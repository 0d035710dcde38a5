"""``parkgate audit clock --langgraph`` on checkpointers someone hostile wrote to.

A real graph parks one thread in ``interrupt()`` on a real ``SqliteSaver`` and a real
``PostgresSaver``; then its ``__interrupt__`` write (and, on SQLite, its checkpoint) is
overwritten the way anyone who can write one row could: a msgpack extension naming
``os.system`` or ``subprocess.check_call`` with a command that creates a file, a pickle
that would do the same, extensions nested until a decoder that recurses crashes, and
values that are not what a saver writes. LangGraph's own decoder runs the first two
(it imports and calls what an extension names). The audit runs nothing: the file is
never created, and it exits with the thread listed and the value shown as data, or a
note where it reads nothing; never a traceback.

Each audit runs as the installed ``parkgate`` command in a process of its own, so a
decoder that crashes the interpreter is a failed test, not a lost run.
"""

from __future__ import annotations

import json
import os
import pickle
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any, TypedDict

import ormsgpack
import psycopg
import pytest
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.postgres import PostgresSaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import interrupt
from psycopg.rows import dict_row

THREAD = "hostile-thread"
#: LangGraph's extension codes: a constructor with one argument, with positional ones.
ONE_ARG, POSITIONAL = 0, 1


class State(TypedDict, total=False):
    answer: str


def _park(saver: Any) -> None:
    """Run a one-question graph on ``saver`` until it waits in ``interrupt()``."""

    def ask(state: State) -> dict[str, Any]:
        return {"answer": interrupt({"question": "Ship it?"})}

    builder = StateGraph(State)
    builder.add_node("ask", ask)
    builder.add_edge(START, "ask")
    builder.add_edge("ask", END)
    config: RunnableConfig = {"configurable": {"thread_id": THREAD}}
    assert "__interrupt__" in builder.compile(checkpointer=saver).invoke({}, config)


def _named(code: int, module: str, name: str, argument: Any) -> ormsgpack.Ext:
    """An extension as LangGraph writes one: ``(module, name, argument)``, revived by
    importing ``module`` and calling ``name``."""
    return ormsgpack.Ext(code, ormsgpack.packb([module, name, argument]))


class _Touch:
    """Unpickled, creates the file (``os.system`` with ``touch``)."""

    def __init__(self, target: Path) -> None:
        self.target = target

    def __reduce__(self) -> tuple[Any, ...]:
        return (os.system, (f"touch {self.target}",))


def _nested_extensions(levels: int = 40) -> bytes:
    """Extensions each holding 1,000 nested arrays and the next: a decoder whose hook
    decodes inside the unpacker stacks 40,000 levels of recursion and crashes."""
    packed = ormsgpack.packb(None)
    for _ in range(levels):
        packed = ormsgpack.packb(ormsgpack.Ext(2, b"\x91" * 1000 + packed))
    return packed


def _hostile_writes(target: Path) -> dict[str, tuple[str, bytes]]:
    """The ``__interrupt__`` values to plant, by name: ``(type, bytes)`` as a saver keeps them."""
    return {
        "os.system": ("msgpack", ormsgpack.packb([_named(ONE_ARG, "os", "system", f"touch {target}")])),
        "subprocess": (
            "msgpack",
            ormsgpack.packb([_named(POSITIONAL, "subprocess", "check_call", [["touch", str(target)]])]),
        ),
        "pickle": ("pickle", pickle.dumps([_Touch(target)])),
        "nested": ("msgpack", _nested_extensions()),
        "deep arrays": ("msgpack", b"\x91" * 100_000 + b"\xc0"),
        "truncated": ("msgpack", b"\xdd\xff\xff\xff\xff"),
    }


#: What the report shows as each planted value's interrupt.
SHOWN = {
    "os.system": "touch ",
    "subprocess": '[["touch", ',
    "pickle": "(not decoded: a 'pickle' value, which an audit never decodes)",
    "nested": "(not decoded: a msgpack extension 2)",
    "deep arrays": "(not decoded: malformed msgpack)",
    "truncated": "(not decoded: malformed msgpack)",
}


def _audit(url: str) -> subprocess.CompletedProcess[str]:
    """``parkgate audit clock --langgraph URL --json`` as a process of its own."""
    script = Path(sys.executable).parent / "parkgate"
    return subprocess.run(
        [str(script), "audit", "clock", "--langgraph", url, "--json"], capture_output=True, text=True, timeout=60
    )


def _check(done: subprocess.CompletedProcess[str], planted: str, target: Path) -> None:
    """Nothing ran, and the thread is listed with its value shown as data (or a note)."""
    assert not target.exists(), f"the audit ran code from the {planted} value"
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    rows = [json.loads(line) for line in done.stdout.splitlines()]
    assert [row["thread_id"] for row in rows] == [THREAD]
    assert rows[0]["interrupt"].startswith(SHOWN[planted]), rows[0]["interrupt"]
    assert "1 parked" in done.stderr


@pytest.fixture
def parked_sqlite(tmp_path: Path) -> Path:
    """A SqliteSaver file with one thread parked in ``interrupt()``."""
    path = tmp_path / "checkpoints.db"
    connection = sqlite3.connect(path, check_same_thread=False)
    _park(SqliteSaver(connection))
    connection.close()
    return path


@pytest.mark.parametrize("planted", list(SHOWN))
def test_a_planted_interrupt_on_sqlite_runs_nothing(parked_sqlite: Path, tmp_path: Path, planted: str) -> None:
    target = tmp_path / "ran"
    kind, value = _hostile_writes(target)[planted]
    with sqlite3.connect(parked_sqlite) as connection:
        changed = connection.execute(
            "UPDATE writes SET type = ?, value = ? WHERE channel = '__interrupt__'", (kind, value)
        ).rowcount
    connection.close()
    assert changed == 1
    _check(_audit(f"sqlite:///{parked_sqlite}"), planted, target)


def test_a_planted_checkpoint_on_sqlite_runs_nothing(parked_sqlite: Path, tmp_path: Path) -> None:
    """SqliteSaver keeps the checkpoint itself as msgpack too: its ``ts`` is read from it."""
    target = tmp_path / "ran"
    with sqlite3.connect(parked_sqlite) as connection:
        ((checkpoint_id, stored),) = connection.execute(
            "SELECT checkpoint_id, checkpoint FROM checkpoints ORDER BY checkpoint_id DESC LIMIT 1"
        ).fetchall()
        checkpoint = ormsgpack.unpackb(stored, ext_hook=lambda code, data: None)
        checkpoint["channel_values"] = {"answer": _named(ONE_ARG, "os", "system", f"touch {target}")}
        connection.execute(
            "UPDATE checkpoints SET checkpoint = ? WHERE checkpoint_id = ?",
            (ormsgpack.packb(checkpoint), checkpoint_id),
        )
    connection.close()
    done = _audit(f"sqlite:///{parked_sqlite}")
    assert not target.exists(), "the audit ran code from the checkpoint"
    assert done.returncode == 0, done.stderr
    assert [json.loads(line)["interrupt"] for line in done.stdout.splitlines()] == ['{"question": "Ship it?"}']


@pytest.mark.parametrize(
    ("kind", "value", "said"),
    [
        ("msgpack", 7, "(not decoded: int where bytes were expected)"),
        ("no such type", b"x", "(not decoded: a 'no such type' value, which an audit never decodes)"),
        ("json", b"[" * 100_000, "(not decoded: malformed json)"),
    ],
)
def test_values_no_saver_writes_are_notes(parked_sqlite: Path, kind: str, value: Any, said: str) -> None:
    with sqlite3.connect(parked_sqlite) as connection:
        connection.execute("UPDATE writes SET type = ?, value = ? WHERE channel = '__interrupt__'", (kind, value))
    connection.close()
    done = _audit(str(parked_sqlite))
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    assert [json.loads(line)["interrupt"] for line in done.stdout.splitlines()] == [said]


def test_a_checkpoint_whose_ts_is_unreadable_is_one_error_line(parked_sqlite: Path) -> None:
    with sqlite3.connect(parked_sqlite) as connection:
        connection.execute("UPDATE checkpoints SET type = 'pickle', checkpoint = ?", (pickle.dumps({"ts": 1}),))
    connection.close()
    done = _audit(str(parked_sqlite))
    assert done.returncode == 1 and done.stderr.startswith("Error: ") and "Traceback" not in done.stderr
    assert "thread 'hostile-thread'" in done.stderr and "checkpoint ts" in done.stderr


@pytest.mark.parametrize("planted", ["os.system", "subprocess", "pickle", "nested"])
def test_a_planted_interrupt_on_postgres_runs_nothing(
    pg_url: str, pg_schema: str, tmp_path: Path, planted: str
) -> None:
    url = f"{pg_url}{'&' if '?' in pg_url else '?'}options=-csearch_path%3D{pg_schema}"
    with psycopg.connect(url, autocommit=True, prepare_threshold=0, row_factory=dict_row) as connection:
        saver = PostgresSaver(connection)
        saver.setup()
        _park(saver)
    target = tmp_path / "ran"
    kind, value = _hostile_writes(target)[planted]
    with psycopg.connect(url, autocommit=True) as connection:
        changed = connection.execute(
            "UPDATE checkpoint_writes SET type = %s, blob = %s WHERE channel = '__interrupt__'", (kind, value)
        ).rowcount
    assert changed == 1
    _check(_audit(url), planted, target)
