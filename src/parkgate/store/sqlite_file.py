"""The SQLite file: its URL, its connections' settings, its migrations, and what a
driver error means (:func:`classify`). What the engine (:mod:`parkgate.store.sqlite`)
needs when it opens a file or something fails, off a message's path."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

from parkgate.store.base import StoreConflict, StoreError, StoreUnavailable
from parkgate.store.migrations import MigrationTable, apply_migrations

BUSY_TIMEOUT_MS = 10_000
#: WAL pages past which a commit checkpoints the file itself (SQLite's default is 1,000).
#: Checkpoints are made off the commit path, by :class:`parkgate.store.sqlite.Checkpointer`,
#: long before this; it stays as the WAL's bound if that thread ever falls behind (a
#: commit that crosses it copies every changed page into the file and syncs it).
WAL_AUTOCHECKPOINT_PAGES = 40_000
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


def busy(error: sqlite3.Error) -> bool:
    """Whether ``error`` is ``SQLITE_BUSY`` with any extended code: the lock held by another
    writer, or (``SQLITE_BUSY_SNAPSHOT``) a read snapshot older than the file's last commit."""
    return getattr(error, "sqlite_errorcode", 0) & 0xFF == sqlite3.SQLITE_BUSY


def classify(error: sqlite3.Error, path: Path) -> StoreError:
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


def connect(
    target: str, uri: bool, synchronous: str, path: Path, busy_timeout_ms: int | None = None
) -> sqlite3.Connection:
    """A new connection to ``target`` in WAL mode with the store's settings; one that
    must never wait for a lock (an event loop's reads) has ``busy_timeout_ms`` 0 (default:
    :data:`BUSY_TIMEOUT_MS`, read at the call)."""
    if busy_timeout_ms is None:
        busy_timeout_ms = BUSY_TIMEOUT_MS
    conn: sqlite3.Connection | None = None
    try:
        conn = sqlite3.connect(
            target, isolation_level=None, check_same_thread=False, timeout=busy_timeout_ms / 1000, uri=uri
        )
        conn.execute(f"PRAGMA busy_timeout = {busy_timeout_ms}")
        conn.execute("PRAGMA foreign_keys = ON")
        if conn.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
            conn.execute("PRAGMA journal_mode = WAL")
        conn.execute(f"PRAGMA synchronous = {synchronous.upper()}")
        conn.execute(f"PRAGMA wal_autocheckpoint = {WAL_AUTOCHECKPOINT_PAGES}")
    except sqlite3.Error as error:
        if conn is not None:
            conn.close()
        raise classify(error, path) from None
    return conn


def check_location(path: Path, url: str, *, creating: bool) -> None:
    """Refuse a folder or a missing folder; without ``creating``, a missing or empty file."""
    if path.is_dir():
        raise StoreError(f"{path} is a folder, not a database file")
    if not path.parent.exists():
        raise StoreError(f"{path.parent} does not exist")
    if creating:
        return
    missing = "does not exist" if not path.exists() else "is empty" if _empty(path) else None
    if missing:
        raise StoreError(
            f"no parkgate database at {path}: the file {missing} "
            f"(`parkgate migrate --db {url}` sets one up), or fix the path"
        )


def _empty(path: Path) -> bool:
    try:
        return path.stat().st_size == 0
    except OSError:
        return False  # unreadable: connecting says why


def check_is_ours(path: Path) -> None:
    """Refuse a file that is not a parkgate database, looking without changing it."""
    if not path.exists() or path.stat().st_size == 0:
        return
    # Look with a read-only connection of its own: a file that is not ours must be left
    # byte for byte as it was (the normal connection would switch it to WAL first).
    try:
        probe = sqlite3.connect(f"{path.absolute().as_uri()}?mode=ro", uri=True)
    except sqlite3.Error as error:
        raise classify(error, path) from None
    try:
        names = {row[0] for row in probe.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    except sqlite3.Error as error:
        raise classify(error, path) from None
    finally:
        probe.close()
    if names and "schema_migrations" not in names:
        raise StoreError(
            f"{path}: not a parkgate database (it has tables {', '.join(sorted(names)[:5])} "
            "but no schema_migrations); point --db at a new or parkgate file"
        )


def run_script(conn: sqlite3.Connection, script: str) -> None:
    for statement in statements(script):
        conn.execute(statement)


def statements(script: str) -> list[str]:
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


def read_schema_version(conn: sqlite3.Connection) -> int:
    """The latest migration applied to the file ``conn`` is open on (0: none)."""
    try:
        row = conn.execute("SELECT max(version) FROM schema_migrations").fetchone()
    except sqlite3.OperationalError:
        return 0
    return int(row[0] or 0)


def ping_file(conn: sqlite3.Connection, path: Path) -> None:
    """``SELECT 1`` on ``conn``; a failure is the store's error for ``path``."""
    try:
        conn.execute("SELECT 1").fetchone()
    except sqlite3.Error as error:
        raise classify(error, path) from None


def migrate_file(conn: sqlite3.Connection, path: Path) -> list[int]:
    """Apply the migrations ``path`` lacks, under the write lock, in one transaction; their versions."""
    try:
        conn.execute("BEGIN IMMEDIATE")
        applied = apply_migrations(conn.execute, lambda script: run_script(conn, script), MIGRATIONS)
        conn.execute("COMMIT")
    except sqlite3.Error as error:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise classify(error, path) from None
    return applied


def check_options(synchronous: str | None, remember: object) -> str:
    """The ``synchronous`` setting to use (default ``full``), once both options are checked.

    Raises:
        StoreError: ``synchronous`` is not one of :data:`SYNCHRONOUS`, or ``remember`` is
            not a whole number of conversations, 0 or more.
    """
    chosen = (synchronous or "full").lower()
    if chosen not in SYNCHRONOUS:
        raise StoreError(f"synchronous must be one of {', '.join(SYNCHRONOUS)}, not {chosen!r}")
    if isinstance(remember, bool) or not isinstance(remember, int) or remember < 0:
        raise StoreError(f"remember must be a whole number of conversations, 0 or more, not {remember!r}")
    return chosen
