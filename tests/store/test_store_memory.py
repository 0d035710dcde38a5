"""Both stores decide a message from what this process last committed, and are never wrong.

A store remembers the open ask of each conversation it last wrote or read
(``RecentOpenAsks`` in ``store/sql.py``) and lets its writes be the check: PostgreSQL sends, in the same
round trip as its writes, a check (``parkgate_claim`` / ``parkgate_step``) that aborts
the transaction unless the conversation is exactly so; SQLite decides before it takes
the write lock and its ``UPDATE`` changes the ask only if it is still as remembered.
The behaviour tests use two gateways with stores of their own on one database, as two
processes (or hosts) would, and make one's memory stale in every way the other, or an
operator, can: answering, bouncing, re-delivering, parking, closing behind its back,
and time. Then each engine's statements: what a remembered message saves.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

import pytest

from engine_params import STORE_PARAMS
from parkgate import AskAlreadyOpen, AskStatus, Gateway, ManualClock, ReplyKind
from parkgate.store import postgres, sqlite
from parkgate.store.base import StoreConflict, StoreError
from parkgate.store.postgres import PostgresStore
from parkgate.store.sql import STALE
from parkgate.store.sqlite import SQLiteStore

if TYPE_CHECKING:
    from conftest import MakeStore, StoreLocation, StoreUrlFactory

T0 = datetime(2026, 4, 1, 9, 0, tzinfo=UTC)
OPTIONS = ["Deploy", "Hold"]


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(T0)


@pytest.fixture(params=STORE_PARAMS)
def location(request: pytest.FixtureRequest, store_url_factory: StoreUrlFactory) -> StoreLocation:
    """A fresh database: a SQLite file, then a PostgreSQL schema."""
    return store_url_factory(str(request.param))


@pytest.fixture
def pg_location(store_url_factory: StoreUrlFactory) -> StoreLocation:
    """A fresh PostgreSQL schema (for the tests of PostgreSQL's statements)."""
    return store_url_factory("postgres")


def _two_gateways(location: StoreLocation, make_store: MakeStore, clock: ManualClock) -> tuple[Gateway, Gateway]:
    """Two gateways on one database, each with its own store and memory (on PostgreSQL a
    pool of one connection), as two processes would have."""
    options = {"max_size": 1} if location.engine == "postgres" else {}
    here, there = (
        Gateway(store=make_store(location, **options), clock=clock, ttl=timedelta(hours=1)) for _ in range(2)
    )
    return here, there


@pytest.fixture
def processes(location: StoreLocation, make_store: MakeStore, clock: ManualClock) -> tuple[Gateway, Gateway]:
    return _two_gateways(location, make_store, clock)


@pytest.fixture
def pg_processes(pg_location: StoreLocation, make_store: MakeStore, clock: ManualClock) -> tuple[Gateway, Gateway]:
    return _two_gateways(pg_location, make_store, clock)


# -- Both engines: never wrong -----------------------------------------------------------------


def test_an_ask_answered_by_another_process_is_not_answered_again_here(processes: tuple[Gateway, Gateway]) -> None:
    here, there = processes
    asked = here.ask("c-1", "Ship it?", OPTIONS)
    assert there.handle("c-1", "1").kind is ReplyKind.SELECTED
    late = here.handle("c-1", "2")  # here still remembers the ask as open
    assert late.kind is ReplyKind.PASS and not late.parked
    stored = here.get(asked.ask_id or "")
    assert (stored.status, stored.answer, stored.option_index) == (AskStatus.ANSWERED, "Deploy", 1)


def test_misses_counted_by_two_processes_add_up_and_escalate_on_the_third(processes: tuple[Gateway, Gateway]) -> None:
    here, there = processes
    asked = here.ask("c-1", "Ship it?", OPTIONS)
    assert here.handle("c-1", "huh").kind is ReplyKind.RETRY
    assert there.handle("c-1", "what").kind is ReplyKind.RETRY
    third = here.handle("c-1", "eh?")
    assert third.kind is ReplyKind.ESCALATED and "3" in third.text
    assert here.get(asked.ask_id or "").mismatches == 3


def test_a_redelivered_message_gets_its_first_reply_even_when_the_memory_matches(
    processes: tuple[Gateway, Gateway],
) -> None:
    here, there = processes
    asked = here.ask("c-1", "Ship it?", OPTIONS)
    first = here.handle("c-1", "huh", message_id="m-1")
    # The memory matches the row exactly; only the message id says "seen before".
    assert here.handle("c-1", "huh", message_id="m-1") == first
    assert there.handle("c-1", "2", message_id="m-1") == first
    assert here.get(asked.ask_id or "").mismatches == 1


def test_parking_where_another_process_has_an_open_ask_is_refused_or_replaces_it(
    processes: tuple[Gateway, Gateway],
) -> None:
    here, there = processes
    theirs = there.ask("c-1", "Ship it?", OPTIONS)
    with pytest.raises(AskAlreadyOpen):
        here.ask("c-1", "Roll back?", OPTIONS)  # here has never seen c-1: it guesses "none open"
    mine = here.ask("c-1", "Roll back?", OPTIONS, replace=True)
    assert mine.kind is ReplyKind.ASKED
    assert here.get(theirs.ask_id or "").outcome == "replaced"
    assert [ask.id for ask in here.audit()] == [mine.ask_id]


def test_a_remembered_open_ask_that_was_closed_elsewhere_does_not_block_a_new_one(
    processes: tuple[Gateway, Gateway],
) -> None:
    here, there = processes
    here.ask("c-1", "Ship it?", OPTIONS)
    there.handle("c-1", "cancel")
    again = here.ask("c-1", "Ship it now?", OPTIONS)  # here remembers an open ask: stale
    assert again.kind is ReplyKind.ASKED
    assert there.handle("c-1", "1").answer == "Deploy"


def test_an_ask_closed_behind_the_gateways_back_is_seen(
    processes: tuple[Gateway, Gateway], location: StoreLocation
) -> None:
    here, _ = processes
    asked = here.ask("c-1", "Ship it?", OPTIONS)
    location.raw_query("UPDATE asks SET status = 'cancelled', outcome = 'operator' WHERE id = ?", (asked.ask_id,))
    assert here.handle("c-1", "1").kind is ReplyKind.PASS
    assert here.get(asked.ask_id or "").outcome == "operator"


def test_a_ttl_shortened_by_hand_is_seen(
    processes: tuple[Gateway, Gateway], location: StoreLocation, clock: ManualClock
) -> None:
    here, _ = processes
    asked = here.ask("c-1", "Ship it?", OPTIONS)  # here remembers a one-hour TTL
    location.raw_query("UPDATE asks SET ttl_seconds = 60 WHERE id = ?", (asked.ask_id,))
    clock.advance(timedelta(minutes=2))
    reply = here.handle("c-1", "what?")
    assert reply.kind is ReplyKind.PASS and reply.expired_ask_id == asked.ask_id


def test_a_remembered_ask_past_its_ttl_expires_on_the_read_that_finds_it(
    processes: tuple[Gateway, Gateway], clock: ManualClock
) -> None:
    here, _ = processes
    asked = here.ask("c-1", "Ship it?", OPTIONS)
    clock.advance(timedelta(hours=1, microseconds=1))
    reply = here.handle("c-1", "1")
    assert reply.kind is ReplyKind.PASS and reply.expired_ask_id == asked.ask_id
    assert here.get(asked.ask_id or "").status is AskStatus.EXPIRED


def test_a_wrong_guess_marks_the_conversation_to_be_read_from_then_on(processes: tuple[Gateway, Gateway]) -> None:
    here, there = processes
    here.ask("c-1", "Ship it?", OPTIONS)
    there.handle("c-1", "huh")
    here.handle("c-1", "huh")
    assert isinstance(here.store, PostgresStore | SQLiteStore) and here.store.recent.get("c-1") is STALE


def test_many_wrong_guesses_on_one_connection_never_surface_an_error_or_a_warning(
    processes: tuple[Gateway, Gateway], caplog: pytest.LogCaptureFixture
) -> None:
    """A wrong guess fails only the last statement, so the server skips nothing queued
    behind the check (a skipped first PREPARE would leave psycopg naming a statement the
    server never made): no error, no warning, no connection replaced, right answers."""
    here, there = processes
    caplog.set_level(logging.WARNING)
    for n in range(30):
        conversation = f"c-{n}"
        asked = here.ask(conversation, "Ship it?", OPTIONS)
        assert there.handle(conversation, "huh", message_id="m-1").kind is ReplyKind.RETRY
        assert here.handle(conversation, "what", message_id="m-2").kind is ReplyKind.RETRY  # a wrong guess
        assert here.handle(conversation, "2", message_id="m-3").answer == "Hold"
        assert here.get(asked.ask_id or "").mismatches == 0  # a selection resets the count
    assert [r.getMessage() for r in caplog.records] == []
    # Not only in a debugger: each wrong guess is one retry on the metrics.
    retries = here.metrics.registry.get_sample_value("parkgate_store_retries_total", {"surface": "library"})
    assert retries == 30


# -- PostgreSQL: what a remembered message saves -----------------------------------------------


class _RecordingCursor:
    """A cursor that notes every statement it sends, and is otherwise the cursor."""

    def __init__(self, cursor: Any, sent: list[str]) -> None:
        self._cursor = cursor
        self._sent = sent

    def execute(self, statement: Any, params: Any = ()) -> Any:
        self._sent.append(statement.decode() if isinstance(statement, bytes) else statement)
        return self._cursor.execute(statement, params)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._cursor, name)


