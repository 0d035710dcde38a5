"""Read-only connections to someone else's database, SQLite or PostgreSQL, bounded.

An audit never writes: a SQLite file is opened with the ``mode=ro`` URI and
``PRAGMA query_only``, a PostgreSQL connection runs one ``READ ONLY`` transaction that is
rolled back at the end. A database that is missing or out of reach is a
:class:`~parkgate.errors.StoreError` naming the place, never the URL (it may hold a password).

An audit is also bounded (:class:`Bounds`): the database it reads may be hostile, and a
few kilobytes of SQLite can define a view that never ends or one of millions of rows. All
its queries together get ``timeout`` seconds (PostgreSQL's ``statement_timeout``, set to
what is left before each query; SQLite's progress handler), and one query returns at most
``max_rows`` rows, read a batch at a time (a PostgreSQL server-side cursor): one more is a
:class:`~parkgate.errors.StoreError`, never the rest read into memory.
"""

from __future__ import annotations

import itertools
import sqlite3
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

from parkgate.errors import OutOfBounds, StoreError, StoreUnavailable
from parkgate.store import is_postgres_url
from parkgate.store.sqlite_file import path_from_url

#: Seconds a PostgreSQL connection may take before the audit gives up.
CONNECT_TIMEOUT_SECONDS = 10
#: The defaults of ``parkgate audit clock --timeout`` and ``--max-rows``.
DEFAULT_TIMEOUT_SECONDS = 30.0
DEFAULT_MAX_ROWS = 10_000
#: Rows fetched at a time, and SQLite virtual-machine steps between two deadline checks.
_BATCH = 500
_SQLITE_STEPS = 1_000
_cursor_names = itertools.count()


@dataclass(frozen=True)
class Bounds:
    """What an audit's read may cost: ``timeout`` seconds for all its queries together,
    ``max_rows`` rows from any one query."""

    timeout: float = DEFAULT_TIMEOUT_SECONDS
    max_rows: int = DEFAULT_MAX_ROWS

    def __post_init__(self) -> None:
        if not self.timeout > 0:
            raise StoreError(f"the time limit must be over 0 seconds, not {self.timeout:g}")
        if self.max_rows < 1:
            raise StoreError(f"the row limit must be at least 1, not {self.max_rows}")

    def timed_out(self) -> OutOfBounds:
        """The error for a read that ran past :attr:`timeout`."""
        return OutOfBounds(f"the query ran past the {self.timeout:g} s time limit (--timeout); nothing more was read")

    def too_many(self) -> OutOfBounds:
        """The error for a query that returns more than :attr:`max_rows` rows."""
        return OutOfBounds(
            f"the query returns more than {self.max_rows} rows (--max-rows); narrow it or raise the limit"
        )


