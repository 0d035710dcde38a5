"""Engine-specific promises of the two stores.

SQLite: commits are durable by default (``synchronous = FULL``), ``normal`` is an
explicit choice, and a version-1 file is upgraded in place with nothing lost.
PostgreSQL: a transaction is pipelined (BEGIN ... COMMIT of its own), so a failure in
the middle must still roll everything back and leave the pooled connection usable, and
a pooled connection the server has dropped is replaced, not handed out.
"""

from __future__ import annotations

import dataclasses
import logging
import sqlite3
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import psycopg
import pytest
from psycopg import sql as pgsql

from parkgate import Gateway
from parkgate.clock import ManualClock
from parkgate.core.kinds import ReplyKind
from parkgate.core.model import Run
from parkgate.store import StoreConflict, StoreError, open_store
from parkgate.store.migrations import iter_migrations
from parkgate.store.postgres import PostgresStore
from parkgate.store.sqlite import SQLiteStore
from parkgate.store.sqlite_file import statements as _statements
from parkgate.store.writes import StoredReply, Writes
from schema_v12 import BEFORE_V12, SQLITE_BEFORE_V14, V12_STEP_BACK_TO_V4

#: The newest schema version; both engines number their migrations alike.
LATEST = max(version for version, _ in iter_migrations("sqlite"))
#: Every migration's version, from the files on disk (both engines number theirs alike).
VERSIONS = [version for version, _ in iter_migrations("sqlite")]

T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)


def _synchronous(store: SQLiteStore) -> int:
    return int(store._connection().execute("PRAGMA synchronous").fetchone()[0])


# -- SQLite durability --------------------------------------------------------------
def test_sqlite_commits_are_synced_by_default(tmp_path: Path) -> None:
    with SQLiteStore(f"sqlite:///{tmp_path / 'p.db'}") as store:
        assert store.synchronous == "full"
        assert _synchronous(store) == 2  # FULL


def test_sqlite_normal_durability_is_chosen_by_url_or_keyword(tmp_path: Path) -> None:
    with open_store(f"sqlite:///{tmp_path / 'a.db'}?synchronous=normal") as store:
        assert isinstance(store, SQLiteStore)
        assert _synchronous(store) == 1  # NORMAL
        assert store.path == tmp_path / "a.db"
    with SQLiteStore(f"sqlite:///{tmp_path / 'b.db'}", synchronous="NORMAL") as store:
        assert _synchronous(store) == 1
    assert not (tmp_path / "a.db?synchronous=normal").exists()


