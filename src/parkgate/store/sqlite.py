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
processes. The writes that queue while a commit is in flight share the next transaction,
each in a savepoint, and its one sync (group commit, :class:`FileWriters`); each is
answered only after that COMMIT. ``busy_timeout`` bounds that wait; past it the caller gets
:class:`StoreUnavailable`, never a half-written row. Opening the file and reading
errors is :mod:`parkgate.store.sqlite_file`'s: a message's path is here and in ``sql``.
"""

from __future__ import annotations

import logging
import shutil
import sqlite3
import tempfile
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
    _WriteNeeded,
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


#: The most units one group commit holds: a bound on how long its first one waits.
MAX_GROUP = 64


class _Group:
    """One transaction on a store's writer connection that several units share, and its end."""

    __slots__ = ("_gate", "conn", "ended", "error", "failed", "members")

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        #: The units whose writes it holds (each released its savepoint).
        self.members = 0
        #: Whether it committed or failed; its members wait for it before they answer.
        self.ended = False
        #: Held until it ends: a lock is the cheapest latch (most groups hold one unit, which
        #: ends it itself and never waits), and each member that waits lets the next one in.
        self._gate = threading.Lock()
        self._gate.acquire()
        self.failed = False
        #: The COMMIT's error, if the COMMIT failed (``None``: rolled back by another unit's failure).
        self.error: sqlite3.Error | None = None

    def end(self) -> None:
        """It committed or failed: wake its members (called once, with the writer lock held)."""
        self.ended = True
        self._gate.release()

    def wait(self, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds for its end; whether it ended."""
        if self.ended:
            return True
        if not self._gate.acquire(timeout=timeout):
            return False
        self._gate.release()  # the next waiting member's turn
        return True


log = logging.getLogger("parkgate")

#: Group commits between background checkpoints: a message changes a handful of pages,
#: so about 2,000-4,000 WAL pages (8-16 MB) are copied by each.
CHECKPOINT_EVERY_COMMITS = 500
#: How long the checkpoint's connection waits for SQLite's checkpoint lock (another
#: process's checkpoint) before it gives up this turn.
CHECKPOINT_BUSY_MS = 1_000


class Checkpointer:
    """The background checkpoints of one file in this process: the WAL checkpointed off
    the commit path.

    SQLite checkpoints a WAL file inside the commit that crosses ``wal_autocheckpoint``
    pages: that commit copies every page changed since the last checkpoint into the
    database file and syncs it, and the message it carries waits for all of it (a stall
    of tens to hundreds of milliseconds in a run of 5 ms messages). Here a thread of this
    process checkpoints instead, ``PASSIVE`` (it never blocks a writer or a reader),
    every :data:`CHECKPOINT_EVERY_COMMITS` group commits; the commit path only counts.
    ``wal_autocheckpoint`` stays set, far higher (``WAL_AUTOCHECKPOINT_PAGES``), as the
    WAL's bound if the thread ever falls behind.

    Args:
        path: The database file.
        every: Group commits between checkpoints.
    """

    def __init__(self, path: Path, every: int = CHECKPOINT_EVERY_COMMITS) -> None:
        self.path = path
        self.every = every
        self._commits = 0
        self._running = threading.Lock()
        #: Checkpoints made, and the last one's ``(busy, WAL frames, frames checkpointed)``.
        self.passes = 0
        self.last: tuple[int, int, int] | None = None
        #: The file's writers in this process, whose lock the catch-up pass holds.
        self.writers: FileWriters | None = None

    def committed(self) -> None:
        """Count one group commit (called with the file's writer lock held); every
        :attr:`every` commits, start a checkpoint unless one is still running."""
        self._commits += 1
        if self._commits < self.every:
            return
        if not self._running.acquire(blocking=False):
            return  # the last one is still copying: count on, try at the next commit
        self._commits = 0
        threading.Thread(target=self._checkpoint, name="parkgate-checkpoint", daemon=True).start()

    def _checkpoint(self) -> None:
        """Copy the WAL into the file while the writers go on, then catch up with what they
        added, holding this process's writer lock for that short pass alone, so the
        checkpoint completes and the next commit writes the WAL from its start again (a
        checkpoint that never catches up with the writers never lets the WAL be reused)."""
        try:
            conn = sqlite3.connect(str(self.path), isolation_level=None, timeout=CHECKPOINT_BUSY_MS / 1000)
            try:
                conn.execute("PRAGMA wal_checkpoint(PASSIVE)")  # the bulk, beside the writers
                writers = self.writers
                if writers is None:
                    row = conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
                else:
                    writers.take()
                    try:
                        writers.commit()  # an open group's writes are committed first
                        row = conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
                    finally:
                        writers.lock.release()
                self.last = (int(row[0]), int(row[1]), int(row[2]))
                self.passes += 1
            finally:
                conn.close()
        except sqlite3.Error as error:  # the next turn tries again; the commit path's bound still holds
            log.debug("background checkpoint of %s failed: %s", self.path, error)
        finally:
            self._running.release()

    def join(self, timeout: float | None = None) -> bool:
        """Wait for a running checkpoint to end; ``False`` if it did not in ``timeout``."""
        if not self._running.acquire(timeout=-1 if timeout is None else timeout):
            return False
        self._running.release()
        return True


class FileWriters:
    """This process's writers to one file: their queue (:func:`writer_lock`) and the group
    commit they share.

    A writer takes the lock, then joins the open group (a transaction begun on the
    store's writer connection; the first joiner sends ``BEGIN IMMEDIATE``) inside a
    savepoint of its own, and lets the lock go. The group is committed, with one sync,
    when a writer lets the lock go and none waits for it (or it holds :data:`MAX_GROUP`):
    writes that arrive while a commit is in flight queue on the lock and share the next
    one. Every method but :meth:`take` is called with the lock held.
    """

    def __init__(self, lock: threading.Lock, checkpointer: Checkpointer | None = None) -> None:
        self.lock = lock
        self.group: _Group | None = None
        #: The file's background checkpoints, counted a group commit at a time.
        self.checkpointer = checkpointer
        if checkpointer is not None:
            checkpointer.writers = self
        #: Threads queued for the lock (a group stays open for them).
        self.waiting = 0
        self._count = threading.Lock()

    def take(self) -> None:
        """Queue for the lock (this process's turn, before SQLite's)."""
        with self._count:
            self.waiting += 1
        try:
            if not self.lock.acquire(timeout=BUSY_TIMEOUT_MS / 1000):
                # As SQLite's busy handler ends: the caller gets StoreUnavailable.
                raise sqlite3.OperationalError("database is locked by this process's other writers past busy_timeout")
        finally:
            with self._count:
                self.waiting -= 1

    def join(self, conn: sqlite3.Connection, solo: bool) -> tuple[_Group, bool]:
        """The open group on ``conn`` (begun now if there is none, or if ``solo``), and
        whether it was begun now (its first unit needs no savepoint)."""
        group = self.group
        if group is not None and (solo or group.conn is not conn):
            self.commit()
            group = None
        if group is not None:
            return group, False
        conn.execute("BEGIN IMMEDIATE")
        self.group = _Group(conn)
        return self.group, True

    def commit(self) -> None:
        """Commit the open group, if any (one sync for all its units), and wake its members."""
        group, self.group = self.group, None
        if group is None:
            return
        try:
            group.conn.execute("COMMIT")
        except sqlite3.Error as error:
            group.failed, group.error = True, error
            if group.conn.in_transaction:
                group.conn.execute("ROLLBACK")
        finally:
            group.end()
        if self.checkpointer is not None and not group.failed:
            self.checkpointer.committed()

    def abandon(self, failed: bool) -> None:
        """The open group is gone (rolled back): ``failed`` when it held other units' writes."""
        group, self.group = self.group, None
        if group is not None:
            group.failed = failed
            group.end()

    def release(self, solo: bool = False) -> None:
        """Let the next writer go; the open group is committed first unless a writer waits to join it."""
        group = self.group
        if group is not None and (solo or not self.waiting or group.members >= MAX_GROUP):
            self.commit()
        self.lock.release()

    def wait(self, group: _Group) -> None:
        """Wait until ``group`` has committed or failed (committing it here if the writer
        that was to join it gave up queueing)."""
        while not group.wait(BUSY_TIMEOUT_MS / 1000):
            self.take()
            if self.group is group:
                self.commit()
            self.lock.release()


#: Each file's writers in this process (see :class:`FileWriters`).
_file_writers: dict[Path, FileWriters] = {}


def file_writers(path: Path) -> FileWriters:
    """The writers of the file at ``path`` in this process: one queue, one open group."""
    key = path.resolve()
    with _writer_locks_guard:
        found = _file_writers.get(key)
    if found is None:
        lock = writer_lock(key)
        with _writer_locks_guard:
            found = _file_writers.setdefault(key, FileWriters(lock, Checkpointer(key)))
    return found


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
        writers: FileWriters | None = None,
        writer_conn: sqlite3.Connection | None = None,
        solo: bool = False,
    ) -> None:
        self.cursor = cursor
        #: This process's writers to the file (see :class:`FileWriters`): their lock is
        #: held from the first write to the savepoint's release, or to the COMMIT or
        #: ROLLBACK of a deferred transaction, while ``writing`` is set.
        self._writers = writers if writers is not None else FileWriters(threading.Lock())
        #: Where the group commits run (default: this transaction's own connection).
        self._writer_conn = writer_conn
        #: A unit retried after its group failed: it commits alone.
        self.solo = solo
        self.writing = False
        #: The group commit this unit joined (its writes go on the writer connection), and
        #: whether it holds a savepoint there (every unit but a group's first).
        self.group: _Group | None = None
        self.savepoint = False
        self.guesses = Guesses(recent, decides_on_nothing_open=False)
        self.began = False
        #: Whether the first statement ran in a deferred transaction (no write lock taken).
        self.deferred = False
        self._reads_first = intent is not Intent.WRITE
        #: A unit on an event loop's thread: it never takes the write lock (see :meth:`lock`).
        self._read_only = intent is Intent.READ_ONLY
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
        """Take the write lock now: this process's turn first (:class:`FileWriters`), then
        a place in the open group commit (``BEGIN IMMEDIATE`` on the writer connection if
        none is open, else a savepoint in it). A deferred transaction upgrades on its own
        connection at its next write instead, once the open group has committed."""
        if self.writing:
            return
        if self._read_only:
            raise _WriteNeeded("this unit reads on an event loop's thread and came to a write")
        self._writers.take()
        self.writing = True
        if self.began:
            self._writers.commit()
            return
        conn = self._writer_conn if self._writer_conn is not None else self.cursor.connection
        self.group, first = self._writers.join(conn, self.solo)
        self.cursor = conn.cursor()
        self.began = True
        if not first:
            self.cursor.execute("SAVEPOINT unit")
            self.savepoint = True

    def release(self) -> None:
        """Let the process's next writer go (committing the open group if none waits)."""
        if self.writing:
            self.writing = False
            self._writers.release(self.solo)

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
        """A reply is guessed only onto a remembered open ask (a "nothing open" is read).
        A read-only unit stops at an open ask: any message to one writes (its step or
        its refusal is logged). A read-only unit's message with a ``message_id`` reads
        nothing: where this process remembers nothing open in the conversation it finds
        none (its stored reply's insert checks that, and that the ``message_id`` is new:
        :meth:`Gateway.record_inline <parkgate.gateway.Gateway.record_inline>`); anywhere
        else it stops, and a worker thread reads."""
        if self._read_only and message_id is not None:
            if self.guesses.remembers_nothing_open(conversation_id):
                return None, None
            raise _WriteNeeded("a message_id in a conversation not remembered free: read by a writer")
        known = self.guesses.guess(conversation_id, parking=False)
        if not isinstance(known, sql.Marker):
            if self._read_only:
                raise _WriteNeeded("a message to an open ask writes")
            self._unchecked = known
            return None, known
        if message_id is not None:
            self.lock()  # the message is recorded: a redelivery reads under the lock
        earlier, found = sql.read_message_context(self, conversation_id, message_id)
        if found is not None and self._read_only:
            raise _WriteNeeded("a message to an open ask writes")
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


#: The name that asks for a database private to one store and gone when it closes.
MEMORY = ":memory:"


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

    ``:memory:`` (or ``sqlite:///:memory:``) is a database of this store alone that is gone
    when it closes: a file in a private temporary folder, removed by :meth:`close`. A
    file, not SQLite's in-memory database, because each thread and the group commit have
    a connection of their own, and SQLite gives each connection its own in-memory one.
    """

    #: A read in WAL mode never waits for a writer: a unit that only reads may run on an event loop.
    reads_inline = True

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
        #: The private folder of a ``:memory:`` store, removed with it on close.
        self._scratch: Path | None = None
        if str(self.path) == MEMORY:
            self._scratch = Path(tempfile.mkdtemp(prefix="parkgate-memory-"))
            self.path = self._scratch / "parkgate.db"
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
        self._writers = file_writers(self.path)
        #: The connection every group commit of this store runs on (made on first use).
        self._writer_conn: sqlite3.Connection | None = None
        self._closed = False
        try:
            check_is_ours(self.path)
            if migrate:
                self.migrate()
        except BaseException:
            self.close()  # no connection is left open on a file we refused
            raise

    def _connection(self, waits: bool = True) -> sqlite3.Connection:
        """This thread's connection; with ``waits`` false, its connection that never waits
        for a lock (a read-only unit's on an event loop: a busy file hands the unit to a
        worker thread rather than holding the loop up to the busy timeout)."""
        name = "conn" if waits else "inline_conn"
        conn: sqlite3.Connection | None = getattr(self._local, name, None)
        if conn is None:
            if self._closed:
                raise StoreClosed(str(self.path))
            conn = connect(self._target, self._uri, self.synchronous, self.path, None if waits else 0)
            setattr(self._local, name, conn)
            with self._lock:
                self._all.append(conn)
        return conn

    def _writing_connection(self) -> sqlite3.Connection:
        conn = self._writer_conn
        if conn is None:
            with self._lock:
                if self._closed:
                    raise StoreClosed(str(self.path))
                if self._writer_conn is None:
                    self._writer_conn = connect(self._target, self._uri, self.synchronous, self.path)
                    self._all.append(self._writer_conn)
                conn = self._writer_conn
        return conn

    def transaction(self, intent: Intent = Intent.WRITE) -> AbstractContextManager[Transaction]:
        """One unit of work: its writes join the open group commit, or with
        ``Intent.READ_FIRST`` it reads first in a deferred transaction and takes the lock
        at its first write (see :class:`SQLiteTransaction`, :class:`FileWriters`)."""
        return _TransactionScope(self, intent)

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
            self._writer_conn = None
        self._local = threading.local()
        if self._scratch is not None:
            shutil.rmtree(self._scratch, ignore_errors=True)


class _TransactionScope(AbstractContextManager[SQLiteTransaction]):
    """One transaction (``BEGIN`` at its first statement) ... ``COMMIT``, rolled back on
    any exception; what it left each conversation in is remembered on commit. A unit in a
    group commit answers only once the group's COMMIT has returned; a failure of its own
    rolls back its savepoint alone, and a group that fails as a whole has each of its
    units retried alone (:class:`StoreConflict`), so each gets what it would have alone.

    A class rather than a ``@contextmanager`` generator: it runs on every message, and a
    generator adds its own machinery to each one.
    """

    __slots__ = ("_conn", "_intent", "_store", "_tx")

    def __init__(self, store: SQLiteStore, intent: Intent) -> None:
        self._store = store
        self._conn = store._connection(waits=intent is not Intent.READ_ONLY)
        self._intent = intent

    def __enter__(self) -> SQLiteTransaction:
        store = self._store
        solo = getattr(store._local, "solo", False)
        if solo:
            store._local.solo = False
        # One cursor for the BEGIN, the statements and the COMMIT (Connection.execute
        # would make a cursor for each of the two).
        self._tx = SQLiteTransaction(
            self._conn.cursor(), store.recent, self._intent, store._writers, store._writing_connection(), solo
        )
        return self._tx

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: object) -> None:
        try:
            if self._tx.group is not None:
                self._end_in_group(kind, error)
            else:
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
        if isinstance(error, _WriteNeeded):
            return  # nothing was written and nothing learnt: the unit runs again as a writer
        if tx.deferred and isinstance(error, sqlite3.Error) and busy(error):
            # A deferred read's first write found the lock held or the file changed since
            # the read: no guess was wrong (the memory stays); the retry locks first.
            raise StoreConflict(
                f"{self._store.path}: another writer came first; retrying with the write lock"
            ) from None
        self._failed(error)

    def _end_in_group(self, kind: type[BaseException] | None, error: BaseException | None) -> None:
        """Release the savepoint and answer once the group commits; or roll this unit back alone."""
        tx, group = self._tx, self._tx.group
        assert group is not None
        if kind is None:
            try:
                tx.finish()
                if tx.savepoint:
                    tx.cursor.execute("RELEASE unit")
            except (sqlite3.Error, _StaleGuess) as failed:
                error = failed
            else:
                group.members += 1
                tx.release()  # the next writer joins, or the group commits now
                self._store._writers.wait(group)
                tx.guesses.end(committed=not group.failed)
                if not group.failed:
                    return
                if group.error is not None and group.members == 1:
                    raise classify(group.error, self._store.path) from None  # it was alone: its own error
                self._store._local.solo = True
                raise StoreConflict(f"{self._store.path}: the group commit failed; retrying alone") from None
        # This unit's own failure, with the lock held: only its writes are undone.
        conn = group.conn
        if not conn.in_transaction:  # SQLite rolled the whole group back (a full disk, an I/O error)
            self._store._writers.abandon(failed=True)
        elif tx.savepoint:
            conn.execute("ROLLBACK TO unit")
            conn.execute("RELEASE unit")
        else:  # the group's first unit: the group holds nothing else yet
            conn.execute("ROLLBACK")
            self._store._writers.abandon(failed=False)
        self._failed(error)

    def _failed(self, error: BaseException | None) -> None:
        """Forget the guesses of a rolled-back unit and raise what its caller should see."""
        tx = self._tx
        tx.guesses.end(committed=False)
        if isinstance(error, sqlite3.Error):
            raise classify(error, self._store.path) from None
        retry = retry_after_guess(error) if tx.guesses.guessed else None
        if retry is not None:
            raise retry from None
