"""The shared store: PostgreSQL through psycopg 3 and its connection pool.

For several gateway processes on several hosts. Each message's transaction reads the
conversation's open ask ``FOR UPDATE``, so racing workers serialise on that row; the
unique partial index keeps a conversation to one open ask, and the primary key of
``inbound_messages`` applies a redelivered ``message_id`` once.
"""

from __future__ import annotations

import logging
import select
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager, suppress
from datetime import datetime
from functools import partial
from itertools import chain
from typing import Any

import psycopg
from psycopg import pq
from psycopg import sql as pgsql
from psycopg_pool import ConnectionPool, PoolClosed, PoolTimeout

from parkgate.core.model import Ask
from parkgate.signal import CloseSignal, Watcher
from parkgate.store.base import (
    SchemaMissing,
    Store,
    StoreClosed,
    StoreConflict,
    StoreError,
    StoreUnavailable,
    Transaction,
    iter_migrations,
)
from parkgate.store.recent import DEFAULT_SIZE, STALE, UNSEEN, Marker, RecentOpenAsks
from parkgate.store.sql import Dialect, RememberingTransaction, SqlTransaction, retry_after_guess
from parkgate.store.watch import PostgresWatcher


def _same(moment: Any) -> Any:
    return moment


DIALECT = Dialect(
    placeholder="%s",
    lock_suffix=" FOR UPDATE",
    encode_time=_same,
    decode_time=_same,
    encode_due=_same,
    decode_due=_same,
    due_expression="(last_touched + ttl_seconds * interval '1 second')",
    skip_locked_suffix=" FOR UPDATE SKIP LOCKED",
)
MIGRATION_LOCK_KEY = 0x7061726B  # "park": one migrator at a time across processes
logger = logging.getLogger(__name__)
#: Class of the per-conversation advisory locks (the two-key space never meets the one-key one).
CONVERSATION_LOCK_CLASS = 0x70617263  # "parc"


