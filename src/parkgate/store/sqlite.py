"""The embedded store: one SQLite file in WAL mode, no set-up; the SQLite engine.

Each thread gets its own connection. A transaction that writes (:data:`Intent.WRITE`)
sends ``BEGIN IMMEDIATE`` before its first statement, so the write lock is taken before
any open ask is read: two writers on one file serialise. One that may find nothing to
change (:data:`Intent.READ_FIRST`: a message without ``message_id``) reads in a deferred
transaction, which takes no lock that other processes wait on; its first write upgrades,
and an upgrade refused (another writer holds the lock, or committed since the read) is a
:class:`StoreConflict` that the gateway retries with the lock first. A message in a
conversation this store remembers reads nothing and takes the lock only for its writes
(see :class:`SQLiteTransaction`). Writers in one process queue on the file's
:func:`writer_lock` before they ask SQLite for its lock, and are woken when it is free:
SQLite's busy handler, which sleeps in growing steps, is left to writers in other
processes. ``busy_timeout`` bounds that wait; past it the caller gets
:class:`StoreUnavailable`, never a half-written row. Opening the file and reading
errors is :mod:`parkgate.store.sqlite_file`'s: a message's path is here and in ``sql``.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Sequence
from contextlib import AbstractContextManager
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any

from parkgate.core.model import Ask, AskStatus, Run, encode_votes
from parkgate.store import sql
from parkgate.store.ask_rows import MUTABLE_ASK_SET
from parkgate.store.base import (
    Intent,
    Store,
    StoreClosed,
    StoreConflict,
    Transaction,
    retry_after_guess,
)
from parkgate.store.dialect import Dialect
from parkgate.store.open_asks_sql import SqlTables
from parkgate.store.signal import CloseSignal
from parkgate.store.sql import DEFAULT_SIZE, Guesses, RecentOpenAsks
from parkgate.store.sqlite_file import (
    BUSY_TIMEOUT_MS,
    busy,
    check_is_ours,
    check_location,
    check_options,
    classify,
    connect,
    migrate_file,
    parse_url,
    ping_file,
    read_schema_version,
)
from parkgate.store.watch import SQLiteWatcher
from parkgate.store.writes import Writes

# How this engine stores times: ISO 8601 text in UTC (microseconds); a due time is seconds
# since the epoch (a float), as migration 5's trigger computes it.

#: The last time encoded and its text. A message's writes stamp one ``now`` several times
#: (asked_at, last_touched, the run's updated_at...), and isoformat() is costly enough to
#: do once. One tuple, read and replaced whole, so threads never see a torn pair.
_last_encoded: tuple[datetime, str] | None = None


def encode_time(moment: datetime) -> str:
    """``moment`` as the stored text (UTC, microseconds); the last one is encoded once."""
    global _last_encoded
    last = _last_encoded
    if last is not None and last[0] is moment:
        return last[1]
    utc = moment if moment.tzinfo is UTC else moment.astimezone(UTC)  # the clock's times are UTC already
    text = utc.isoformat(timespec="microseconds")
    _last_encoded = (moment, text)
    return text


DIALECT = Dialect(
    placeholder="?",
    lock_suffix="",
    encode_time=encode_time,
    decode_time=datetime.fromisoformat,
    encode_due=datetime.timestamp,
    decode_due=partial(datetime.fromtimestamp, tz=UTC),
    # As migration 5's trigger computes due_at.
    due_expression=(
        "(round((julianday(substr(last_touched, 1, 19)) - 2440587.5) * 86400.0) "
        "+ CAST(substr(last_touched, 21, 6) AS INTEGER) / 1000000.0 + ttl_seconds)"
    ),
    skip_locked_suffix="",  # one writer at a time: BEGIN IMMEDIATE holds the file
)


#: One lock per database file in this process (see :func:`writer_lock`).
_writer_locks: dict[Path, threading.Lock] = {}
_writer_locks_guard = threading.Lock()


def writer_lock(path: Path) -> threading.Lock:
    """The lock this process's writers to the file at ``path`` take before SQLite's.

    A thread that waits in SQLite's busy handler sleeps in growing steps (up to 100 ms)
    and is not woken when the lock comes free; one waiting here is. Every store object on
    the same file shares the lock, so two stores in one process queue too.
    """
    key = path.resolve()
    with _writer_locks_guard:
        return _writer_locks.setdefault(key, threading.Lock())


class _StaleGuess(Exception):
    """The conversation was not as this process remembered it: retry with a real read."""


class SQLiteTransaction(SqlTables):
    """One transaction, begun at its first statement, that may decide from memory.

    ``BEGIN IMMEDIATE`` is sent just before the first statement of a unit that writes,
    and before the first write or the read of a message with a ``message_id`` (it always
    records one) of a unit that may only read; that unit's other reads begin a deferred
    transaction (``deferred`` is then set), whose first write upgrades or fails with
    ``SQLITE_BUSY``. A message whose conversation the store remembers reads nothing, so it
    is decided before the write lock is taken. The remembered open ask is checked by the first write that touches it
    (the ``UPDATE`` changes the row only if it is still open exactly as remembered: id,
    last touch, miss count and TTL, as PostgreSQL's ``parkgate_step`` checks); the stored
    reply's primary key refuses a ``message_id`` seen before; the unique index on open
    asks checks a new ask. A failed check rolls everything back and the gateway retries
    with a real read. The other tables' interfaces are small objects made on use.
    """

    dialect: Dialect = DIALECT

    def __init__(
        self,
        cursor: sqlite3.Cursor,
        recent: RecentOpenAsks,
        intent: Intent = Intent.WRITE,
        writer: threading.Lock | None = None,
    ) -> None:
        self.cursor = cursor
        #: The process's queue for this file's write lock (see :func:`writer_lock`); held
        #: from the first write to the COMMIT or ROLLBACK when ``writing`` is set.
        self._writer = writer if writer is not None else threading.Lock()
        self.writing = False
        self.guesses = Guesses(recent, decides_on_nothing_open=False)
        self.began = False
        #: Whether the first statement ran in a deferred transaction (no write lock taken).
        self.deferred = False
        self._reads_first = intent is Intent.READ_FIRST
        #: The state answered from memory and not yet checked by a write: the remembered
        #: open ask, or the id of a conversation remembered (or guessed) to have none.
        self._unchecked: Ask | str | None = None

    def query(self, statement: str, params: Sequence[Any] = ()) -> sqlite3.Cursor:
        """Run ``statement`` (after the ``BEGIN`` if it is the first); the cursor holds its rows."""
        if self.began:
            return self.cursor.execute(statement, params)
        if not self._reads_first:
            self.lock()
            return self.cursor.execute(statement, params)
        self.cursor.execute("BEGIN")
        self.began = True
        found = self.cursor.execute(statement, params)
        self.deferred = True  # after the statement: a busy wait on the first one is not an upgrade
        return found

    def lock(self) -> None:
        """Take the write lock now: this process's turn first (:func:`writer_lock`), then
        SQLite's (``BEGIN IMMEDIATE``) unless the transaction has begun; a deferred one
        upgrades at its next write, after the process's other writers are done."""
        if not self.writing:
            if not self._writer.acquire(timeout=BUSY_TIMEOUT_MS / 1000):
                # As SQLite's busy handler ends: the caller gets StoreUnavailable.
                raise sqlite3.OperationalError("database is locked by this process's other writers past busy_timeout")
            self.writing = True
        if not self.began:
            self.cursor.execute("BEGIN IMMEDIATE")
            self.began = True

    def release(self) -> None:
        """Let the process's next writer go (after the COMMIT or ROLLBACK)."""
        if self.writing:
            self.writing = False
            self._writer.release()

    def send(self, statement: str, params: Sequence[Any] = ()) -> None:
        """Run a statement whose result nobody reads."""
        self.query(statement, params)

    # -- reads -------------------------------------------------------------------------
    def open_ask(self, conversation_id: str) -> Ask | None:
        known = self.guesses.guess(conversation_id, parking=True)
        if not isinstance(known, sql.Marker):
            self._unchecked = known if known is not None else conversation_id
            return known
        found = sql.read_open_ask(self, conversation_id)
        self.guesses.states[conversation_id] = found
        return found

    def message_context(self, conversation_id: str, message_id: str | None) -> tuple[str | None, Ask | None]:
        """A reply is guessed only onto a remembered open ask (a "nothing open" is read)."""
        known = self.guesses.guess(conversation_id, parking=False)
        if not isinstance(known, sql.Marker):
            self._unchecked = known
            return None, known
        if message_id is not None:
            self.lock()  # the message is recorded: a redelivery reads under the lock
        earlier, found = sql.read_message_context(self, conversation_id, message_id)
        if earlier is None:
            self.guesses.states[conversation_id] = found
        return earlier, found

    # -- writes (each the check of a guess it touches) -----------------------------------------
    def write(self, writes: Writes) -> None:
        self.lock()
        self.guesses.wrote(writes)
        sql.apply_writes(writes, self, self.save_ask, self.insert_ask)

    def save_run(self, run: Run) -> None:
        """Insert ``run``, or update its status, outcome, answers and pending ask (bulk loads)."""
        self.send(*sql.run_upsert(run, DIALECT))

    def insert_ask(self, ask: Ask) -> None:
        """Insert ``ask``; the unique index on open asks checks a guessed "none open"."""
        if self._unchecked == ask.conversation_id:
            self._unchecked = None
        self.query(*sql.ask_insert(ask, DIALECT))

    def save_ask(self, ask: Ask) -> None:
        """Write the mutable fields of ``ask``, checked against the remembered ask if it is that one."""
        expected = self._unchecked
        if isinstance(expected, Ask) and expected.id == ask.id:
            self._unchecked = None
            self._save_if_unchanged(ask, expected)
            return
        if ask.status is AskStatus.OPEN:
            # An ask that stays open (a bounce, a re-show, a vote) changes only its last touch,
            # miss count and votes: leaving `status` out of the SET spares the two partial
            # indexes keyed on it. If the row is no longer open, the full UPDATE runs.
            self.query(
                "UPDATE asks SET last_touched = ?, mismatches = ?, votes = ? WHERE id = ? AND status = 'open'",
                (encode_time(ask.last_touched), ask.mismatches, encode_votes(ask.votes), ask.id),
            )
            if self.cursor.rowcount == 1:
                return
        self.query(*sql.save_ask(ask, DIALECT))

    def _save_if_unchanged(self, ask: Ask, expected: Ask) -> None:
        """Write ``ask`` over the row only if it is still ``expected``; else the guess was stale."""
        check = _as_remembered(expected)
        if ask.status is AskStatus.OPEN:  # as in save_ask: the partial indexes stay untouched
            touched = (encode_time(ask.last_touched), ask.mismatches, encode_votes(ask.votes))
            self.query(_TOUCH_IF_UNCHANGED, (*touched, *check))
        else:
            self.query(_SAVE_IF_UNCHANGED, (ask.status.value, *sql.mutable_fields(ask, DIALECT), *check))
        if self.cursor.rowcount != 1:
            raise _StaleGuess(f"ask {expected.id} changed since this process last saw it")

    def finish(self) -> None:
        """Check a guess that no write checked (a body that wrote nothing it touched)."""
        unchecked, self._unchecked = self._unchecked, None
        if unchecked is None:
            return
        if isinstance(unchecked, Ask):
            as_remembered = self.query(_STILL_UNCHANGED, _as_remembered(unchecked)).fetchone() is not None
        else:
            found = self.query("SELECT 1 FROM asks WHERE conversation_id = ? AND status = 'open'", (unchecked,))
            as_remembered = found.fetchone() is None
        if not as_remembered:
            raise _StaleGuess("the conversation changed since this process last saw it")


def _as_remembered(expected: Ask) -> tuple[Any, ...]:
    """The parameters of :data:`_UNCHANGED` for ``expected``."""
    return (expected.id, encode_time(expected.last_touched), expected.mismatches, expected.ttl_seconds)


_UNCHANGED = "id = ? AND status = 'open' AND last_touched = ? AND mismatches = ? AND ttl_seconds = ?"
_TOUCH_IF_UNCHANGED = f"UPDATE asks SET last_touched = ?, mismatches = ?, votes = ? WHERE {_UNCHANGED}"
_SAVE_IF_UNCHANGED = f"UPDATE asks SET status = ?, {MUTABLE_ASK_SET} WHERE {_UNCHANGED}"
_STILL_UNCHANGED = f"SELECT 1 FROM asks WHERE {_UNCHANGED}"


class SQLiteStore(Store):
    """Asks in one SQLite file (WAL mode). ``synchronous`` is ``"full"`` (default) or
    ``"normal"`` (see :data:`parkgate.store.sqlite_file.SYNCHRONOUS`); the URL's ``?synchronous=`` sets it too.

    Opening migrates, creating the file when it does not exist. With ``migrate=False``
    the store opens an existing file as it is and creates nothing: a missing or empty
    file is a :class:`StoreError` (``no parkgate database at PATH``), and is left as it was.
    ``applied`` lists the migrations this object applied (on opening, or by
    :meth:`migrate`).

    ``remember`` is how many conversations this store remembers the open ask of, so that
    a message there is decided before the write lock is taken and without a read (see
    :class:`SQLiteTransaction`); 0 reads every time.
    """

    def __init__(
        self,
        url: str = "sqlite:///parkgate.db",
        *,
        migrate: bool = True,
        synchronous: str | None = None,
        remember: int = DEFAULT_SIZE,
    ) -> None:
        self.url = url
        self.path, options = parse_url(url)
        self.synchronous = check_options(synchronous or options.get("synchronous"), remember)
        self.recent = RecentOpenAsks(remember)
        check_location(self.path, url, creating=migrate)
        #: Without migrate, connections open the file read-write but never create it (a
        #: file removed after this check is an error then, not a new empty database).
        self._uri = not migrate
        self._target = f"{self.path.absolute().as_uri()}?mode=rw" if self._uri else str(self.path)
        self.applied: list[int] = []
        self._local = threading.local()
        self._all: list[sqlite3.Connection] = []
        self._lock = threading.Lock()
        self._writer = writer_lock(self.path)
        self._closed = False
        try:
            check_is_ours(self.path)
            if migrate:
                self.migrate()
        except BaseException:
            self.close()  # no connection is left open on a file we refused
            raise

    def _connection(self) -> sqlite3.Connection:
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            if self._closed:
                raise StoreClosed(str(self.path))
            conn = connect(self._target, self._uri, self.synchronous, self.path)
            self._local.conn = conn
            with self._lock:
                self._all.append(conn)
        return conn

    def transaction(self, intent: Intent = Intent.WRITE) -> AbstractContextManager[Transaction]:
        """One unit of work: ``BEGIN IMMEDIATE`` first, or with ``Intent.READ_FIRST`` a
        deferred read that takes the lock at its first write (see :class:`SQLiteTransaction`)."""
        return _TransactionScope(self._connection(), self.path, self.recent, intent, self._writer)

    def schema_version(self) -> int:
        return read_schema_version(self._connection())

    def ping(self) -> None:
        """``SELECT 1`` on this thread's connection: the file is open and answers."""
        ping_file(self._connection(), self.path)

    def migrate(self) -> list[int]:
        applied = migrate_file(self._connection(), self.path)
        self.applied.extend(applied)
        return applied

    def watch(self, signal: CloseSignal) -> SQLiteWatcher:
        return SQLiteWatcher(self._target, self._uri, signal)

    def close(self) -> None:
        """Close every connection; the store refuses to be used afterwards (:class:`StoreClosed`)."""
        with self._lock:
            self._closed = True
            for conn in self._all:
                conn.close()
            self._all.clear()
        self._local = threading.local()


class _TransactionScope(AbstractContextManager[SQLiteTransaction]):
    """One transaction (``BEGIN`` at its first statement) ... ``COMMIT``, rolled back on
    any exception; what it left each conversation in is remembered on commit.

    A class rather than a ``@contextmanager`` generator: it runs on every message, and a
    generator adds its own machinery to each one.
    """

    __slots__ = ("_conn", "_intent", "_path", "_recent", "_tx", "_writer")

    def __init__(
        self, conn: sqlite3.Connection, path: Path, recent: RecentOpenAsks, intent: Intent, writer: threading.Lock
    ) -> None:
        self._conn = conn
        self._path = path
        self._recent = recent
        self._intent = intent
        self._writer = writer

    def __enter__(self) -> SQLiteTransaction:
        # One cursor for the BEGIN, the statements and the COMMIT (Connection.execute
        # would make a cursor for each of the two).
        self._tx = SQLiteTransaction(self._conn.cursor(), self._recent, self._intent, self._writer)
        return self._tx

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: object) -> None:
        try:
            self._end(kind, error)
        finally:
            self._tx.release()

    def _end(self, kind: type[BaseException] | None, error: BaseException | None) -> None:
        """COMMIT, or ROLLBACK and raise what the caller should see."""
        tx = self._tx
        if kind is None:
            try:
                tx.finish()
                if tx.began:
                    tx.cursor.execute("COMMIT")
                tx.guesses.end(committed=True)
                return
            except (sqlite3.Error, _StaleGuess) as failed:
                error = failed
        if self._conn.in_transaction:
            self._conn.execute("ROLLBACK")
        if tx.deferred and isinstance(error, sqlite3.Error) and busy(error):
            # A deferred read's first write found the lock held or the file changed since
            # the read: no guess was wrong (the memory stays); the retry locks first.
            raise StoreConflict(f"{self._path}: another writer came first; retrying with the write lock") from None
        tx.guesses.end(committed=False)
        if isinstance(error, sqlite3.Error):
            raise classify(error, self._path) from None
        retry = retry_after_guess(error) if tx.guesses.guessed else None
        if retry is not None:
            raise retry from None
