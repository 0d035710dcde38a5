"""``parkgate audit clock`` against databases built to hang it, flood it or crash it.

A few kilobytes of SQLite define a view that never ends or one of many rows; PostgreSQL
does the same with a recursive view, and hands back JSON nested past what Python parses.
The audit stops each with one ``Error:`` line and exit 1: a query past ``--timeout``
(small here, so the tests stay short), a query returning more than ``--max-rows`` rows,
a value it cannot read. Values that are no timestamps at all are one error line too.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from click.testing import CliRunner, Result

from parkgate.cli import main

#: A view whose recursion never stops, with the columns the audit asks for.
ENDLESS = (
    "CREATE VIEW {name} AS WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) "
    "SELECT i AS id, {stamp} AS asked_at, NULL AS answered_at FROM n"
)
#: A view of ``{rows}`` rows, each with a different asked_at, so the sort must see them all.
MANY = (
    "CREATE VIEW {name} AS WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < {rows}) "
    "SELECT i AS id, 1700000000 + i AS asked_at, NULL AS answered_at FROM n"
)


def _clock(db: str, table: str, *options: str) -> Result:
    """The audit of ``table``'s open rows: ``--answered-at answered_at`` unless ``--open-where`` is given."""
    opened = [] if "--open-where" in options else ["--answered-at", "answered_at"]
    return CliRunner().invoke(
        main, ["audit", "clock", "--db", db, "--table", table, "--asked-at", "asked_at", *opened, "--json", *options]
    )


def _stopped(result: Result, said: str) -> None:
    """The audit ended with one error line saying ``said``: no hang, no traceback."""
    assert result.exit_code == 1, result.output
    assert result.output.startswith("Error: ") and said in result.output, result.output
    assert result.output.count("\n") == 1


@pytest.fixture
def sqlite_views(tmp_path: Path) -> Iterator[Path]:
    """A small SQLite file holding an endless view and a view of 300,000 rows."""
    path = tmp_path / "views.db"
    with sqlite3.connect(path) as connection:
        connection.execute(ENDLESS.format(name="endless", stamp="'2026-01-01 00:00:00'"))
        connection.execute(MANY.format(name="many", rows=300_000))
    connection.close()
    assert path.stat().st_size <= 8192
    yield path


def test_an_endless_sqlite_view_is_stopped_at_the_timeout(sqlite_views: Path) -> None:
    _stopped(_clock(f"sqlite:///{sqlite_views}", "endless", "--timeout", "0.5"), "ran past the 0.5 s time limit")


def test_a_sqlite_view_of_many_rows_is_stopped_at_the_row_limit(sqlite_views: Path) -> None:
    _stopped(_clock(f"sqlite:///{sqlite_views}", "many", "--max-rows", "100"), "more than 100 rows (--max-rows)")


def test_within_the_row_limit_every_row_is_listed(sqlite_views: Path) -> None:
    result = _clock(f"sqlite:///{sqlite_views}", "many", "--open-where", "id <= 100", "--max-rows", "100")
    assert result.exit_code == 0, result.output
    assert len(result.stdout.splitlines()) == 100


def test_open_where_cannot_lift_the_row_limit(sqlite_views: Path) -> None:
    """SQL of the caller's that comments out the query's ``LIMIT`` still reads no more."""
    result = _clock(f"sqlite:///{sqlite_views}", "many", "--open-where", "1 = 1) --", "--max-rows", "100")
    _stopped(result, "more than 100 rows")


@pytest.mark.parametrize(
    ("stamp", "said"),
    [
        ("1e300", "is not a time in seconds since the epoch"),
        ("-1e18", "is not a time in seconds since the epoch"),
        ("'9999-12-31T23:59:59-05:00'", "is out of range in UTC"),
        ("x'00ff'", "holds bytes, not a timestamp"),
    ],
)
def test_a_value_that_is_no_timestamp_is_one_error_line(tmp_path: Path, stamp: str, said: str) -> None:
    path = tmp_path / "stamps.db"
    with sqlite3.connect(path) as connection:
        connection.execute(f"CREATE VIEW asks AS SELECT 1 AS id, {stamp} AS asked_at, NULL AS answered_at")
    connection.close()
    _stopped(_clock(str(path), "asks"), said)