class PostgresTransaction(RememberingTransaction):
    """Reads a conversation's open ask only after taking that conversation's lock.

    ``FOR UPDATE`` alone does not serialise: a transaction blocked on the row re-checks
    it after the holder commits, and when the holder closed that ask and parked the
    next one (a workflow's next phase, a replacement), the waiter finds no row and its
    statement's snapshot cannot see the new one, so it would answer ``pass`` while an
    ask is open. Taking a transaction-scoped advisory lock on the conversation first
    means the ``SELECT`` that follows starts after the previous holder committed.

    When ``recent`` remembers the conversation, the read is skipped: the remembered open
    ask is returned at once (see :mod:`parkgate.store.recent`), and the writes are held
    back until :meth:`finish`. Then they go in one round trip, checked by migration 3's
    functions: the usual message (the ask's new state, its run's, the stored reply) as
    the single statement ``parkgate_step``; anything else as ``parkgate_claim``, the
    writes, and ``parkgate_confirm_claim``. Either way the commit fails with
    serialization_failure, writing nothing, unless the conversation was as remembered.
    """

    def __init__(
        self, cursor: Any, recent: RecentOpenAsks | None = None, enter_pipeline: Callable[[], None] | None = None
    ) -> None:
        super().__init__(cursor, DIALECT, recent)
        #: Called before every statement but the folded one (see PostgresStore.transaction).
        self._enter_pipeline = enter_pipeline or (lambda: None)
        #: The claim's parameters once a read was answered from memory, and the writes
        #: held back behind it (None: sending as they come).
        self._claim: tuple[Any, ...] = ()
        self._held: list[tuple[str, Sequence[Any]]] | None = None
        #: What the held writes are, by part ("ask", "run", "reply", "park"): for finish().
        self._parts: list[tuple[str, tuple[Any, ...]]] = []

    @property
    def guessed(self) -> bool:
        """Whether a read was answered from memory (and so is checked only at commit)."""
        return bool(self._claim)

    # -- sending ---------------------------------------------------------------------
    def _write(self, statement: str, params: Sequence[Any] = ()) -> None:
        if self._held is not None:
            self._held.append((statement, params))
        else:
            super()._write(statement, params)

    def _exec(self, statement: str, params: Sequence[Any] = ()) -> Any:
        """Every statement but the folded one: whatever is held back goes first, in order."""
        if self._held is not None:
            self._release()
        self._enter_pipeline()
        return super()._exec(statement, params)

    def _release(self) -> None:
        held, self._held = self._held or [], None
        self._write(_CLAIM, self._claim)
        for statement, params in held:
            self._write(statement, params)

    def finish(self) -> None:
        """Send what a guess held back, checked; called once, before the commit."""
        if not self.guessed:
            return
        if self._held is not None:
            folded = self._folded()
            if folded is not None:
                # Alone, outside a pipeline: one round trip that commits by itself.
                self._held = None
                SqlTransaction._exec(self, _STEP, folded)
                return
            if self._claim[2] is None and ("park", (self._claim[0],)) in self._parts:
                # A new ask where nothing was open: the unique index on open asks is the
                # check. Its INSERT fails (a conflict, retried with a read) if one is open.
                # The writes go as one statement, outside a pipeline: each but the last as
                # a data-modifying WITH (PostgreSQL runs every one of those).
                held, self._held = self._held, None
                SqlTransaction._exec(self, *_as_one_statement(held))
                return
            self._release()
        self._write("SELECT parkgate_confirm_claim()")

    def _folded(self) -> tuple[Any, ...] | None:
        """``parkgate_step``'s parameters when the held writes are exactly the usual ones."""
        parts = dict(self._parts)
        if self._held is None or len(self._held) != len(self._parts) or len(parts) != len(self._parts):
            return None  # something else was written too (or a part twice)
        if "park" in parts:
            return None  # parkgate_step parks nothing
        conversation_id, message_id, expected_id = self._claim[:3]
        ask: Ask | None = parts.get("ask", (None,))[0]
        if ask is None or ask.id != expected_id:
            return None
        run = parts.get("run", (None, None, None, None, None))
        reply = parts.get("reply", (conversation_id, message_id, None, None))
        if reply[:2] != (conversation_id, message_id):
            return None
        return (*self._claim, ask.status.value, *self._mutable_fields(ask), *run, *reply[2:])

    # -- reads that may be answered from memory --------------------------------------------
    def _before_read(self, conversation_id: str) -> None:
        """Take the conversation's lock: the read that follows sees what its last holder committed."""
        self._write(
            "SELECT pg_advisory_xact_lock(?::int4, hashtext(?::text))", (CONVERSATION_LOCK_CLASS, conversation_id)
        )

    def _guess(self, conversation_id: str, message_id: str | None, *, parking: bool) -> Ask | Marker | None:
        """The remembered open ask (its writes then held back); a marker when it must be read.

        Parking a new ask where this process has seen nothing guesses "none open": that
        is the usual case, and a wrong guess costs one retry.
        """
        if self._recent is None or self._claim:
            return STALE  # one guess per transaction: the claim checks one conversation
        known = self._recent.get(conversation_id)
        if known is UNSEEN and parking:
            known = None
        if isinstance(known, Marker):
            return known
        self._claim = (
            conversation_id,
            message_id,
            known.id if known else None,
            known.last_touched if known else None,
            known.mismatches if known else None,
            known.ttl_seconds if known else None,
        )
        self._held = []
        self.states[conversation_id] = known
        return known

    # -- writes (remembered, and noted for folding) ------------------------------------------
    def _part(self, name: str, values: tuple[Any, ...]) -> None:
        if self._held is not None:
            self._parts.append((name, values))

    def insert_ask(self, ask: Ask) -> None:
        self._part("park", (ask.conversation_id,))
        super().insert_ask(ask)

    def save_ask(self, ask: Ask) -> None:
        self._part("ask", (ask,))
        super().save_ask(ask)

    def set_run_state(
        self, run_id: str, status: str, outcome: str | None, pending_ask_id: str | None, now: datetime
    ) -> None:
        self._part("run", (run_id, status, outcome, pending_ask_id, now))
        super().set_run_state(run_id, status, outcome, pending_ask_id, now)

    def remember_reply(self, conversation_id: str, message_id: str, reply: str, now: datetime) -> None:
        self._part("reply", (conversation_id, message_id, reply, now))
        super().remember_reply(conversation_id, message_id, reply, now)


def _as_one_statement(writes: Sequence[tuple[str, Sequence[Any]]]) -> tuple[str, tuple[Any, ...]]:
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
    "?::text, ?::text, ?::text, ?::text, ?::timestamptz, ?::text, ?::timestamptz)"
)


def check_idle_connection(conn: psycopg.Connection[Any]) -> None:
    """The pool's check on every checkout, without a round trip on a healthy connection.

    An idle connection has nothing to read: if its socket is readable, the server spoke
    out of turn (the termination notice of a restart, or end of file), and the full
    check (an empty query) confirms it and raises, so the pool drops it instead of
    handing it out. A connection that is merely idle costs one ``poll``, not a query.
    """
    if conn.closed or conn.broken:
        raise psycopg.OperationalError("the connection is closed")
    if _kept(conn).readable():
        ConnectionPool.check_connection(conn)


