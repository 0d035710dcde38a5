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
from contextlib import AbstractContextManager
from pathlib import Path

from parkgate.signal import CloseSignal, Watcher
from parkgate.store.base import (
    MigrationTable,
    Store,
    StoreClosed,
    StoreConflict,
    StoreError,
    StoreUnavailable,
    Transaction,
    apply_migrations,
)
from parkgate.store.recent import DEFAULT_SIZE, RecentOpenAsks, retry_after_guess
from parkgate.store.sqlite_transaction import DIALECT as DIALECT
from parkgate.store.sqlite_transaction import SQLiteTransaction, _StaleGuess
from parkgate.store.watch import SQLiteWatcher

BUSY_TIMEOUT_MS = 10_000
#: WAL pages between automatic checkpoints (SQLite's default is 1,000). A checkpoint copies
#: every page changed since the last one into the database file and syncs it, inside the
#: commit that crosses the mark. Messages touch pages all over the file, so fewer, larger
#: checkpoints write each hot page fewer times (a WAL of up to ~16 MB).
WAL_AUTOCHECKPOINT_PAGES = 4_000
MIGRATIONS = MigrationTable(
    engine="sqlite",
    create="CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL)",
    record="INSERT INTO schema_migrations (version, applied_at) VALUES (?, strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))",
)


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
        return _TransactionScope(self._connection(), self.path, self.recent)

    def schema_version(self) -> int:
        conn = self._connection()
        try:
            row = conn.execute("SELECT max(version) FROM schema_migrations").fetchone()
        except sqlite3.OperationalError:
            return 0
        return int(row[0] or 0)

    def ping(self) -> None:
        """``SELECT 1`` on this thread's connection: the file is open and answers."""
        try:
            self._connection().execute("SELECT 1").fetchone()
        except sqlite3.Error as error:
            raise _classify(error, self.path) from None

    def migrate(self) -> list[int]:
        conn = self._connection()
        try:
            conn.execute("BEGIN IMMEDIATE")
            applied = apply_migrations(conn.execute, lambda script: _run_script(conn, script), MIGRATIONS)
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


class _TransactionScope(AbstractContextManager[SQLiteTransaction]):
    """One transaction (``BEGIN IMMEDIATE`` at its first statement) ... ``COMMIT``, rolled
    back on any exception; what it left each conversation in is remembered on commit.

    A class rather than a ``@contextmanager`` generator: it runs on every message, and a
    generator adds its own machinery to each one.
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


def _run_script(conn: sqlite3.Connection, script: str) -> None:
    for statement in _statements(script):
        conn.execute(statement)


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