@dataclass
class Reader:
    """One read-only transaction: :meth:`rows` runs a query in it, within :attr:`bounds`."""

    engine: str
    _connection: Any
    bounds: Bounds = field(default_factory=Bounds)
    deadline: float = 0.0
    _description: Sequence[Any] = ()

    def rows(self, statement: str, params: Sequence[Any] | None = None) -> list[tuple[Any, ...]]:
        """The rows ``statement`` returns, at most ``bounds.max_rows`` of them.
        Placeholders are ``?``; a statement without ``params`` is sent exactly as written
        (a ``%`` or ``?`` in it is text).

        Raises:
            StoreError: The query fails, runs past the deadline, or returns too many rows.
        """
        if params is not None and self.engine == "postgres":
            statement = statement.replace("?", "%s")
        if self.remaining() <= 0:
            raise self.bounds.timed_out()
        try:
            with self._cursor() as cursor:
                if params is None:
                    cursor.execute(statement)
                else:
                    cursor.execute(statement, params)
                self._description = cursor.description or ()
                return self._fetch(cursor)
        except (sqlite3.Error, _postgres_error()) as error:
            if self._timed_out(error):
                raise self.bounds.timed_out() from None
            raise StoreError(f"the {self.engine} query failed: {str(error).strip()}") from None
        except RecursionError:  # a JSON value nested deeper than Python parses
            raise StoreError(f"the {self.engine} query returned a value nested too deeply to read") from None

    def remaining(self) -> float:
        """Seconds left before the deadline."""
        return self.deadline - time.monotonic()

    def columns(self) -> list[str]:
        """The column names of the last query's rows."""
        return [str(column[0]) for column in self._description]

    @contextmanager
    def _cursor(self) -> Iterator[Any]:
        """A cursor for one query: on PostgreSQL a server-side one, so rows arrive a batch
        at a time; on SQLite a plain one (it steps lazily; the progress handler stops it)."""
        if self.engine == "postgres":
            self._limit_statement()
            with self._connection.cursor(name=f"parkgate_audit_{next(_cursor_names)}") as cursor:
                yield cursor
        else:
            cursor = self._connection.cursor()
            try:
                yield cursor
            finally:
                cursor.close()

    def _limit_statement(self) -> None:
        """PostgreSQL's statement timeout set to the time left, so no statement outlives
        the deadline; past it, the deadline's error."""
        left = self.remaining()
        if left <= 0:
            raise self.bounds.timed_out()
        self._connection.execute(f"SET LOCAL statement_timeout = {max(1, int(left * 1000))}")

    def _fetch(self, cursor: Any) -> list[tuple[Any, ...]]:
        """The rows, a batch at a time, each batch (a ``FETCH`` on PostgreSQL) within the
        time left; one row over the limit stops the read."""
        rows: list[tuple[Any, ...]] = []
        while True:
            if self.engine == "postgres":
                self._limit_statement()
            batch = cursor.fetchmany(_BATCH)
            if not batch:
                return rows
            rows.extend(tuple(row) for row in batch)
            if len(rows) > self.bounds.max_rows:
                raise self.bounds.too_many()

    def _timed_out(self, error: Exception) -> bool:
        """Whether ``error`` is the deadline stopping a query (not some other failure)."""
        if self.engine == "postgres":
            import psycopg

            return isinstance(error, psycopg.errors.QueryCanceled)
        return isinstance(error, sqlite3.OperationalError) and self.remaining() <= 0


def _postgres_error() -> type[Exception]:
    import psycopg

    return psycopg.Error


def quote_identifier(name: str, engine: str) -> str:
    """``name`` as a quoted SQL identifier; a dot separates a schema from a table
    (``audit.pending_asks``).

    PostgreSQL quotes with ``"``. SQLite quotes with backticks: it reads a ``"``-quoted
    name that is no column as a string, so a misspelt column would match nothing
    instead of failing.
    """
    parts = name.split(".")
    if not all(part.strip() for part in parts):
        raise StoreError(f"{name!r} is not a table or column name")
    if any("\x00" in part for part in parts):
        raise StoreError(f"{name!r} holds a NUL character")
    mark = "`" if engine == "sqlite" else '"'
    return ".".join(mark + part.replace(mark, mark * 2) + mark for part in parts)


@contextmanager
def read_only(url: str, bounds: Bounds | None = None) -> Iterator[Reader]:
    """A :class:`Reader` on ``url`` (``sqlite:///file.db``, a path, ``postgresql://...``),
    its deadline ``bounds.timeout`` seconds from now."""
    bounds = bounds or Bounds()
    if is_postgres_url(url):
        with _postgres(url, bounds) as reader:
            yield reader
    else:
        with _sqlite(path_from_url(url), bounds) as reader:
            yield reader


@contextmanager
def _sqlite(path: Path, bounds: Bounds) -> Iterator[Reader]:
    if not path.is_file():
        raise StoreError(f"no SQLite database at {path}")
    try:
        connection = sqlite3.connect(f"file:{quote(str(path.resolve()))}?mode=ro", uri=True)
    except sqlite3.Error as error:
        raise StoreError(f"cannot open {path} read-only: {error}") from None
    reader = Reader("sqlite", connection, bounds, time.monotonic() + bounds.timeout)
    connection.set_progress_handler(lambda: reader.remaining() <= 0, _SQLITE_STEPS)
    try:
        connection.execute("PRAGMA query_only = ON")
        yield reader
    finally:
        connection.close()


@contextmanager
def _postgres(url: str, bounds: Bounds) -> Iterator[Reader]:
    import psycopg

    try:
        connection = psycopg.connect(url, connect_timeout=CONNECT_TIMEOUT_SECONDS)
    except psycopg.Error as error:
        raise StoreUnavailable(f"cannot reach the PostgreSQL database: {str(error).strip()}") from None
    try:
        connection.read_only = True
        connection.execute("SET TRANSACTION READ ONLY")
        yield Reader("postgres", connection, bounds, time.monotonic() + bounds.timeout)
    finally:
        connection.rollback()
        connection.close()