def test_sqlite_background_checkpoints_keep_the_wal_reused_not_grown(tmp_path: Path) -> None:
    from parkgate.store.sqlite import file_writers

    path = tmp_path / "w.db"
    frame = 4096 + 24  # a WAL frame: one page and its header
    with SQLiteStore(f"sqlite:///{path}?synchronous=normal") as store:
        checkpointer = file_writers(store.path).checkpointer
        assert checkpointer is not None
        checkpointer.every = 100
        gateway = Gateway(store=store)
        seen = []
        for n in range(1_500):  # ~6 pages a new ask: about 9,000 frames with no checkpoint
            gateway.ask(f"c{n}", "Deploy?", ["Yes", "No"])
            seen.append(Path(f"{path}-wal").stat().st_size // frame)
        assert checkpointer.join(timeout=10) and checkpointer.passes >= 10
        # Each checkpoint let the WAL be written again from its start: it stayed a few
        # checkpoints' worth long, and the pages reached the database file.
        assert max(seen) < 4_000
        assert path.stat().st_size > 100 * 4096


@pytest.mark.parametrize(
    ("url_tail", "options", "says"),
    [
        ("?synchronous=off", {}, "synchronous must be one of full, normal"),
        ("", {"synchronous": "extra"}, "synchronous must be one of full, normal"),
        ("?journal=delete", {}, "unknown option 'journal'"),
    ],
)
def test_sqlite_bad_durability_options_are_refused_before_any_file_is_made(
    tmp_path: Path, url_tail: str, options: dict[str, str], says: str
) -> None:
    with pytest.raises(StoreError, match=says):
        SQLiteStore(f"sqlite:///{tmp_path / 'x.db'}{url_tail}", **options)
    assert list(tmp_path.iterdir()) == []


def test_a_version_1_sqlite_file_is_upgraded_with_its_messages_kept(tmp_path: Path) -> None:
    path = tmp_path / "v1.db"
    url = f"sqlite:///{path}"
    # A file as the first release left it: only migration 1 applied, one conversation
    # parked and one message already answered (its reply stored for redelivery).
    with Gateway(url, clock=ManualClock(T0)) as gateway:
        asked = gateway.ask("c-1", "Deploy?", ["Deploy", "Hold"])
        first = gateway.handle("c-1", "maybe", message_id="m-1")
    assert first.kind is ReplyKind.RETRY
    conn = sqlite3.connect(path, isolation_level=None)
    rows = conn.execute("SELECT conversation_id, message_id, reply, received_at FROM inbound_messages").fetchall()
    conn.execute("DROP TABLE inbound_messages")
    for version, script in iter_migrations("sqlite"):
        if version == 1:  # what version 2 changed, put back as version 1 made it
            for statement in _statements(script):
                if statement.startswith(("CREATE TABLE inbound_messages", "CREATE INDEX asks_by_run")):
                    conn.execute(statement)
    conn.executemany("INSERT INTO inbound_messages VALUES (?, ?, ?, ?)", rows)
    # What versions 5 to 12 added, taken out again.
    for statement in (
        *SQLITE_BEFORE_V14,
        *BEFORE_V12,
        "DROP INDEX outbox_pending_by_owner",
        "ALTER TABLE outbox DROP COLUMN owner",
        "ALTER TABLE outbox DROP COLUMN host",
        "ALTER TABLE runs DROP COLUMN owner",
        "DROP TABLE follow_ups",
        "DROP TRIGGER asks_due_moves",
        "DROP INDEX asks_due",
        "DROP TABLE deliverers",
        "ALTER TABLE asks DROP COLUMN due_at",
        "ALTER TABLE asks DROP COLUMN context",
        "ALTER TABLE outbox DROP COLUMN failed_at",
        "ALTER TABLE asks DROP COLUMN expect",
        "DROP INDEX asks_open_by_owner",
        "ALTER TABLE asks DROP COLUMN owner",
    ):
        conn.execute(statement)
    conn.execute("DELETE FROM schema_migrations WHERE version > 1")
    assert conn.execute("SELECT wr FROM pragma_table_list('inbound_messages')").fetchone()[0] == 0
    conn.close()

    with Gateway(url, clock=ManualClock(T0)) as gateway:
        assert gateway.store.schema_version() == LATEST
        # The redelivered message still gets its first reply, and changes nothing.
        assert gateway.handle("c-1", "Deploy", message_id="m-1") == first
        assert gateway.get(asked.ask_id or "").mismatches == 1
        assert gateway.handle("c-1", "Deploy", message_id="m-2").kind is ReplyKind.SELECTED
    conn = sqlite3.connect(path)
    assert conn.execute("SELECT wr FROM pragma_table_list('inbound_messages')").fetchone()[0] == 1
    assert conn.execute("SELECT count(*) FROM sqlite_master WHERE name = 'asks_by_run'").fetchone()[0] == 0
    assert conn.execute("SELECT count(*) FROM inbound_messages").fetchone()[0] == 2
    conn.close()


# -- PostgreSQL pipelined transactions ------------------------------------------------
@pytest.fixture
def one_connection_store(pg_url: str, pg_schema: str) -> PostgresStore:
    """A store whose pool holds exactly one connection: every test call reuses it."""
    store = PostgresStore(pg_url, schema=pg_schema, min_size=1, max_size=1, timeout=5)
    yield store  # type: ignore[misc]
    store.close()


def _run(n: str) -> Run:
    return Run(n, f"conv-{n}", None, "running", None, {}, None, T0, T0)


def test_postgres_an_error_mid_transaction_rolls_back_and_the_connection_serves_on(
    one_connection_store: PostgresStore, caplog: pytest.LogCaptureFixture
) -> None:
    store = one_connection_store
    with pytest.raises(RuntimeError, match="the caller changed its mind"), store.transaction() as tx:
        tx.save_run(_run("r-1"))
        assert tx.run("r-1") is not None  # sent, and visible inside the transaction
        raise RuntimeError("the caller changed its mind")
    with pytest.raises(StoreConflict), store.transaction() as tx:
        tx.save_run(_run("r-2"))
        tx.write(Writes(reply=StoredReply("c", "m", "{}", T0)))
        tx.write(Writes(reply=StoredReply("c", "m", "{}", T0)))  # the primary key says no
    with pytest.raises(psycopg.ProgrammingError), store.transaction() as tx:  # refused by the driver itself
        tx.save_run(_run("r-4"))
        tx.run("r-4")
        tx.save_run(dataclasses.replace(_run("r-4"), status=object()))  # type: ignore[arg-type]
    with store.transaction() as tx:
        assert tx.run("r-1") is None and tx.run("r-2") is None and tx.run("r-4") is None  # nothing survived
        assert tx.reply_for("c", "m") is None
        tx.save_run(_run("r-3"))
    with store.transaction() as tx:
        assert tx.run("r-3") is not None
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []


def test_postgres_a_pooled_connection_the_server_dropped_is_replaced(
    one_connection_store: PostgresStore, pg_url: str
) -> None:
    store = one_connection_store
    gateway = Gateway(store=store, clock=ManualClock(T0))
    conversation = f"drop-{uuid.uuid4().hex[:8]}"
    gateway.ask(conversation, "Deploy?", ["Deploy", "Hold"])
    with store._pool.connection() as conn:
        pid = conn.info.backend_pid
    with psycopg.connect(pg_url, autocommit=True) as admin:
        assert admin.execute("SELECT pg_terminate_backend(%s)", (pid,)).fetchone() == (True,)
        # Wait until the server has really closed it, as a restart would.
        admin.execute("SELECT pg_sleep(0.2)")
    reply = gateway.handle(conversation, "1", message_id="after-drop")
    assert reply.kind is ReplyKind.SELECTED and reply.answer == "Deploy"
    with store._pool.connection() as conn:
        assert conn.info.backend_pid != pid


def test_a_version_1_postgres_schema_is_upgraded_in_place(pg_url: str, pg_schema: str) -> None:
    with Gateway(store=PostgresStore(pg_url, schema=pg_schema), clock=ManualClock(T0)) as gateway:
        gateway.ask("c-1", "Deploy?", ["Deploy", "Hold"])
        waited_on = gateway.ask("c-2", "Ship?", ["Ship", "Wait"], ttl=60, callback_url="http://hooks.test/h")
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(f'SET search_path TO "{pg_schema}"')
        conn.execute("CREATE INDEX asks_by_run ON asks (run_id)")  # as version 1 made it
        for statement in (  # what versions 5 to 12 added, taken out again
            *V12_STEP_BACK_TO_V4,  # version 12's parkgate_step, and version 4's again
            *BEFORE_V12,
            "ALTER TABLE outbox DROP COLUMN owner",  # its index goes with it
            "ALTER TABLE outbox DROP COLUMN host",
            "ALTER TABLE runs DROP COLUMN owner",
            "DROP TABLE follow_ups",
            "DROP TABLE deliverers",
            "DROP TRIGGER asks_due_moves ON asks",
            "DROP TRIGGER asks_closed ON asks",
            "DROP TRIGGER asks_due_parked ON asks",
            "DROP TRIGGER outbox_queued ON outbox",
            "ALTER TABLE asks DROP COLUMN due_at",
            "ALTER TABLE asks DROP COLUMN context",
            "ALTER TABLE outbox DROP COLUMN failed_at",
            "ALTER TABLE asks DROP COLUMN expect",
            "ALTER TABLE asks DROP COLUMN owner",
        ):
            conn.execute(statement.encode())
        conn.execute("DELETE FROM schema_migrations WHERE version > 1")
    with Gateway(store=PostgresStore(pg_url, schema=pg_schema), clock=ManualClock(T0)) as gateway:
        assert gateway.store.schema_version() == LATEST
        assert gateway.handle("c-1", "1").kind is ReplyKind.SELECTED  # the parked ask survived
        # The ask with a callback that was open gets its due time: a due read will close it.
        assert gateway.next_due() == T0 + timedelta(seconds=60)
        assert gateway.get(waited_on.ask_id or "").watched
    with psycopg.connect(pg_url, autocommit=True) as conn:
        found = conn.execute(
            "SELECT count(*) FROM pg_indexes WHERE schemaname = %s AND indexname = 'asks_by_run'", (pg_schema,)
        ).fetchone()
    assert found == (0,)


# -- Opening: what a store creates, and what it refuses to ------------------------------
def test_sqlite_without_migrate_refuses_a_missing_file_and_creates_nothing(tmp_path: Path) -> None:
    path = tmp_path / "missing.db"
    with pytest.raises(StoreError, match=f"no parkgate database at {path}") as raised:
        SQLiteStore(f"sqlite:///{path}", migrate=False)
    assert "parkgate migrate" in str(raised.value)
    assert list(tmp_path.iterdir()) == []  # no file, no -wal, no -shm


def test_sqlite_without_migrate_opens_an_existing_file_as_it_is(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'p.db'}"
    SQLiteStore(url).close()
    with SQLiteStore(url, migrate=False) as store:
        assert store.schema_version() == LATEST
        assert store.applied == []
    with SQLiteStore(f"sqlite:///{tmp_path / 'new.db'}") as store:
        assert store.applied == VERSIONS  # what opening applied


def _schema_exists(url: str, name: str) -> bool:
    with psycopg.connect(url, autocommit=True) as conn:
        found = conn.execute("SELECT count(*) FROM pg_namespace WHERE nspname = %s", (name,)).fetchone()
    return found == (1,)


@pytest.fixture
def missing_schema(pg_url: str) -> Iterator[str]:
    """A schema name that does not exist yet (quoting needed), dropped afterwards if made."""
    from parkgate.store.postgres import drop_schema

    name = f"pg missing-{uuid.uuid4().hex[:8]}.Mixed"
    try:
        yield name
    finally:
        drop_schema(pg_url, name)


def test_postgres_migrating_creates_a_missing_schema(
    pg_url: str, missing_schema: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="parkgate")
    with PostgresStore(pg_url, schema=missing_schema) as store:
        assert store.created_schema and store.applied == VERSIONS
        assert store.schema_version() == LATEST
        asked = Gateway(store=store, clock=ManualClock(T0)).ask("c-1", "Deploy?", ["Deploy", "Hold"])
    assert _schema_exists(pg_url, missing_schema)
    assert [r.getMessage() for r in caplog.records if "schema" in r.getMessage()] == [
        f"created PostgreSQL schema {missing_schema}"
    ]
    with PostgresStore(pg_url, schema=missing_schema) as store:  # the second time: nothing to create
        assert not store.created_schema and store.applied == []
        assert Gateway(store=store, clock=ManualClock(T0)).get(asked.ask_id or "").is_open


def test_postgres_workers_racing_to_create_one_schema_all_open_it(pg_url: str, missing_schema: str) -> None:
    from concurrent.futures import ThreadPoolExecutor

    def open_and_close(_: int) -> bool:
        with PostgresStore(pg_url, schema=missing_schema, max_size=1) as store:
            return store.created_schema

    with ThreadPoolExecutor(4) as pool:
        created = list(pool.map(open_and_close, range(4)))
    assert created.count(True) == 1


def test_postgres_without_migrate_refuses_a_missing_schema_clearly(pg_url: str, missing_schema: str) -> None:
    with pytest.raises(StoreError) as raised:
        PostgresStore(pg_url, schema=missing_schema, migrate=False)
    message = str(raised.value)
    assert missing_schema in message and "parkgate migrate" in message
    assert "no schema has been selected" not in message
    assert not _schema_exists(pg_url, missing_schema)


def test_postgres_without_migrate_opens_an_existing_schema(pg_url: str, pg_schema: str) -> None:
    with PostgresStore(pg_url, schema=pg_schema, migrate=False) as store:  # exists, still empty
        assert store.schema_version() == 0 and store.applied == []
        assert store.migrate() == VERSIONS
        assert not store.created_schema


def test_postgres_a_schema_the_user_may_not_create_is_a_clear_error_and_an_existing_one_opens(pg_url: str) -> None:
    """Without CREATE on the database: a missing schema is refused by name, and a schema
    that exists (made by an administrator) is migrated without asking for CREATE."""
    from psycopg.conninfo import conninfo_to_dict, make_conninfo

    from parkgate.store.postgres import drop_schema

    role = f"pgt_nocreate_{uuid.uuid4().hex[:8]}"
    given = f"pgt_given_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(pg_url, autocommit=True) as admin:
        admin.execute(pgsql.SQL("CREATE ROLE {} LOGIN").format(pgsql.Identifier(role)))
        admin.execute(pgsql.SQL("CREATE SCHEMA {} AUTHORIZATION {}").format(*map(pgsql.Identifier, (given, role))))
    as_role = make_conninfo(**{**conninfo_to_dict(pg_url), "user": role})
    try:
        with pytest.raises(StoreError) as raised:
            PostgresStore(as_role, schema=f"{given}_typo", timeout=5)
        assert f"{given}_typo" in str(raised.value) and "could not be created" in str(raised.value)
        with PostgresStore(as_role, schema=given, timeout=5) as store:
            assert store.schema_version() == LATEST and not store.created_schema
    finally:
        drop_schema(pg_url, given)
        with psycopg.connect(pg_url, autocommit=True) as admin:
            admin.execute(pgsql.SQL("DROP ROLE IF EXISTS {}").format(pgsql.Identifier(role)))