class _Kept:
    """What the store keeps on each pooled connection, made once when the pool opens it.

    ``cursor`` is the one cursor every transaction on the connection uses: a cursor is
    only a client-side object (its adapters and last result), and making one a message
    was a measurable part of the client's work. ``readable`` polls the socket without
    waiting, through a poll object registered once (its socket never changes).
    """

    __slots__ = ("cursor", "readable")

    def __init__(self, conn: psycopg.Connection[Any]) -> None:
        self.cursor: psycopg.Cursor[Any] = conn.cursor()
        fd = conn.fileno()
        if hasattr(select, "poll"):  # any fd number
            poller = select.poll()
            poller.register(fd, select.POLLIN)
            self.readable: Callable[[], object] = partial(poller.poll, 0)
        else:  # Windows: no poll(); select() suffices
            self.readable = lambda: select.select([fd], [], [], 0)[0]


def _kept(conn: psycopg.Connection[Any]) -> _Kept:
    kept: _Kept = conn._parkgate  # type: ignore[attr-defined]  # set by the pool's configure
    return kept


_RETRYABLE = (
    psycopg.errors.UniqueViolation,
    psycopg.errors.DeadlockDetected,
    psycopg.errors.SerializationFailure,
    psycopg.errors.InvalidSqlStatementName,
)


def _enter_pipeline(conn: psycopg.Connection[Any], stack: ExitStack) -> None:
    """Put ``conn`` in pipeline mode until ``stack`` closes (once: later calls do nothing)."""
    if conn.pgconn.pipeline_status == pq.PipelineStatus.OFF:
        stack.enter_context(conn.pipeline())


def _translate(error: BaseException, *, guessed: bool) -> StoreError | None:
    """The store's error for a failed transaction; ``None`` to let ``error`` through."""
    if isinstance(error, PoolClosed):
        return StoreClosed("PostgreSQL store")
    if isinstance(error, _RETRYABLE):
        # A racing worker won, or a remembered state was out of date (parkgate_claim), or
        # a connection's prepared statements fell out of step: nothing was written, and
        # the gateway retries the whole unit, which then reads what is really there.
        return StoreConflict(str(error))
    if isinstance(error, (psycopg.OperationalError, PoolTimeout)):
        return _unavailable(error)
    if isinstance(error, psycopg.errors.ReadOnlySqlTransaction):
        return StoreError(f"PostgreSQL refused the write: {error}")
    return retry_after_guess(error) if guessed else None


def _schema_exists(conn: psycopg.Connection[Any], schema: str) -> bool:
    return conn.execute("SELECT 1 FROM pg_namespace WHERE nspname = %s", (schema,)).fetchone() is not None


class _SchemaRefused(Exception):
    """The database refused to create the store's schema (privileges)."""

    def __init__(self, error: psycopg.Error) -> None:
        super().__init__(str(error))
        self.error = error


def _drop_records(record: logging.LogRecord) -> bool:
    """A logging filter that lets nothing through."""
    return False


def _why_unreachable(url: str, timeout: float) -> psycopg.Error | None:
    """The server's own reason when a pool could not open (it says only that it timed out)."""
    try:
        psycopg.connect(url, connect_timeout=max(1, min(int(timeout), 5))).close()
    except psycopg.Error as error:
        return error
    return None  # reachable now: the timeout's own message is the reason


def _unavailable(error: Exception) -> StoreUnavailable:
    reason = " ".join(str(error).split())  # libpq's messages run over lines: one line here
    return StoreUnavailable(f"PostgreSQL is unreachable right now; try again ({reason})")