class _RecordingConnection:
    """A connection that notes every statement sent on it or its cursors, and is otherwise
    the connection: SQLite's group commits run on the store's writer connection."""

    def __init__(self, conn: Any, sent: list[str]) -> None:
        self._conn = conn
        self._sent = sent

    def execute(self, statement: str, params: Any = ()) -> Any:
        self._sent.append(statement)
        return self._conn.execute(statement, params)

    def cursor(self) -> _RecordingCursor:
        return _RecordingCursor(self._conn.cursor(), self._sent)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._conn, name)


def _record_statements(monkeypatch: pytest.MonkeyPatch, module: Any, name: str) -> list[list[str]]:
    """Make ``module.name`` (a transaction class) note every statement, one list per transaction
    (on SQLite, those on the writer connection, the fifth argument, too)."""
    sent: list[list[str]] = []
    transaction = getattr(module, name)

    class Recording(transaction):  # type: ignore[misc, valid-type]
        def __init__(self, cursor: Any, *args: Any) -> None:
            sent.append([])
            if len(args) > 3 and args[3] is not None:
                args = (*args[:3], _RecordingConnection(args[3], sent[-1]), *args[4:])
            super().__init__(_RecordingCursor(cursor, sent[-1]), *args)

    monkeypatch.setattr(module, name, Recording)
    return sent


