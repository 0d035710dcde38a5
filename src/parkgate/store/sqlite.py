"""The embedded store: one SQLite file in WAL mode, no set-up.

Each thread gets its own connection. A transaction's first statement is preceded by
``BEGIN IMMEDIATE``, so the write lock is taken before any open ask is read: two writers
on one file serialise instead of deadlocking on a lock upgrade. A message in a
conversation this store remembers reads nothing and takes the lock only for its writes
(see :class:`SQLiteTransaction`). ``busy_timeout`` bounds the wait; past it the caller
gets :class:`StoreUnavailable`, never a half-written row.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Sequence
from contextlib import AbstractContextManager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from parkgate.core.model import Ask, AskStatus
from parkgate.signal import CloseSignal, Watcher
from parkgate.store.base import (
    Store,
    StoreClosed,
    StoreConflict,
    StoreError,
    StoreUnavailable,
    Transaction,
    iter_migrations,
)
from parkgate.store.recent import DEFAULT_SIZE, STALE, UNSEEN, Marker, RecentOpenAsks
from parkgate.store.sql import MUTABLE_ASK_SET, Dialect, RememberingTransaction, retry_after_guess
from parkgate.store.watch import SQLiteWatcher

#: The last time encoded and its text. A message's writes stamp one ``now`` several times
#: (asked_at, last_touched, the run's updated_at...), and isoformat() is a visible share of
#: a round trip. One tuple, read and replaced whole, so threads never see a torn pair.
_last_encoded: tuple[datetime, str] | None = None


def _encode(moment: datetime) -> str:
    global _last_encoded
    last = _last_encoded
    if last is not None and last[0] is moment:
        return last[1]
    utc = moment if moment.tzinfo is UTC else moment.astimezone(UTC)  # the clock's times are UTC already
    text = utc.isoformat(timespec="microseconds")
    _last_encoded = (moment, text)
    return text


def _decode(raw: str) -> datetime:
    return datetime.fromisoformat(raw)


def _encode_due(moment: datetime) -> float:
    return moment.timestamp()


def _decode_due(raw: float) -> datetime:
    return datetime.fromtimestamp(raw, UTC)


DIALECT = Dialect(
    placeholder="?",
    lock_suffix="",
    encode_time=_encode,
    decode_time=_decode,
    encode_due=_encode_due,
    decode_due=_decode_due,
    # As migration 5's trigger computes due_at.
    due_expression=(
        "(round((julianday(substr(last_touched, 1, 19)) - 2440587.5) * 86400.0) "
        "+ CAST(substr(last_touched, 21, 6) AS INTEGER) / 1000000.0 + ttl_seconds)"
    ),
    skip_locked_suffix="",  # one writer at a time: BEGIN IMMEDIATE holds the file
)
BUSY_TIMEOUT_MS = 10_000
#: WAL pages between automatic checkpoints (SQLite's default is 1,000). A checkpoint copies
#: every page changed since the last one into the database file and syncs it, inside the
#: commit that crosses the mark. Messages touch pages all over the file, so fewer, larger
#: checkpoints write each hot page fewer times: at 4,000 (a WAL of up to ~16 MB) a round
#: trip pays about half the checkpoint time it paid at 1,000.
WAL_AUTOCHECKPOINT_PAGES = 4_000


class _StaleGuess(Exception):
    """The conversation was not as this process remembered it: retry with a real read."""


class SQLiteTransaction(RememberingTransaction):
    """One write transaction, begun at its first statement, that may decide from memory.

    ``BEGIN IMMEDIATE`` is sent just before the first statement, not on entry: a message
    whose conversation ``recent`` remembers reads nothing, so it is decided (the matcher,
    the reply) before the write lock is taken, and another writer on the file waits only
    for the writes. The remembered open ask is then checked by the first write that
    touches it: the ``UPDATE`` changes the row only if it is still open exactly as
    remembered (id, last touch, miss count and TTL, as PostgreSQL's ``parkgate_step``
    checks), and the stored reply's primary key refuses a ``message_id`` seen before. A
    new ask where nothing is remembered open is checked by the unique index on open
    asks. Any failed check raises, everything rolls back, and the gateway retries the
    message with a real read (see :mod:`parkgate.store.recent`).
    """

    def __init__(self, cursor: sqlite3.Cursor, recent: RecentOpenAsks | None) -> None:
        super().__init__(cursor, DIALECT, recent)
        self.began = False
        #: The state answered from memory and not yet checked by a write: the remembered
        #: open ask, or the id of a conversation remembered (or guessed) to have none.
        self._unchecked: Ask | str | None = None
        self.guessed = False

    def _exec(self, statement: str, params: Sequence[Any] = ()) -> Any:
        if not self.began:
            self._cur.execute("BEGIN IMMEDIATE")
            self.began = True
        return self._cur.execute(statement, params)

    # -- reads that may be answered from memory --------------------------------------------
    def _guess(self, conversation_id: str, message_id: str | None, *, parking: bool) -> Ask | Marker | None:
        """The remembered open ask, or None (none open); a marker when it must be read.

        A reply is guessed only onto a remembered open ask: "none open" would need a read
        to check, which is what it saves. Parking a new ask guesses "none open" unless an
        ask is remembered: the unique index on open asks checks that for free.
        """
        if self._recent is None or self.guessed:
            return STALE  # one guess per transaction
        known = self._recent.get(conversation_id)
        if parking and (known is None or known is UNSEEN):
            self._unchecked = conversation_id
            known = None
        elif not isinstance(known, Ask):
            return STALE
        else:
            self._unchecked = known
        self.guessed = True
        self.states[conversation_id] = known
        return known

    # -- writes (each the check of a guess it touches) -----------------------------------------
    def insert_ask(self, ask: Ask) -> None:
        if self._unchecked == ask.conversation_id:
            self._unchecked = None  # the unique index on open asks refuses it if one is open
        super().insert_ask(ask)

    def _save_ask(self, ask: Ask) -> None:
        expected = self._unchecked
        if isinstance(expected, Ask) and expected.id == ask.id:
            self._unchecked = None
            self._save_if_unchanged(ask, expected)
            return
        if ask.status is AskStatus.OPEN:
            # An ask that stays open (a bounce, a re-show) changes only when it was last
            # touched and its miss count: an open ask has no outcome, answer or answer time.
            # Writing just those leaves `status` out of the SET, so SQLite does not rewrite
            # the two partial indexes keyed on it, and binds no NULLs (each costs the sqlite3
            # module an adaptation lookup). The row is still open (this transaction holds the
            # write lock), so the result is the same; if it is not, the full UPDATE runs.
            self._exec(
                "UPDATE asks SET last_touched = ?, mismatches = ? WHERE id = ? AND status = 'open'",
                (self._d.encode_time(ask.last_touched), ask.mismatches, ask.id),
            )
            if self._cur.rowcount == 1:
                return
        super()._save_ask(ask)

    def _save_if_unchanged(self, ask: Ask, expected: Ask) -> None:
        """Write ``ask`` over the row only if it is still ``expected``; else the guess was stale."""
        check = self._as_remembered(expected)
        if ask.status is AskStatus.OPEN:  # as in save_ask: the partial indexes stay untouched
            self._exec(_TOUCH_IF_UNCHANGED, (self._d.encode_time(ask.last_touched), ask.mismatches, *check))
        else:
            self._exec(_SAVE_IF_UNCHANGED, (ask.status.value, *self._mutable_fields(ask), *check))
        if self._cur.rowcount != 1:
            raise _StaleGuess(f"ask {expected.id} changed since this process last saw it")

    def finish(self) -> None:
        """Check a guess that no write checked (a body that wrote nothing it touched)."""
        unchecked, self._unchecked = self._unchecked, None
        if unchecked is None:
            return
        if isinstance(unchecked, Ask):
            self._exec(_STILL_UNCHANGED, self._as_remembered(unchecked))
            as_remembered = self._cur.fetchone() is not None
        else:
            self._exec("SELECT 1 FROM asks WHERE conversation_id = ? AND status = 'open'", (unchecked,))
            as_remembered = self._cur.fetchone() is None
        if not as_remembered:
            raise _StaleGuess("the conversation changed since this process last saw it")

    def _as_remembered(self, expected: Ask) -> tuple[Any, ...]:
        """The parameters of :data:`_UNCHANGED` for ``expected``."""
        return (expected.id, self._d.encode_time(expected.last_touched), expected.mismatches, expected.ttl_seconds)


_UNCHANGED = "id = ? AND status = 'open' AND last_touched = ? AND mismatches = ? AND ttl_seconds = ?"
_TOUCH_IF_UNCHANGED = f"UPDATE asks SET last_touched = ?, mismatches = ? WHERE {_UNCHANGED}"
_SAVE_IF_UNCHANGED = f"UPDATE asks SET status = ?, {MUTABLE_ASK_SET} WHERE {_UNCHANGED}"
_STILL_UNCHANGED = f"SELECT 1 FROM asks WHERE {_UNCHANGED}"


#: ``PRAGMA synchronous`` settings a store may use. ``full`` (the default) syncs the WAL
#: on every commit, so an acknowledged reply survives a power cut, as a PostgreSQL commit
#: with ``synchronous_commit = on`` does. ``normal`` syncs only at checkpoints: faster, and
#: the file is never corrupted, but the last commits before a power cut may be lost.
SYNCHRONOUS = ("full", "normal")


def parse_url(url: str) -> tuple[Path, dict[str, str]]:
    """``sqlite:///rel.db``, ``sqlite:////abs.db`` or a bare path, and the URL's options.

    A ``sqlite:`` URL may carry ``?synchronous=full|normal``; a bare path is taken as it is.
    """
    if url.startswith("sqlite:///"):
        location, _, query = url[len("sqlite:///") :].partition("?")
        options: dict[str, str] = {}
        for pair in filter(None, query.split("&")):
            key, _, value = pair.partition("=")
            if key != "synchronous":
                raise StoreError(f"unknown option {key!r} in SQLite URL {url!r}: the one option is synchronous")
            options[key] = value
        return Path(location), options
    if url.startswith("sqlite://"):
        raise StoreError(f"bad SQLite URL {url!r}: use sqlite:///relative.db or sqlite:////absolute.db")
    return Path(url), {}


def path_from_url(url: str) -> Path:
    """The database file a URL names (see :func:`parse_url`)."""
    return parse_url(url)[0]


def _read_only_storage(path: Path) -> bool:
    """True when the file (or, for a new file, its folder) cannot be written to."""
    try:
        if os.statvfs(path.parent).f_flag & os.ST_RDONLY:
            return True
        return not os.access(path if path.exists() else path.parent, os.W_OK)
    except OSError:
        return False


def _classify(error: sqlite3.Error, path: Path) -> StoreError:
    text = str(error)
    if isinstance(error, sqlite3.IntegrityError) and "UNIQUE" in text:
        return StoreConflict(f"{path}: {text}")
    if "locked" in text or "busy" in text:
        return StoreUnavailable(f"{path}: database is locked by another writer; try again ({text})")
    if "readonly" in text or "read-only" in text:
        return StoreError(f"{path}: the database file is read-only ({text})")
    if "not a database" in text or "malformed" in text:
        return StoreError(f"{path}: not a parkgate database (not a SQLite file: {text})")
    if _read_only_storage(path):
        return StoreError(f"{path}: the database file is read-only (file system or permissions forbid writes: {text})")
    if "disk" in text and ("full" in text or "I/O" in text):
        return StoreError(f"{path}: the disk is full or failing; nothing was written ({text})")
    return StoreError(f"{path}: {text}")


class SQLiteStore(Store):
    """Asks in one SQLite file (WAL mode). ``synchronous`` is ``"full"`` (default) or
    ``"normal"`` (see :data:`SYNCHRONOUS`); the URL's ``?synchronous=`` sets it too.

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
        chosen = (synchronous or options.get("synchronous") or "full").lower()
        if chosen not in SYNCHRONOUS:
            raise StoreError(f"synchronous must be one of {', '.join(SYNCHRONOUS)}, not {chosen!r}")
        self.synchronous = chosen
        if isinstance(remember, bool) or not isinstance(remember, int) or remember < 0:
            raise StoreError(f"remember must be a whole number of conversations, 0 or more, not {remember!r}")
        self.recent = RecentOpenAsks(remember)
        if self.path.is_dir():
            raise StoreError(f"{self.path} is a folder, not a database file")
        if not self.path.parent.exists():
            raise StoreError(f"{self.path.parent} does not exist")
        #: Without migrate, connections open the file read-write but never create it (a
        #: file removed after this check is an error then, not a new empty database).
        self._uri = not migrate
        self._target = f"{self.path.absolute().as_uri()}?mode=rw" if self._uri else str(self.path)
        if not migrate:
            missing = "does not exist" if not self.path.exists() else "is empty" if self._empty() else None
            if missing:
                raise StoreError(
                    f"no parkgate database at {self.path}: the file {missing} "
                    f"(`parkgate migrate --db {url}` sets one up), or fix the path"
                )
        self.applied: list[int] = []
        self._local = threading.local()
        self._all: list[sqlite3.Connection] = []
        self._lock = threading.Lock()
        self._closed = False
        try:
            self._check_is_ours()
            if migrate:
                self.migrate()
        except BaseException:
            self.close()  # no connection is left open on a file we refused
            raise

    def _empty(self) -> bool:
        try:
            return self.path.stat().st_size == 0
        except OSError:
            return False  # unreadable: connecting says why

    def _connection(self) -> sqlite3.Connection:
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            if self._closed:
                raise StoreClosed(str(self.path))
            try:
                conn = sqlite3.connect(
                    self._target,
                    isolation_level=None,
                    check_same_thread=False,
                    timeout=BUSY_TIMEOUT_MS / 1000,
                    uri=self._uri,
                )
                conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
                conn.execute("PRAGMA foreign_keys = ON")
                if conn.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
                    conn.execute("PRAGMA journal_mode = WAL")
                conn.execute(f"PRAGMA synchronous = {self.synchronous.upper()}")
                conn.execute(f"PRAGMA wal_autocheckpoint = {WAL_AUTOCHECKPOINT_PAGES}")
            except sqlite3.Error as error:
                if conn is not None:
                    conn.close()
                raise _classify(error, self.path) from None
            self._local.conn = conn
            with self._lock:
                self._all.append(conn)
        return conn

    def _check_is_ours(self) -> None:
        if not self.path.exists() or self.path.stat().st_size == 0:
            return
        # Look with a read-only connection of its own: a file that is not ours must be left
        # byte for byte as it was (the normal connection would switch it to WAL first).
        try:
            probe = sqlite3.connect(f"{self.path.absolute().as_uri()}?mode=ro", uri=True)
        except sqlite3.Error as error:
            raise _classify(error, self.path) from None
        try:
            names = {row[0] for row in probe.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        except sqlite3.Error as error:
            raise _classify(error, self.path) from None
        finally:
            probe.close()
        if names and "schema_migrations" not in names:
            raise StoreError(
                f"{self.path}: not a parkgate database (it has tables {', '.join(sorted(names)[:5])} "
                "but no schema_migrations); point --db at a new or parkgate file"
            )

    def transaction(self) -> AbstractContextManager[Transaction]:
        return self._unit()

    def _unit(self) -> _Unit:
        return _Unit(self._connection(), self.path, self.recent)

    def schema_version(self) -> int:
        conn = self._connection()
        try:
            row = conn.execute("SELECT max(version) FROM schema_migrations").fetchone()
        except sqlite3.OperationalError:
            return 0
        return int(row[0] or 0)

    def migrate(self) -> list[int]:
        conn = self._connection()
        applied: list[int] = []
        try:
            conn.execute("BEGIN IMMEDIATE")
            conn.execute(
                "CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL)"
            )
            done = {row[0] for row in conn.execute("SELECT version FROM schema_migrations")}
            for version, script in iter_migrations("sqlite"):
                if version in done:
                    continue
                for statement in _statements(script):
                    conn.execute(statement)
                conn.execute(
                    "INSERT INTO schema_migrations (version, applied_at) "
                    "VALUES (?, strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))",
                    (version,),
                )
                applied.append(version)
            conn.execute("COMMIT")
        except sqlite3.Error as error:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise _classify(error, self.path) from None
        self.applied.extend(applied)
        return applied

    def watch(self, signal: CloseSignal) -> Watcher:
        return SQLiteWatcher(self._target, self._uri, signal)

    def close(self) -> None:
        """Close every connection; the store refuses to be used afterwards (:class:`StoreClosed`)."""
        with self._lock:
            self._closed = True
            for conn in self._all:
                conn.close()
            self._all.clear()
        self._local = threading.local()


class _Unit(AbstractContextManager[SQLiteTransaction]):
    """One transaction (``BEGIN IMMEDIATE`` at its first statement) ... ``COMMIT``, rolled
    back on any exception; what it left each conversation in is remembered on commit.

    A class rather than a ``@contextmanager`` generator: it runs on every message, and the
    generator's machinery was a measurable share of a round trip.
    """

    __slots__ = ("_conn", "_path", "_recent", "_tx")

    def __init__(self, conn: sqlite3.Connection, path: Path, recent: RecentOpenAsks) -> None:
        self._conn = conn
        self._path = path
        self._recent = recent

    def __enter__(self) -> SQLiteTransaction:
        # One cursor for the BEGIN, the statements and the COMMIT (Connection.execute
        # would make a cursor for each of the two).
        self._tx = SQLiteTransaction(self._conn.cursor(), self._recent)
        return self._tx

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: object) -> None:
        tx = self._tx
        if kind is None:
            try:
                tx.finish()
                if tx.began:
                    tx._cur.execute("COMMIT")
                self._recent.committed(tx.states)
                return
            except (sqlite3.Error, _StaleGuess) as failed:
                error = failed
        if self._conn.in_transaction:
            self._conn.execute("ROLLBACK")
        self._recent.failed(tx.states)
        if isinstance(error, sqlite3.Error):
            raise _classify(error, self._path) from None
        retry = retry_after_guess(error) if tx.guessed else None
        if retry is not None:
            raise retry from None


def _statements(script: str) -> list[str]:
    """Split a migration script into whole statements (a trigger's body holds several)."""
    body = "\n".join(line for line in script.splitlines() if not line.strip().startswith("--"))
    statements: list[str] = []
    current = ""
    for part in body.split(";"):
        current += part + ";"
        if sqlite3.complete_statement(current):
            if current.strip(" \n;"):
                statements.append(current.strip())
            current = ""
    return statements
