"""PostgreSQL decides a message from what this process last committed, and is never wrong.

A gateway remembers the open ask of each conversation it last wrote or read
(``store/recent.py``) and sends, in the same round trip as its writes, a check
(``parkgate_claim``) that aborts the transaction unless the conversation is exactly so.
These tests use two gateways with stores of their own on one schema, as two processes
(or hosts) would, and make one's memory stale in every way the other, or an operator,
can: answering, bouncing, re-delivering, parking, closing behind its back, and time.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

import pytest

from parkgate import AskAlreadyOpen, AskStatus, Gateway, ManualClock, ReplyKind
from parkgate.store import postgres
from parkgate.store.postgres import PostgresStore
from parkgate.store.recent import STALE

if TYPE_CHECKING:
    from conftest import MakeStore, StoreLocation, StoreUrlFactory

pytestmark = pytest.mark.postgres

T0 = datetime(2026, 4, 1, 9, 0, tzinfo=UTC)
OPTIONS = ["Deploy", "Hold"]


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(T0)


@pytest.fixture
def location(store_url_factory: StoreUrlFactory) -> StoreLocation:
    """A fresh PostgreSQL schema."""
    return store_url_factory("postgres")


@pytest.fixture
def processes(location: StoreLocation, make_store: MakeStore, clock: ManualClock) -> tuple[Gateway, Gateway]:
    """Two gateways on one schema, each with its own pool of one connection and its own memory."""
    here, there = (
        Gateway(store=make_store(location, max_size=1), clock=clock, ttl=timedelta(hours=1)) for _ in range(2)
    )
    return here, there


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


@pytest.fixture
def statements(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """Every statement each PostgreSQL transaction sends, one list per transaction."""
    sent: list[list[str]] = []

    class Recording(postgres.PostgresTransaction):
        def __init__(self, cursor: Any, *args: Any) -> None:
            sent.append([])
            super().__init__(_RecordingCursor(cursor, sent[-1]), *args)

    monkeypatch.setattr(postgres, "PostgresTransaction", Recording)
    return sent


def _reads(transaction: list[str]) -> list[str]:
    """The statements that read rows back to the client (a round trip before the commit)."""
    checks = ("parkgate_claim", "parkgate_confirm_claim", "pg_advisory_xact_lock")
    return [s for s in transaction if s.lstrip().upper().startswith("SELECT") and not any(c in s for c in checks)]


def test_a_message_where_this_process_parked_is_one_statement(
    processes: tuple[Gateway, Gateway], statements: list[list[str]]
) -> None:
    here, _ = processes
    asked = here.ask("c-1", "Ship it?", OPTIONS)
    statements.clear()
    for text, kind in (("what?", ReplyKind.RETRY), ("menu", ReplyKind.RESHOWN), ("2", ReplyKind.SELECTED)):
        assert here.handle("c-1", text, message_id=f"m-{text}").kind is kind
    # The check, the ask's new state, the run's (on the selection) and the stored reply.
    assert [[s.split("(")[0] for s in sent] for sent in statements] == [["SELECT parkgate_step"]] * 3
    assert here.get(asked.ask_id or "").answer == "Hold"
    assert here.run(asked.run_id or "") is not None


def test_parking_where_nothing_is_remembered_open_sends_only_its_writes(
    processes: tuple[Gateway, Gateway], statements: list[list[str]]
) -> None:
    here, _ = processes
    statements.clear()
    here.ask("c-1", "Ship it?", OPTIONS)  # never seen here: guessed "none open"
    (sent,) = statements
    # No lock, no read, no claim: the unique index on open asks is the check. The run and
    # the ask are written by one statement.
    (statement,) = sent
    assert statement.startswith("WITH w0 AS (INSERT INTO runs") and ") INSERT INTO asks" in statement


def test_other_writes_after_a_guess_go_between_the_claim_and_its_confirmation(
    processes: tuple[Gateway, Gateway], statements: list[list[str]]
) -> None:
    here, _ = processes
    first = here.ask("c-1", "Ship it?", OPTIONS)
    statements.clear()
    second = here.ask("c-1", "Roll back?", OPTIONS, replace=True)  # closes the remembered ask, parks anew
    (sent,) = statements
    assert "parkgate_claim(" in sent[0] and "parkgate_confirm_claim()" in sent[-1], sent
    assert _reads(sent) == [], f"a read before the commit: {sent}"
    assert here.get(first.ask_id or "").outcome == "replaced"
    assert [ask.id for ask in here.audit()] == [second.ask_id]


def test_a_conversation_this_process_has_not_seen_is_read_first(
    processes: tuple[Gateway, Gateway], statements: list[list[str]]
) -> None:
    here, there = processes
    there.ask("c-1", "Ship it?", OPTIONS)
    statements.clear()
    assert here.handle("c-1", "what?").kind is ReplyKind.RETRY
    assert len(_reads(statements[0])) == 1
    assert not any("parkgate_claim" in s for s in statements[0])


def test_remember_zero_reads_every_message(
    location: StoreLocation, make_store: MakeStore, statements: list[list[str]]
) -> None:
    gateway = Gateway(store=make_store(location, remember=0), clock=ManualClock(T0))
    gateway.ask("c-1", "Ship it?", OPTIONS)
    statements.clear()
    gateway.handle("c-1", "what?")
    gateway.handle("c-1", "1")
    assert [len(_reads(sent)) for sent in statements] == [1, 1]
    assert not any("parkgate_claim" in s for sent in statements for s in sent)


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
    assert isinstance(here.store, PostgresStore) and here.store.recent.get("c-1") is STALE


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
