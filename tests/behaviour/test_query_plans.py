"""The per-message read and the audit use the partial indexes, on both stores (issue 4).

The statements are not retyped here: the store's own :class:`SqlTransaction` runs its
reads through a recording cursor, and each recorded statement is then explained with
its parameters. The table is loaded (through the store's own insert path) with many
closed asks and a few open ones, so that a full scan would be the wrong plan.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

import psycopg
from psycopg import sql as pgsql

from parkgate.core.model import Ask
from parkgate.core.phrases import AskKind, AskStatus
from parkgate.store import Run, Store
from parkgate.store.sql import Dialect, SqlTransaction

if TYPE_CHECKING:
    from conftest import StoreLocation

ROWS = 3000
OPEN_EVERY = 10  # 10% of the asks are open
T0 = datetime(2026, 1, 1, tzinfo=UTC)


class RecordingCursor:
    """A DB-API cursor stand-in that records every statement it runs."""

    def __init__(self, cursor: Any) -> None:
        self.cursor = cursor
        self.statements: list[tuple[str, tuple[Any, ...]]] = []

    def execute(self, statement: str, params: tuple[Any, ...] = ()) -> Any:
        self.statements.append((statement, params))
        return self.cursor.execute(statement, params)

    def fetchone(self) -> Any:
        return self.cursor.fetchone()

    def fetchall(self) -> Any:
        return self.cursor.fetchall()


def _load(store: Store) -> None:
    with store.transaction() as tx:
        for n in range(ROWS):
            tx.save_run(Run(f"run-{n}", f"conv-{n}", None, "running", None, {}, None, T0, T0))
            status = AskStatus.OPEN if n % OPEN_EVERY == 0 else AskStatus.ANSWERED
            tx.insert_ask(
                Ask(
                    id=f"ask-{n}",
                    conversation_id=f"conv-{n}",
                    run_id=f"run-{n}",
                    kind=AskKind.CHOICE,
                    prompt="Deploy?",
                    options=("Yes", "No"),
                    status=status,
                    asked_at=T0 + timedelta(seconds=n),
                    last_touched=T0 + timedelta(seconds=n),
                    ttl_seconds=3600.0,
                )
            )
            tx.remember_reply(f"conv-{n}", f"msg-{n}", "{}", T0)


def _plans(location: StoreLocation) -> dict[str, str]:
    """EXPLAIN output of the store's per-message reads and its audit query, by purpose."""
    from parkgate.store import postgres, sqlite

    if location.engine == "postgres":
        assert location.schema is not None
        with psycopg.connect(location.url, autocommit=True) as conn:
            conn.execute(pgsql.SQL("SET search_path TO {}").format(pgsql.Identifier(location.schema)))
            conn.execute("ANALYZE")
            return _explain(
                conn.cursor(),
                postgres.DIALECT,
                lambda stmt, params: _pg_explain(conn, stmt, params),
                lambda cursor, _dialect: postgres.PostgresTransaction(cursor),  # remembers nothing: reads
            )
    import sqlite3

    assert location.path is not None
    conn = sqlite3.connect(location.path)
    try:
        # No ANALYZE: the store never runs one, so the plan must be right without statistics.
        return _explain(
            conn.cursor(),
            sqlite.DIALECT,
            lambda stmt, params: "\n".join(row[3] for row in conn.execute("EXPLAIN QUERY PLAN " + stmt, params)),
            SqlTransaction,
        )
    finally:
        conn.close()


def _pg_explain(conn: psycopg.Connection[Any], statement: str, params: tuple[Any, ...]) -> str:
    return "\n".join(row[0] for row in conn.execute(("EXPLAIN " + statement).encode(), params))


def _explain(
    cursor: Any, dialect: Dialect, explain: Any, transaction: Callable[[Any, Dialect], SqlTransaction]
) -> dict[str, str]:
    plans: dict[str, str] = {}
    for purpose, read in {
        "open ask of a conversation": lambda tx: tx.open_ask("conv-500"),
        "audit, oldest 100": lambda tx: tx.open_asks(100),
        "audit, all": lambda tx: tx.open_asks(),
        "redelivery check": lambda tx: tx.reply_for("conv-500", "msg-500"),
        "message read (redelivery check and open ask in one)": lambda tx: tx.message_context("conv-500", "msg-x"),
    }.items():
        recorder = RecordingCursor(cursor)
        read(transaction(recorder, dialect))
        # The read itself is the one statement that selects rows from a table (PostgreSQL
        # takes the conversation's advisory lock first, with a statement of its own).
        reads = [(stmt, params) for stmt, params in recorder.statements if " FROM " in stmt]
        assert len(reads) == 1, (purpose, recorder.statements)
        plans[purpose] = explain(*reads[0])
    return plans


def test_reads_use_their_indexes(store: Store, store_location: StoreLocation) -> None:
    _load(store)
    plans = _plans(store_location)

    per_message = plans["open ask of a conversation"]
    assert "asks_open_by_conversation" in per_message, per_message
    assert "Seq Scan" not in per_message, per_message
    assert "SCAN asks" not in per_message.replace("SCAN asks USING INDEX", ""), per_message

    for audit in ("audit, oldest 100", "audit, all"):
        plan = plans[audit]
        assert "asks_open_by_age" in plan, f"{audit}:\n{plan}"
        assert "Seq Scan" not in plan, f"{audit}:\n{plan}"

    redelivery = plans["redelivery check"]
    assert "Seq Scan" not in redelivery and "SCAN inbound_messages" not in redelivery, redelivery
    assert "inbound_messages_pkey" in redelivery or "inbound_messages USING PRIMARY KEY" in redelivery, redelivery

    # The per-message read in practice: both lookups in one statement, each on its index.
    combined = plans["message read (redelivery check and open ask in one)"]
    assert "asks_open_by_conversation" in combined, combined
    assert "inbound_messages_pkey" in combined or "inbound_messages USING PRIMARY KEY" in combined, combined
    assert "Seq Scan" not in combined, combined
    assert "SCAN asks" not in combined.replace("SCAN asks USING INDEX", ""), combined
