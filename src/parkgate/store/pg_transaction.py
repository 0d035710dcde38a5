"""The PostgreSQL transaction: a conversation's lock before its read, the writes of a
message decided from memory in one round trip (:class:`PostgresTransaction`), and one
transaction's pipeline on a pooled connection (:class:`PipelinedTransaction`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, ExitStack, suppress
from functools import partial
from itertools import chain
from typing import Any

import psycopg
from psycopg import pq
from psycopg_pool import ConnectionPool

from parkgate.core.model import Ask, Run
from parkgate.store import sql
from parkgate.store.dialect import Dialect
from parkgate.store.events_sql import events_insert_in_one_snapshot
from parkgate.store.open_asks_sql import SqlTables
from parkgate.store.pg_connection import ConnectionHandles, translate_error
from parkgate.store.sql import Guesses, RecentOpenAsks, Statement
from parkgate.store.writes import AskStep, NewAsk, StoredReply, Writes


def _as_is(moment: Any) -> Any:
    return moment


DIALECT = Dialect(
    placeholder="%s",
    lock_suffix=" FOR UPDATE",
    encode_time=_as_is,
    decode_time=_as_is,
    encode_due=_as_is,
    decode_due=_as_is,
    due_expression="(last_touched + ttl_seconds * interval '1 second')",
    skip_locked_suffix=" FOR UPDATE SKIP LOCKED",
    json_text="({column}::json ->> {key}::text)",
    position="strpos",
)
#: Class of the per-conversation advisory locks (the two-key space never meets the one-key one).
CONVERSATION_LOCK_CLASS = 0x70617263  # "parc"


class PostgresTransaction(SqlTables):
    """Reads a conversation's open ask only after taking that conversation's lock.

    ``FOR UPDATE`` alone does not serialise: a transaction blocked on the row re-checks
    it after the holder commits, and when the holder closed that ask and parked the
    next one (a workflow's next phase, a replacement), the waiter finds no row and its
    statement's snapshot cannot see the new one, so it would answer ``pass`` while an
    ask is open. Taking a transaction-scoped advisory lock on the conversation first
    means the ``SELECT`` that follows starts after the previous holder committed.

    When the store remembers the conversation, the read is skipped: the remembered open
    ask is returned at once (see :class:`parkgate.store.sql.Guesses`), and the writes are
    held back until :meth:`finish`. Then they go in one round trip, checked by migration
    3's functions: :meth:`Writes.usual_step <parkgate.store.writes.Writes.usual_step>` (the
    ask's new state, its run's, the stored reply) as the single statement
    ``parkgate_step``; a lone new ask where none was open as one statement that the
    unique index on open asks checks; anything else as ``parkgate_claim``, the writes,
    and ``parkgate_confirm_claim``. Either way the commit fails, writing nothing, unless
    the conversation was as remembered.
    """

    dialect: Dialect = DIALECT

    def __init__(
        self, cursor: Any, recent: RecentOpenAsks | None = None, enter_pipeline: Callable[[], None] | None = None
    ) -> None:
        self.cursor = cursor
        self.guesses = Guesses(recent if recent is not None else _NOTHING, decides_on_nothing_open=True)
        #: Called before every statement but a one-statement form (see PipelinedTransaction).
        self._enter_pipeline = enter_pipeline or (lambda: None)
        #: parkgate_claim's parameters once a read was answered from memory.
        self._claim: tuple[Any, ...] = ()
        self._claim_sent = False
        #: The writes held back behind a claim not sent yet.
        self._held: Writes | None = None

    # -- reads -----------------------------------------------------------------------
    def open_ask(self, conversation_id: str) -> Ask | None:
        known = self.guesses.guess(conversation_id, parking=True)
        if not isinstance(known, sql.Marker):
            self._guessed(conversation_id, None, known)
            return known
        self._lock(conversation_id)
        found = sql.read_open_ask(self, conversation_id)
        self.guesses.states[conversation_id] = found
        return found

    def message_context(self, conversation_id: str, message_id: str | None) -> tuple[str | None, Ask | None]:
        known = self.guesses.guess(conversation_id, parking=False)
        if not isinstance(known, sql.Marker):
            self._guessed(conversation_id, message_id, known)
            return None, known
        self._lock(conversation_id)
        earlier, found = sql.read_message_context(self, conversation_id, message_id)
        if earlier is None:
            self.guesses.states[conversation_id] = found
        return earlier, found

    def _guessed(self, conversation_id: str, message_id: str | None, known: Ask | None) -> None:
        self._claim = (
            conversation_id,
            message_id,
            known.id if known else None,
            known.last_touched if known else None,
            known.mismatches if known else None,
            known.ttl_seconds if known else None,
        )

    def _lock(self, conversation_id: str) -> None:
        """Take the conversation's lock: the read that follows sees what its last holder committed."""
        self.send(
            "SELECT pg_advisory_xact_lock(?::int4, hashtext(?::text))", (CONVERSATION_LOCK_CLASS, conversation_id)
        )

    # -- sending ---------------------------------------------------------------------
    def query(self, statement: str, params: Sequence[Any] = ()) -> Any:
        """Every statement but a one-statement form: an unsent claim and what it holds go first."""
        if self._claim and not self._claim_sent:
            self._send_claim()
        self._enter_pipeline()
        return self.cursor.execute(_placeholders(statement), params)

    def send(self, statement: str, params: Sequence[Any] = ()) -> None:
        """Queue a statement whose result nobody reads (pipelined: no round trip)."""
        self.query(statement, params)

    def _send_claim(self) -> None:
        self._claim_sent = True
        self.send(_CLAIM, self._claim)
        held, self._held = self._held, None
        if held is not None:
            self._apply(held)

    def write(self, writes: Writes) -> None:
        self.guesses.wrote(writes)
        if self._claim and not self._claim_sent and self._held is None:
            self._held = writes  # sent at finish(), in the fewest round trips its intent allows
        else:
            self._apply(writes)

    def _apply(self, writes: Writes) -> None:
        sql.apply_writes(writes, self, self._save_ask, self.insert_ask)

    def _save_ask(self, ask: Ask) -> None:
        self.send(*sql.save_ask(ask, DIALECT))

    def insert_ask(self, ask: Ask) -> None:
        """Insert ``ask`` (the writes' park, and bulk loads)."""
        self.send(*sql.ask_insert(ask, DIALECT))

    def save_run(self, run: Run) -> None:
        """Insert ``run``, or update its status, outcome, answers and pending ask (bulk loads)."""
        self.send(*sql.run_upsert(run, DIALECT))

    def finish(self) -> None:
        """Send what a guess held back, checked; called once, before the commit."""
        if not self._claim:
            return
        if not self._claim_sent and self._send_as_one_statement():
            return
        self.send("SELECT parkgate_confirm_claim()")

    def _send_as_one_statement(self) -> bool:
        """Send the held writes as one statement, alone and outside a pipeline (it commits
        by itself), when their intent has such a form; whether they were sent."""
        held = self._held
        if held is None:
            return False
        step = held.usual_step()
        params = self._step_params(step, held.reply) if step is not None else None
        # The events ride in the same statement; numbered in its one snapshot, a racing
        # writer of the same ask's events makes it fail on (ask_id, seq): a conflict, retried.
        events = [events_insert_in_one_snapshot(held.events, DIALECT)] if held.events else []
        if params is not None:
            statement: Statement = _as_one_statement([*events, (_STEP, params)])
        else:
            park = held.lone_park()
            if park is None or self._claim[2] is not None or park.ask.conversation_id != self._claim[0]:
                return False
            # A new ask where nothing was open: the unique index on open asks is the check.
            # Its INSERT fails (a conflict, retried with a read) if one is open.
            statement = _as_one_statement([*events, *_park_statements(park)])
        self._held, self._claim_sent = None, True
        self.cursor.execute(_placeholders(statement[0]), statement[1])
        return True

    def _step_params(self, step: AskStep, reply: StoredReply | None) -> tuple[Any, ...] | None:
        """``parkgate_step``'s parameters for the remembered ask's step; None if it is another's."""
        conversation_id, message_id, expected_id = self._claim[:3]
        if step.ask.id != expected_id:
            return None
        if reply is not None and (reply.conversation_id, reply.message_id) != (conversation_id, message_id):
            return None
        run = sql.run_change_values(step.run, DIALECT) if step.run is not None else (None,) * 5
        stored = (reply.reply, reply.at) if reply is not None else (None, None)
        return (*self._claim, step.ask.status.value, *sql.mutable_fields(step.ask, DIALECT), *run, *stored)