@pytest.fixture
def pg_statements(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """Every statement each PostgreSQL transaction sends, one list per transaction."""
    return _record_statements(monkeypatch, postgres, "PostgresTransaction")


def _reads(transaction: list[str]) -> list[str]:
    """The statements that read rows back to the client (a round trip before the commit)."""
    checks = ("parkgate_claim", "parkgate_confirm_claim", "pg_advisory_xact_lock")
    return [s for s in transaction if s.lstrip().upper().startswith("SELECT") and not any(c in s for c in checks)]


@pytest.mark.postgres
def test_postgres_a_message_where_this_process_parked_is_one_statement(
    pg_processes: tuple[Gateway, Gateway], pg_statements: list[list[str]]
) -> None:
    here, _ = pg_processes
    asked = here.ask("c-1", "Ship it?", OPTIONS)
    pg_statements.clear()
    for text, kind in (("what?", ReplyKind.RETRY), ("menu", ReplyKind.RESHOWN), ("2", ReplyKind.SELECTED)):
        assert here.handle("c-1", text, message_id=f"m-{text}").kind is kind
    # The check, the ask's new state, the run's (on the selection), the stored reply and
    # the message's events: one statement each.
    assert [len(sent) for sent in pg_statements] == [1, 1, 1]
    assert all("SELECT parkgate_step(" in sent[0] and "INSERT INTO ask_events" in sent[0] for sent in pg_statements)
    assert here.get(asked.ask_id or "").answer == "Hold"
    assert here.run(asked.run_id or "") is not None


@pytest.mark.postgres
def test_postgres_parking_where_nothing_is_remembered_open_sends_only_its_writes(
    pg_processes: tuple[Gateway, Gateway], pg_statements: list[list[str]]
) -> None:
    here, _ = pg_processes
    pg_statements.clear()
    here.ask("c-1", "Ship it?", OPTIONS)  # never seen here: guessed "none open"
    (sent,) = pg_statements
    # No lock, no read, no claim: the unique index on open asks is the check. The run and
    # the ask are written by one statement.
    (statement,) = sent
    assert statement.startswith("WITH w0 AS (INSERT INTO ask_events") and "w1 AS (INSERT INTO runs" in statement
    assert ") INSERT INTO asks" in statement


@pytest.mark.postgres
def test_postgres_other_writes_after_a_guess_go_between_the_claim_and_its_confirmation(
    pg_processes: tuple[Gateway, Gateway], pg_statements: list[list[str]]
) -> None:
    here, _ = pg_processes
    first = here.ask("c-1", "Ship it?", OPTIONS)
    pg_statements.clear()
    second = here.ask("c-1", "Roll back?", OPTIONS, replace=True)  # closes the remembered ask, parks anew
    (sent,) = pg_statements
    assert "parkgate_claim(" in sent[0] and "parkgate_confirm_claim()" in sent[-1], sent
    assert _reads(sent) == [], f"a read before the commit: {sent}"
    assert here.get(first.ask_id or "").outcome == "replaced"
    assert [ask.id for ask in here.audit()] == [second.ask_id]


@pytest.mark.postgres
def test_postgres_a_conversation_this_process_has_not_seen_is_read_first(
    pg_processes: tuple[Gateway, Gateway], pg_statements: list[list[str]]
) -> None:
    here, there = pg_processes
    there.ask("c-1", "Ship it?", OPTIONS)
    pg_statements.clear()
    assert here.handle("c-1", "what?").kind is ReplyKind.RETRY
    assert len(_reads(pg_statements[0])) == 1
    assert not any("parkgate_claim" in s for s in pg_statements[0])


@pytest.mark.postgres
def test_postgres_remember_zero_reads_every_message(
    pg_location: StoreLocation, make_store: MakeStore, pg_statements: list[list[str]]
) -> None:
    gateway = Gateway(store=make_store(pg_location, remember=0), clock=ManualClock(T0))
    gateway.ask("c-1", "Ship it?", OPTIONS)
    pg_statements.clear()
    gateway.handle("c-1", "what?")
    gateway.handle("c-1", "1")
    assert [len(_reads(sent)) for sent in pg_statements] == [1, 1]
    assert not any("parkgate_claim" in s for sent in pg_statements for s in sent)


# -- SQLite: what a remembered message saves --------------------------------------------------


@pytest.fixture
def sqlite_processes(
    store_url_factory: StoreUrlFactory, make_store: MakeStore, clock: ManualClock
) -> tuple[Gateway, Gateway]:
    return _two_gateways(store_url_factory("sqlite"), make_store, clock)


@pytest.fixture
def sqlite_statements(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """Every statement each SQLite transaction runs, one list per transaction."""
    return _record_statements(monkeypatch, sqlite, "SQLiteTransaction")


def _verbs(transaction: list[str]) -> list[str]:
    return [" ".join(statement.split()[:3]) for statement in transaction]


def test_sqlite_a_message_where_this_process_parked_reads_nothing(
    sqlite_processes: tuple[Gateway, Gateway], sqlite_statements: list[list[str]]
) -> None:
    here, _ = sqlite_processes
    asked = here.ask("c-1", "Ship it?", OPTIONS)
    sqlite_statements.clear()
    for text, kind in (("what?", ReplyKind.RETRY), ("menu", ReplyKind.RESHOWN), ("2", ReplyKind.SELECTED)):
        assert here.handle("c-1", text, message_id=f"m-{text}").kind is kind
    bounce = ["BEGIN IMMEDIATE", "UPDATE asks SET", "INSERT INTO inbound_messages", "INSERT INTO ask_events", "COMMIT"]
    selection = [
        "BEGIN IMMEDIATE",
        "UPDATE asks SET",
        "UPDATE runs SET",
        "INSERT INTO inbound_messages",
        "INSERT INTO ask_events",  # the selection's touch
        "INSERT INTO ask_events",  # and the close it made
        "COMMIT",
    ]
    # Decided before the write lock: the first statement of each is the BEGIN, then writes only.
    assert [_verbs(sent) for sent in sqlite_statements] == [bounce, bounce, selection]
    assert here.get(asked.ask_id or "").answer == "Hold"


def test_sqlite_parking_where_nothing_is_remembered_open_reads_nothing(
    sqlite_processes: tuple[Gateway, Gateway], sqlite_statements: list[list[str]]
) -> None:
    here, _ = sqlite_processes
    here.ask("c-1", "Ship it?", OPTIONS)  # never seen here: guessed "none open"
    (sent,) = sqlite_statements
    assert _verbs(sent) == [
        "BEGIN IMMEDIATE",
        "INSERT INTO runs",
        "INSERT INTO asks",
        "INSERT INTO ask_events",
        "COMMIT",
    ]


def test_sqlite_a_conversation_this_process_has_not_seen_is_read_first(
    sqlite_processes: tuple[Gateway, Gateway], sqlite_statements: list[list[str]]
) -> None:
    here, there = sqlite_processes
    there.ask("c-1", "Ship it?", OPTIONS)
    sqlite_statements.clear()
    assert here.handle("c-1", "what?").kind is ReplyKind.RETRY
    (sent,) = sqlite_statements
    # The read comes first, in a deferred transaction (no write lock: the message might
    # have found nothing to change); then the bounce's UPDATE takes the lock.
    assert sent[0] == "BEGIN" and sent[1].startswith("SELECT") and sent[2].startswith("UPDATE asks")


def test_sqlite_remember_zero_reads_every_message(
    store_url_factory: StoreUrlFactory, make_store: MakeStore, sqlite_statements: list[list[str]]
) -> None:
    gateway = Gateway(store=make_store(store_url_factory("sqlite"), remember=0), clock=ManualClock(T0))
    gateway.ask("c-1", "Ship it?", OPTIONS)
    sqlite_statements.clear()
    gateway.handle("c-1", "what?")
    gateway.handle("c-1", "1")
    assert [sent[1].startswith("SELECT") for sent in sqlite_statements] == [True, True]


@pytest.mark.parametrize("remember", [-1, 1.5, True, "8"])
def test_sqlite_remember_must_be_a_whole_number_of_conversations(
    store_url_factory: StoreUrlFactory, remember: Any
) -> None:
    location = store_url_factory("sqlite")
    with pytest.raises(StoreError, match="remember must be a whole number"):
        SQLiteStore(location.url, remember=remember)
    assert not location.path.exists()  # refused before anything was created


def test_sqlite_a_guess_no_write_checked_is_checked_at_commit(
    store_url_factory: StoreUrlFactory, make_store: MakeStore
) -> None:
    """A transaction that answers a read from memory and writes nothing there (no gateway
    path does today) still commits only if the conversation was as remembered."""
    location = store_url_factory("sqlite")
    here = Gateway(store=make_store(location), clock=ManualClock(T0))
    there = Gateway(store=make_store(location), clock=ManualClock(T0))
    asked = here.ask("c-1", "Ship it?", OPTIONS)
    with here.store.transaction() as tx:  # as remembered: commits
        assert tx.message_context("c-1", None) == (None, here.get(asked.ask_id or ""))
    there.handle("c-1", "huh")  # here's memory of c-1 is now stale
    with pytest.raises(StoreConflict), here.store.transaction() as tx:
        tx.message_context("c-1", None)
    assert here.store.recent.get("c-1") is STALE  # read for real from then on
    # "Nothing open", guessed for a conversation never seen here, checked the same way.
    there.ask("c-2", "Roll back?", OPTIONS)
    with pytest.raises(StoreConflict), here.store.transaction() as tx:
        assert tx.open_ask("c-2") is None
