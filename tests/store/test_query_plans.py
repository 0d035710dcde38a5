"""The per-message read and the audit use the partial indexes, on both stores.

The statements are not retyped here: the store's own transaction classes run their
reads through a recording cursor, and each recorded statement is then explained with
its parameters. The table is loaded (through the store's own insert path) with many
closed asks and a few open ones, so that a full scan would be the wrong plan.

On PostgreSQL the one-round-trip message runs inside ``parkgate_step`` and
``parkgate_claim``, whose statements PL/pgSQL plans once per connection and keeps.
Those plans are read with ``auto_explain`` as the functions run, as generic plans, on a
small table never analysed (a new deployment's first messages) and again once it is.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

import psycopg
import pytest
from psycopg import sql as pgsql

from parkgate.core.kinds import AskKind, AskStatus
from parkgate.core.model import Ask, Run
from parkgate.store import Store
from parkgate.store.dialect import Dialect
from parkgate.store.pg_transaction import _CLAIM, _STEP
from parkgate.store.postgres import DIALECT, PostgresStore
from parkgate.store.sql import RecentOpenAsks
from parkgate.store.writes import StoredReply, Writes

if TYPE_CHECKING:
    from conftest import StoreLocation, StoreUrlFactory

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


def _load(store: Store, rows: int = ROWS, open_every: int = OPEN_EVERY) -> None:
    with store.transaction() as tx:
        for n in range(rows):
            tx.save_run(Run(f"run-{n}", f"conv-{n}", None, "running", None, {}, None, T0, T0))
            status = AskStatus.OPEN if n % open_every == 0 else AskStatus.ANSWERED
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
            tx.write(Writes(reply=StoredReply(f"conv-{n}", f"msg-{n}", "{}", T0)))
            tx.keys.record_key(f"owner-{n % 7}", f"run-{n}/approve", f"ask-{n}")


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
            lambda cursor, _dialect: _sqlite_reader(sqlite.SQLiteTransaction(cursor, RecentOpenAsks(0))),
        )
    finally:
        conn.close()


def _sqlite_reader(tx: Any) -> Any:
    """A SQLite transaction that remembers nothing and begins nothing: its reads only."""
    tx.began = True
    return tx


def _pg_explain(conn: psycopg.Connection[Any], statement: str, params: tuple[Any, ...]) -> str:
    return "\n".join(row[0] for row in conn.execute(("EXPLAIN " + statement).encode(), params))


def _explain(cursor: Any, dialect: Dialect, explain: Any, transaction: Callable[[Any, Dialect], Any]) -> dict[str, str]:
    plans: dict[str, str] = {}
    for purpose, read in {
        "open ask of a conversation": lambda tx: tx.open_ask("conv-500"),
        "audit, oldest 100": lambda tx: tx.asks.open_asks(100),
        "audit, all": lambda tx: tx.asks.open_asks(),
        "open asks of a conversation": lambda tx: tx.asks.open_asks(100, conversation_id="conv-500"),
        "an ask's key": lambda tx: tx.keys.ask_for_key("owner-1", "run-42/approve"),
        "redelivery check": lambda tx: tx.reply_for("conv-500", "msg-500"),
        "message read (redelivery check and open ask in one)": lambda tx: tx.message_context("conv-500", "msg-x"),
        "a watcher's closed follow-ups": lambda tx: tx.follow_ups.closed_follow_ups(T0, 100, None, "mine"),
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
    # Every closed ask waits on a follow-up: a few on the watcher "mine", the rest on another.
    store_location.raw_query(
        "INSERT INTO follow_ups (ask_id, watcher) SELECT id, "
        "CASE WHEN id IN ('ask-1', 'ask-2', 'ask-3') THEN 'mine' ELSE 'other' END FROM asks WHERE status <> 'open'"
    )
    plans = _plans(store_location)

    per_message = plans["open ask of a conversation"]
    assert "asks_open_by_conversation" in per_message, per_message
    assert "Seq Scan" not in per_message, per_message
    assert "SCAN asks" not in per_message.replace("SCAN asks USING INDEX", ""), per_message

    for audit in ("audit, oldest 100", "audit, all"):
        plan = plans[audit]
        assert "asks_open_by_age" in plan, f"{audit}:\n{plan}"
        assert "Seq Scan" not in plan, f"{audit}:\n{plan}"

    # A surface's look at one conversation's parked ask (GET /v1/conversations/{id}, the
    # conversation filter of GET /v1/asks) is the conversation's index, never the whole list.
    listed = plans["open asks of a conversation"]
    assert "asks_open_by_conversation" in listed, listed
    assert "Seq Scan" not in listed and "asks_open_by_age" not in listed, listed

    keyed = plans["an ask's key"]
    assert "ask_keys_pkey" in keyed or "sqlite_autoindex_ask_keys" in keyed, keyed
    assert "Seq Scan" not in keyed, keyed

    redelivery = plans["redelivery check"]
    assert "Seq Scan" not in redelivery and "SCAN inbound_messages" not in redelivery, redelivery
    assert "inbound_messages_pkey" in redelivery or "inbound_messages USING PRIMARY KEY" in redelivery, redelivery

    # The per-message read in practice: both lookups in one statement, each on its index.
    combined = plans["message read (redelivery check and open ask in one)"]
    assert "asks_open_by_conversation" in combined, combined
    assert "inbound_messages_pkey" in combined or "inbound_messages USING PRIMARY KEY" in combined, combined
    assert "Seq Scan" not in combined, combined
    assert "SCAN asks" not in combined.replace("SCAN asks USING INDEX", ""), combined

    # A follow-up watcher's page is read on the watcher's index, never past everyone else's.
    watcher = plans["a watcher's closed follow-ups"]
    assert "follow_ups_pending" in watcher, watcher
    assert "Seq Scan" not in watcher and "SCAN follow_ups" not in watcher, watcher


#: auto_explain, for one session: every statement's plan, nested ones too, sent to the
#: client as a NOTICE. Plans are generic (what PL/pgSQL caches for a connection's life).
#: LOAD needs a superuser, as the suite's default URL is (CONTRIBUTING.md).
_EXPLAIN_EVERYTHING = (
    "LOAD 'auto_explain'",
    "SET auto_explain.log_min_duration = 0",
    "SET auto_explain.log_nested_statements = on",
    "SET auto_explain.log_level = notice",
    "SET client_min_messages = notice",
    "SET plan_cache_mode = force_generic_plan",
)


def _function_plans(conn: psycopg.Connection[Any]) -> dict[str, str]:
    """The plans of parkgate_claim's and parkgate_step's statements, by their first words.

    Each function runs as the store calls it, on an open ask, in a transaction rolled
    back afterwards so the table is as loaded for the next call.
    """
    ask_id, conversation_id, run_id, touched, misses, ttl = conn.execute(
        "SELECT id, conversation_id, run_id, last_touched, mismatches, ttl_seconds FROM asks "
        "WHERE status = 'open' ORDER BY id DESC LIMIT 1"
    ).fetchone() or pytest.fail("the load parked no ask")
    expected = (conversation_id, "msg-new", ask_id, touched, misses, ttl)
    step = (
        *expected,
        *("open", None, None, None, touched + timedelta(seconds=1), None, misses + 1),
        *(None, None, None, None),  # votes, answered_by, closed_by, closed_at
        *(run_id, "running", None, ask_id, touched),
        *('{"kind": "retry"}', touched),
    )
    notices: list[str] = []
    conn.add_notice_handler(lambda diagnostic: notices.append(diagnostic.message_primary or ""))
    for statement, params in ((_CLAIM, expected), (_STEP, step)):
        with conn.transaction(force_rollback=True):
            conn.execute(DIALECT.sql(statement).encode(), params)
    plans: dict[str, str] = {}
    for notice in notices:
        text = notice.split("Query Text:", 1)[-1].strip()
        plans.setdefault(" ".join(text.split()[:3]), notice)
    return plans


def _function_plans_on(pg_url: str, pg_schema: str, *, analysed: bool, **load: int) -> dict[str, str]:
    """The functions' plans on a store loaded by ``_load(store, **load)``."""
    store = PostgresStore(pg_url, schema=pg_schema)
    try:
        _load(store, **load)
    finally:
        store.close()
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(pgsql.SQL("SET search_path TO {}").format(pgsql.Identifier(pg_schema)))
        if analysed:
            conn.execute("ANALYZE")
        for setting in _EXPLAIN_EVERYTHING:
            conn.execute(setting.encode())
        return _function_plans(conn)