#: A store that remembers nothing (a transaction made without one reads every time).
_NOTHING = RecentOpenAsks(0)
#: Statements are a fixed set of literals, so their rewrite for psycopg's "%s" is cached.
_rewritten: dict[str, str] = {}


def _placeholders(statement: str) -> str:
    """``statement`` with psycopg's ``%s`` for each ``?``."""
    rewritten = _rewritten.get(statement)
    if rewritten is None:
        rewritten = _rewritten[statement] = statement.replace("?", "%s")
    return rewritten


def _park_statements(park: NewAsk) -> list[Statement]:
    """The statements of a new ask: its run (inserted or updated), the ask, its follow-up."""
    statements = [sql.run_upsert(park.run, DIALECT), sql.ask_insert(park.ask, DIALECT)]
    if park.follow_up:
        statements.append(sql.follow_up_insert(park.ask.id, park.watcher))
    return statements


def _as_one_statement(writes: Sequence[Statement]) -> Statement:
    """INSERT/UPDATE statements as one: ``WITH w0 AS (first), ... last`` and all their parameters."""
    *before, (last, last_params) = writes
    if not before:
        return last, tuple(last_params)
    ctes = ", ".join(f"w{n} AS ({statement})" for n, (statement, _) in enumerate(before))
    return f"WITH {ctes} {last}", tuple(chain.from_iterable(params for _, params in writes))