def test_an_endless_checkpointer_view_is_stopped_at_the_timeout(tmp_path: Path) -> None:
    """``--langgraph`` reads through the same bounds: ``writes`` here is a view that never ends."""
    path = tmp_path / "checkpoints.db"
    with sqlite3.connect(path) as connection:
        connection.execute(
            "CREATE TABLE checkpoints (thread_id TEXT, checkpoint_ns TEXT, checkpoint_id TEXT, type TEXT, checkpoint)"
        )
        connection.execute("INSERT INTO checkpoints VALUES ('t', '', '1', 'msgpack', x'80')")
        connection.execute(
            "CREATE VIEW writes AS WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) "
            "SELECT 't' AS thread_id, '' AS checkpoint_ns, '1' AS checkpoint_id, 'task' AS task_id, i AS idx, "
            "'__interrupt__' AS channel, 'msgpack' AS type, x'90' AS value FROM n"
        )
    connection.close()
    result = CliRunner().invoke(main, ["audit", "clock", "--langgraph", str(path), "--timeout", "0.5"])
    _stopped(result, "ran past the 0.5 s time limit")


def test_a_checkpointer_with_more_writes_than_the_row_limit_is_stopped(tmp_path: Path) -> None:
    path = tmp_path / "checkpoints.db"
    with sqlite3.connect(path) as connection:
        connection.execute(
            "CREATE TABLE checkpoints (thread_id TEXT, checkpoint_ns TEXT, checkpoint_id TEXT, type TEXT, checkpoint)"
        )
        connection.execute("INSERT INTO checkpoints VALUES ('t', '', '1', 'msgpack', x'80')")
        connection.execute(
            "CREATE VIEW writes AS WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 5000) "
            "SELECT 't' AS thread_id, '' AS checkpoint_ns, '1' AS checkpoint_id, 'task' || i AS task_id, 0 AS idx, "
            "'__interrupt__' AS channel, 'msgpack' AS type, x'90' AS value FROM n"
        )
    connection.close()
    result = CliRunner().invoke(main, ["audit", "clock", "--langgraph", str(path), "--max-rows", "50"])
    _stopped(result, "more than 50 rows (--max-rows)")


def test_the_help_names_the_defaults() -> None:
    shown = CliRunner().invoke(main, ["audit", "clock", "--help"]).output
    assert "--timeout" in shown and "30" in shown and "--max-rows" in shown and "10000" in shown


def test_an_endless_postgres_view_is_stopped_at_the_timeout(pg_url: str, pg_schema: str) -> None:
    with psycopg.connect(pg_url, autocommit=True) as connection:
        connection.execute(
            ENDLESS.format(name=f'"{pg_schema}".endless', stamp="now() - i * interval '1 second'").replace(
                "NULL AS answered_at", "NULL::timestamptz AS answered_at"
            )
        )
    _stopped(_clock(pg_url, f"{pg_schema}.endless", "--timeout", "0.5"), "ran past the 0.5 s time limit")


def test_a_postgres_view_of_many_rows_is_stopped_at_the_row_limit(pg_url: str, pg_schema: str) -> None:
    with psycopg.connect(pg_url, autocommit=True) as connection:
        connection.execute(
            MANY.format(name=f'"{pg_schema}".many', rows=100_000).replace(
                "1700000000 + i AS asked_at, NULL AS", "to_timestamp(1700000000 + i) AS asked_at, NULL::timestamptz AS"
            )
        )
    _stopped(_clock(pg_url, f"{pg_schema}.many", "--max-rows", "100"), "more than 100 rows (--max-rows)")


def test_postgres_json_nested_past_what_python_parses_is_one_error_line(pg_url: str, pg_schema: str) -> None:
    with psycopg.connect(pg_url, autocommit=True) as connection:
        connection.execute(
            f"CREATE VIEW \"{pg_schema}\".deep AS SELECT (repeat('[', 5000) || repeat(']', 5000))::jsonb AS payload, "
            "now() AS asked_at, NULL::timestamptz AS answered_at"
        )
    _stopped(_clock(pg_url, f"{pg_schema}.deep"), "nested too deeply to read")