def _by_key(plan: str, index: str) -> None:
    assert f"Index Scan using {index}" in plan, plan
    assert "asks_open_by_age" not in plan and "Seq Scan" not in plan, plan


@pytest.mark.postgres
def test_parkgate_step_finds_the_ask_by_its_key_on_a_new_table(pg_url: str, pg_schema: str) -> None:
    """A new deployment's first messages, on a few rows that were never analysed.

    PL/pgSQL plans the step's statements then and keeps the plans for the connection's
    life, however large the table grows (with autovacuum off, nothing ever replans them).
    The check-and-write must find the ask by its primary key: a scan of every open ask
    (asks_open_by_age, filtered on id) costs the planner the same on such a table, and
    schema v3 chose it, so each message's cost grew with the number of parked asks.
    """
    plans = _function_plans_on(pg_url, pg_schema, analysed=False, rows=40, open_every=1)
    _by_key(plans["UPDATE asks SET"], "asks_pkey")
    _by_key(plans["UPDATE runs SET"], "runs_pkey")


@pytest.mark.postgres
def test_the_one_round_trip_functions_use_their_indexes(pg_url: str, pg_schema: str) -> None:
    plans = _function_plans_on(pg_url, pg_schema, analysed=True)
    _by_key(plans["UPDATE asks SET"], "asks_pkey")
    _by_key(plans["UPDATE runs SET"], "runs_pkey")
    # The claim reads the conversation's open ask, and its message id, each on its index.
    _by_key(plans["SELECT id, last_touched,"], "asks_open_by_conversation")
    seen_before = next(plan for plan in plans.values() if "FROM inbound_messages" in plan)
    assert "inbound_messages_pkey" in seen_before and "Seq Scan" not in seen_before, seen_before


def test_sqlite_checked_writes_find_the_ask_by_its_key(store_url_factory: StoreUrlFactory) -> None:
    """The writes that check a remembered ask (SQLiteTransaction) search the primary key,
    never a scan of the partial index their ``status = 'open'`` would also allow."""
    import sqlite3

    from parkgate.store import sqlite

    location = store_url_factory("sqlite")
    store = location.open()
    try:
        _load(store)
    finally:
        store.close()
    assert location.path is not None
    conn = sqlite3.connect(location.path)
    try:
        for statement in (sqlite._TOUCH_IF_UNCHANGED, sqlite._SAVE_IF_UNCHANGED, sqlite._STILL_UNCHANGED):
            params = (None,) * statement.count("?")
            plan = "\n".join(row[3] for row in conn.execute("EXPLAIN QUERY PLAN " + statement, params))
            assert plan == "SEARCH asks USING INDEX sqlite_autoindex_asks_1 (id=?)", (statement, plan)
    finally:
        conn.close()
