"""``parkgate audit clock --table``: the write-up's query on a ``pending_asks`` table of its
shape (``id``, ``conversation_id``, ``asked_at``, ``answered_at``), on SQLite and PostgreSQL.

Names are quoted as identifiers, the caller's own SQL runs only through ``--open-where``,
and that runs in a read-only transaction: a write in it is refused and changes nothing.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import psycopg
import pytest
from click.testing import CliRunner, Result

from parkgate.cli import main

#: (id, conversation, hours since asked, answered?)
ROWS = [(1, "chat-a", 2.0, False), (2, "chat-b", 30.0, False), (3, "chat-c", 50.0, True), (4, "chat-d", 7.0, False)]
TABLE = 'pending "asks"'  # a name that only works quoted


@dataclass
class Database:
    """A database holding the table, its URL for the audit, and a way to count its rows."""

    url: str
    count: Callable[[], int]


def _rows(stamp: Callable[[datetime], Any]) -> list[tuple[Any, ...]]:
    """The rows stamped back from the moment they are written: the audit reads the wall
    clock, so ages are measured from a time seconds before it runs (not the module's import,
    minutes earlier in a long run)."""
    now = datetime.now(UTC)
    return [
        (key, conversation, stamp(now - timedelta(hours=hours)), stamp(now) if answered else None)
        for key, conversation, hours, answered in ROWS
    ]


def _sqlite(path: Path) -> Database:
    """Timestamps as SQLite keeps them when written by hand: ``YYYY-MM-DD HH:MM:SS`` text."""
    with sqlite3.connect(path) as connection:
        connection.execute(
            f'CREATE TABLE "{TABLE.replace(chr(34), chr(34) * 2)}" '
            "(id INTEGER PRIMARY KEY, conversation_id TEXT, asked_at TEXT, answered_at TEXT)"
        )
        connection.executemany(
            f'INSERT INTO "{TABLE.replace(chr(34), chr(34) * 2)}" VALUES (?, ?, ?, ?)',
            _rows(lambda moment: moment.strftime("%Y-%m-%d %H:%M:%S")),
        )
    connection.close()

    def count() -> int:
        with sqlite3.connect(path) as reader:
            return int(reader.execute('SELECT count(*) FROM "pending ""asks"""').fetchone()[0])

    return Database(f"sqlite:///{path}", count)


def _postgres(pg_url: str, schema: str) -> Database:
    """Timestamps as ``timestamptz``; the table in the test's schema, named ``schema.table``."""
    with psycopg.connect(pg_url, autocommit=True) as connection:
        connection.execute(
            f'CREATE TABLE "{schema}"."pending ""asks""" '
            "(id INTEGER PRIMARY KEY, conversation_id TEXT, asked_at TIMESTAMPTZ, answered_at TIMESTAMPTZ)"
        )
        with connection.cursor() as cursor:
            cursor.executemany(f'INSERT INTO "{schema}"."pending ""asks""" VALUES (%s, %s, %s, %s)', _rows(lambda m: m))

    def count() -> int:
        with psycopg.connect(pg_url) as reader:
            found = reader.execute(f'SELECT count(*) FROM "{schema}"."pending ""asks"""').fetchone()
            assert found is not None
            return int(found[0])

    return Database(pg_url, count)


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def database(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[Database, str]]:
    """The table on each engine, and the name the audit is given for it."""
    if request.param == "sqlite":
        yield _sqlite(tmp_path / "asks.db"), TABLE
    else:
        pg_url = request.getfixturevalue("pg_url")
        schema = request.getfixturevalue("pg_schema")
        yield _postgres(pg_url, schema), f"{schema}.{TABLE}"


def _audit(database: Database, table: str, *options: str) -> tuple[Result, list[dict[str, Any]]]:
    result = CliRunner().invoke(
        main, ["audit", "clock", "--db", database.url, "--table", table, "--asked-at", "asked_at", "--json", *options]
    )
    return result, [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]


def test_the_open_rows_oldest_first_and_exit_1_past_the_bound(database: tuple[Database, str]) -> None:
    db, table = database
    result, rows = _audit(db, table, "--answered-at", "answered_at", "--older-than", "6h")
    assert result.exit_code == 1, result.output
    assert [(row["id"], row["conversation_id"]) for row in rows] == [("2", "chat-b"), ("4", "chat-d"), ("1", "chat-a")]
    for row, hours in zip(rows, [30.0, 7.0, 2.0], strict=True):
        assert abs(row["hours_open"] - hours) < 0.1
    assert [row["overdue"] for row in rows] == [True, True, False]
    assert "3 parked" in result.stderr and "2 older than 6h" in result.stderr


def test_open_where_and_show_pick_rows_and_columns(database: tuple[Database, str]) -> None:
    db, table = database
    result, rows = _audit(db, table, "--open-where", "answered_at IS NULL AND id <> 4", "--show", "conversation_id")
    assert result.exit_code == 0, result.output  # no bound: nothing is too old
    assert rows and all(set(row) == {"conversation_id", "asked_at", "hours_open", "overdue"} for row in rows)
    assert [row["conversation_id"] for row in rows] == ["chat-b", "chat-a"]


def test_a_write_in_open_where_is_refused_and_changes_nothing(database: tuple[Database, str]) -> None:
    db, table = database
    quoted = ".".join('"' + part.replace('"', '""') + '"' for part in table.split("."))
    result, _ = _audit(db, table, "--open-where", f"1 = 1); DELETE FROM {quoted}; SELECT (1")
    assert result.exit_code == 1 and "query failed" in result.output and "Traceback" not in result.output
    assert db.count() == len(ROWS)


def test_a_column_that_does_not_exist_is_one_error_line(database: tuple[Database, str]) -> None:
    db, table = database
    result, _ = _audit(db, table, "--answered-at", "closed_at")
    assert result.exit_code == 1 and result.output.startswith("Error: ") and "closed_at" in result.output


@pytest.mark.parametrize(
    ("options", "said"),
    [
        (["--table", "t", "--asked-at", "a", "--db", "x.db"], "one of --answered-at"),
        (["--table", "t", "--answered-at", "b", "--db", "x.db"], "--asked-at"),
        (["--langgraph", "x.db", "--table", "t"], "one of --langgraph"),
        (["--langgraph", "x.db", "--db", "y.db"], "go with --table"),
        ([], "one of --langgraph"),
    ],
)
def test_option_mistakes_are_usage_errors(options: list[str], said: str) -> None:
    result = CliRunner().invoke(main, ["audit", "clock", *options])
    assert result.exit_code == 2 and said in result.output