_CLAIM = "SELECT parkgate_claim(?::text, ?::text, ?::text, ?::timestamptz, ?::int4, ?::float8)"
_STEP = (
    "SELECT parkgate_step(?::text, ?::text, ?::text, ?::timestamptz, ?::int4, ?::float8, "
    "?::text, ?::text, ?::text, ?::int4, ?::timestamptz, ?::timestamptz, ?::int4, "
    "?::text, ?::text, ?::text, ?::timestamptz, "
    "?::text, ?::text, ?::text, ?::text, ?::timestamptz, ?::text, ?::timestamptz)"
)


def _enter_pipeline(conn: psycopg.Connection[Any], stack: ExitStack) -> None:
    """Put ``conn`` in pipeline mode until ``stack`` closes (once: later calls do nothing)."""
    if conn.pgconn.pipeline_status == pq.PipelineStatus.OFF:
        stack.enter_context(conn.pipeline())


class PipelinedTransaction(AbstractContextManager[PostgresTransaction]):
    """One transaction on a pooled connection, sent as one pipeline.

    In pipeline mode a read flushes what is queued (the lock, earlier writes) without a
    Sync, and PostgreSQL runs every statement up to the Sync at the end as one implicit
    transaction, committed by that Sync or rolled back on any error. So a message costs
    two round trips (lock and read; writes and commit), or one when its read is answered
    from memory, and no BEGIN/COMMIT statements; each statement still gets its own
    snapshot (READ COMMITTED). The pipeline is entered at the first statement sent: a
    remembered message sent as one statement needs none (autocommit commits it).

    A class rather than a ``@contextmanager`` generator, so that each stage of the exit
    is a named step.
    """

    def __init__(
        self, pool: ConnectionPool[Any], recent: RecentOpenAsks, transaction: type[PostgresTransaction]
    ) -> None:
        self._pool = pool
        self._recent = recent
        self._transaction = transaction

    def __enter__(self) -> PostgresTransaction:
        # getconn/putconn rather than the pool's connection() context manager: this runs
        # once a message, and that wrapper adds a generator, timing statistics and the
        # connection's own __exit__ (a no-op here: autocommit) to each one.
        try:
            self._conn = self._pool.getconn()
        except BaseException as error:
            raise translate_error(error, guessed=False) or error from None
        self._pipeline = ExitStack()
        self._tx = self._transaction(
            _cursor_of(self._conn), self._recent, partial(_enter_pipeline, self._conn, self._pipeline)
        )
        return self._tx

    def __exit__(self, kind: type[BaseException] | None, raised: BaseException | None, tb: object) -> None:
        try:
            error = self._end_pipeline(raised)
            if error is not None:
                self._reset_connection(error)
        finally:
            self._pool.putconn(self._conn)  # a broken or closed connection is replaced, not reused
        self._tx.guesses.end(committed=error is None)
        if error is None:
            return
        translated = translate_error(error, guessed=self._tx.guesses.guessed)
        if translated is not None:
            raise translated from None
        if error is raised:
            return  # the body's own exception goes on as it was raised
        raise error

    def _end_pipeline(self, error: BaseException | None) -> BaseException | None:
        """Send what is held and leave the pipeline: its Sync commits, or rolls back after
        ``error``. The error the transaction ends with (None: committed)."""
        if error is None:
            try:
                self._tx.finish()
            except BaseException as failed:
                error = failed
        if error is not None and not self._aborted_by(error):
            self._roll_back_what_was_sent()
        try:
            self._pipeline.close()  # with no exception in flight: psycopg would log one
        except psycopg.Error as failed:
            return error or failed
        return error

    def _aborted_by(self, error: BaseException) -> bool:
        """Whether a statement the server refused (a unique key, a stale claim) aborted the
        pipeline: the server then skips the rest, and the closing Sync rolls back."""
        status = self._conn.pgconn.pipeline_status
        return status == pq.PipelineStatus.ABORTED and isinstance(error, psycopg.Error)

    def _roll_back_what_was_sent(self) -> None:
        """The closing Sync would commit what was sent: abort it first (in an implicit
        transaction ROLLBACK aborts it)."""
        if self._conn.pgconn.pipeline_status == pq.PipelineStatus.ON:
            with suppress(psycopg.Error):
                self._tx.cursor.execute(b"ROLLBACK")

    def _reset_connection(self, error: BaseException) -> None:
        """Leave the connection fit for the next transaction, or closed for the pool to replace."""
        if isinstance(error, psycopg.errors.InvalidSqlStatementName):
            # psycopg counts a statement as prepared that the server never prepared: its
            # PREPARE was queued behind a statement that failed (a stale parkgate_claim) and
            # skipped. Only a new connection, with an empty cache on both sides, is sure
            # to agree; the pool makes one.
            self._conn.close()
        elif not self._conn.broken:
            self._conn.rollback()  # no-op when the failure already ended the transaction


def _cursor_of(conn: psycopg.Connection[Any]) -> psycopg.Cursor[Any]:
    """The one cursor the pool made for ``conn`` (see :class:`~parkgate.store.pg_connection.ConnectionHandles`)."""
    handles: ConnectionHandles = conn._parkgate  # type: ignore[attr-defined]  # set by the pool's configure
    return handles.cursor