class PostgresStore(Store):
    """Asks in PostgreSQL, shared by any number of gateway processes on any hosts.

    ``remember`` is how many conversations this process remembers the open ask of, so
    that a message there is decided without a read: one round trip instead of two
    (see :mod:`parkgate.store.recent`); 0 reads every time.

    ``schema`` puts the tables in that schema. Opening migrates, and the migration
    creates the schema when it does not exist yet (``created_schema`` says whether this
    object did; the store logs it too). With ``migrate=False`` the store creates
    nothing: a schema that does not exist is a :class:`StoreError` naming it.
    ``applied`` lists the migrations this object applied (on opening, or by
    :meth:`migrate`).
    """

    def __init__(
        self,
        url: str,
        *,
        schema: str | None = None,
        min_size: int = 1,
        max_size: int = 10,
        migrate: bool = True,
        timeout: float = 10.0,
        remember: int = DEFAULT_SIZE,
    ) -> None:
        self.url = url
        self.schema = schema
        self.recent = RecentOpenAsks(remember)
        self.applied: list[int] = []
        self.created_schema = False

        def configure(conn: psycopg.Connection[Any]) -> None:
            if schema:
                conn.execute(pgsql.SQL("SET search_path TO {}").format(pgsql.Identifier(schema)))
            conn._parkgate = _Kept(conn)  # type: ignore[attr-defined]  # goes when the connection goes

        self._pool = ConnectionPool(
            url,
            min_size=min_size,
            max_size=max_size,
            configure=configure,
            open=False,
            timeout=timeout,
            # Transactions are explicit BEGIN ... COMMIT (see transaction()); anything else
            # run on a pooled connection is one statement that commits itself.
            kwargs={"autocommit": True},
            # Drop connections that died with a server restart instead of handing them out.
            check=check_idle_connection,
        )
        # While opening, the pool retries in its own thread and logs a warning per failed
        # try; the store raises the reason once instead (one clear error for a CLI or a host).
        pool_log = logging.getLogger("psycopg.pool")
        pool_log.addFilter(_drop_records)
        try:
            self._pool.open(wait=True, timeout=timeout)
        except PoolTimeout as error:
            self._pool.close()
            raise _unavailable(_why_unreachable(url, timeout) or error) from None
        finally:
            pool_log.removeFilter(_drop_records)
        try:
            if migrate:
                self.migrate()
            elif schema:
                self._require_schema(schema)
        except BaseException:
            self._pool.close()  # no pool is left open behind a store that failed to open
            raise

    def _require_schema(self, schema: str) -> None:
        """Raise a clear :class:`StoreError` unless ``schema`` exists (one query)."""
        try:
            with self._pool.connection() as conn:
                found = _schema_exists(conn, schema)
        except (psycopg.OperationalError, PoolTimeout) as error:
            raise _unavailable(error) from None
        if not found:
            raise SchemaMissing(schema)

    @contextmanager
    def transaction(self) -> Iterator[Transaction]:
        tx: PostgresTransaction | None = None
        try:
            # getconn/putconn rather than the pool's connection() context manager: this runs
            # once a message, and that wrapper adds a generator, timing statistics and the
            # connection's own __exit__ (a no-op here: autocommit) to each one.
            conn = self._pool.getconn()
            try:
                try:
                    # One pipeline is one transaction. In pipeline mode a read flushes what
                    # is queued (the lock, earlier writes) without a Sync, and PostgreSQL runs
                    # every statement up to the Sync at the end as one implicit transaction,
                    # committed by that Sync or rolled back on any error. So a message costs
                    # two round trips (lock and read; writes and commit), or one when its
                    # read is answered from memory, and no BEGIN/COMMIT statements; each
                    # statement still gets its own snapshot (READ COMMITTED). The pipeline is
                    # entered at the first statement sent: a guessed message that folds into
                    # the one statement parkgate_step needs none (autocommit commits it).
                    failed: psycopg.Error | None = None
                    try:
                        with ExitStack() as stack:
                            cur = _kept(conn).cursor
                            tx = PostgresTransaction(cur, self.recent, partial(_enter_pipeline, conn, stack))
                            try:
                                yield tx
                                tx.finish()
                            except BaseException as error:
                                status = conn.pgconn.pipeline_status
                                if status == pq.PipelineStatus.ABORTED and isinstance(error, psycopg.Error):
                                    # A statement failed on the server (a stale parkgate_claim,
                                    # a unique key) and its error surfaced mid-body: the server
                                    # skips the rest and the Sync rolls back. Leave the pipeline
                                    # with no exception in flight (psycopg would log one) and
                                    # raise after.
                                    failed = error
                                else:
                                    # The closing Sync would commit what was already sent, so
                                    # abort first (in an implicit transaction ROLLBACK aborts it).
                                    if status == pq.PipelineStatus.ON:
                                        with suppress(psycopg.Error):
                                            cur.execute(b"ROLLBACK")
                                    raise
                    except psycopg.Error:
                        if failed is None:
                            raise
                    if failed is not None:
                        raise failed
                except BaseException as error:
                    if isinstance(error, psycopg.errors.InvalidSqlStatementName):
                        # psycopg counts a statement as prepared that the server never
                        # prepared: its PREPARE was queued behind a statement that failed
                        # (a stale parkgate_claim) and skipped. Only a new connection, with
                        # an empty cache on both sides, is sure to agree; the pool makes one.
                        conn.close()
                    elif not conn.broken:
                        conn.rollback()  # no-op when the failure already ended the transaction
                    raise
            finally:
                self._pool.putconn(conn)  # a broken or closed connection is replaced, not reused
        except BaseException as error:
            if tx is not None:
                self.recent.failed(tx.states)
            translated = _translate(error, guessed=tx is not None and tx.guessed)
            if translated is None:
                raise
            raise translated from None
        assert tx is not None  # the body ran: the pool gave a connection
        self.recent.committed(tx.states)

    @contextmanager
    def _pooled(self) -> Iterator[psycopg.Connection[Any]]:
        """A pooled connection outside :meth:`transaction`; :class:`StoreClosed` once closed."""
        try:
            with self._pool.connection() as conn:
                yield conn
        except PoolClosed:
            raise StoreClosed("PostgreSQL store") from None

    def schema_version(self) -> int:
        with self._pooled() as conn:
            row = conn.execute("SELECT to_regclass('schema_migrations') IS NOT NULL").fetchone()
            if not row or not row[0]:
                return 0
            found = conn.execute("SELECT coalesce(max(version), 0) FROM schema_migrations").fetchone()
            return int(found[0]) if found else 0

    def migrate(self) -> list[int]:
        applied: list[int] = []
        created = False
        try:
            with self._pooled() as conn, conn.transaction():
                conn.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK_KEY,))
                if self.schema:
                    created = self._create_schema(conn, self.schema)
                conn.execute(
                    "CREATE TABLE IF NOT EXISTS schema_migrations "
                    "(version INTEGER PRIMARY KEY, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())"
                )
                done = {row[0] for row in conn.execute("SELECT version FROM schema_migrations")}
                for version, script in iter_migrations("postgres"):
                    if version in done:
                        continue
                    conn.execute(script.encode())
                    conn.execute("INSERT INTO schema_migrations (version) VALUES (%s)", (version,))
                    applied.append(version)
        except (psycopg.OperationalError, PoolTimeout) as error:
            raise _unavailable(error) from None
        except _SchemaRefused as refused:
            raise StoreError(
                f"the PostgreSQL schema {self.schema!r} does not exist and could not be created "
                f"({' '.join(str(refused.error).split())}): create it (CREATE SCHEMA ...) or grant "
                "CREATE on the database, or fix the name"
            ) from None
        except psycopg.Error as error:
            raise StoreError(f"migration failed: {error}") from None
        if created:
            self.created_schema = True
            logger.info("created PostgreSQL schema %s", self.schema)
        self.applied.extend(applied)
        return applied

    @staticmethod
    def _create_schema(conn: psycopg.Connection[Any], schema: str) -> bool:
        """Create ``schema`` unless it exists; whether it was created.

        Run under the migration lock, so two migrators never race on it. Existence is
        checked first: ``CREATE SCHEMA IF NOT EXISTS`` needs the ``CREATE`` privilege on the
        database even when the schema is there, and a deployment may have only the schema.
        The connection's ``search_path`` names the schema already, and takes it from here.
        """
        if _schema_exists(conn, schema):
            return False
        try:
            conn.execute(pgsql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(pgsql.Identifier(schema)))
        except psycopg.errors.InsufficientPrivilege as error:
            raise _SchemaRefused(error) from None
        return True

    def watch(self, signal: CloseSignal) -> Watcher:
        return PostgresWatcher(self.url, self.schema, signal)

    def close(self) -> None:
        """Close the pool; the store refuses to be used afterwards (:class:`StoreClosed`)."""
        self._pool.close()


def create_schema(url: str, prefix: str = "parkgate") -> str:
    """Create a new, uniquely named schema and return its name.

    For a store of its own inside a shared database (a test run, a tenant): pass the
    name to ``PostgresStore(url, schema=...)`` and :func:`drop_schema` it afterwards.
    """
    import os
    import uuid

    name = f"{prefix}_{os.getpid()}_{uuid.uuid4().hex[:10]}"
    try:
        with psycopg.connect(url, autocommit=True, connect_timeout=10) as conn:
            conn.execute(pgsql.SQL("CREATE SCHEMA {}").format(pgsql.Identifier(name)))
    except psycopg.OperationalError as error:
        raise _unavailable(error) from None
    return name


def drop_schema(url: str, name: str) -> None:
    """Drop ``name`` with everything in it; quiet when the server is out of reach."""
    try:
        with psycopg.connect(url, autocommit=True, connect_timeout=5) as conn:
            conn.execute(pgsql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(pgsql.Identifier(name)))
    except psycopg.OperationalError:
        pass
