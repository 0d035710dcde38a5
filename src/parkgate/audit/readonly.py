"""Read-only connections to someone else's database, SQLite or PostgreSQL.

An audit never writes: a SQLite file is opened with the ``mode=ro`` URI and
``PRAGMA query_only``, a PostgreSQL connection runs one ``READ ONLY`` transaction that is
rolled back at the end. A database that is missing or out of reach is a
:class:`~parkgate.errors.StoreError` naming the place, never the URL (it may hold a password).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

from parkgate.errors import StoreError, StoreUnavailable
from parkgate.store import is_postgres_url
from parkgate.store.sqlite_file import path_from_url

#: Seconds a PostgreSQL connection may take before the audit gives up.
CONNECT_TIMEOUT_SECONDS = 10


@dataclass
class Reader:
    """One read-only transaction: :meth:`rows` runs a query in it."""

    engine: str
    _cursor: Any

    def rows(self, statement: str, params: Sequence[Any] | None = None) -> list[tuple[Any, ...]]:
        """The rows ``statement`` returns. Placeholders are ``?``; a statement without
        ``params`` is sent exactly as written (a ``%`` or ``?`` in it is text)."""
        if params is not None and self.engine == "postgres":
            statement = statement.replace("?", "%s")
        try:
            if params is None:
                self._cursor.execute(statement)
            else:
                self._cursor.execute(statement, params)
            return [tuple(row) for row in self._cursor.fetchall()]
        except (sqlite3.Error, _postgres_error()) as error:
            raise StoreError(f"the {self.engine} query failed: {str(error).strip()}") from None

    def columns(self) -> list[str]:
        """The column names of the last query's rows."""
        return [str(column[0]) for column in self._cursor.description or ()]


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
def read_only(url: str) -> Iterator[Reader]:
    """A :class:`Reader` on ``url`` (``sqlite:///file.db``, a path, ``postgresql://...``)."""
    if is_postgres_url(url):
        with _postgres(url) as reader:
            yield reader
    else:
        with _sqlite(path_from_url(url)) as reader:
            yield reader


@contextmanager
def _sqlite(path: Path) -> Iterator[Reader]:
    if not path.is_file():
        raise StoreError(f"no SQLite database at {path}")
    try:
        connection = sqlite3.connect(f"file:{quote(str(path.resolve()))}?mode=ro", uri=True)
    except sqlite3.Error as error:
        raise StoreError(f"cannot open {path} read-only: {error}") from None
    try:
        connection.execute("PRAGMA query_only = ON")
        yield Reader("sqlite", connection.cursor())
    finally:
        connection.close()


@contextmanager
def _postgres(url: str) -> Iterator[Reader]:
    import psycopg

    try:
        connection = psycopg.connect(url, connect_timeout=CONNECT_TIMEOUT_SECONDS)
    except psycopg.Error as error:
        raise StoreUnavailable(f"cannot reach the PostgreSQL database: {str(error).strip()}") from None
    try:
        connection.read_only = True
        with connection.cursor() as cursor:
            cursor.execute("SET TRANSACTION READ ONLY")
            yield Reader("postgres", cursor)
    finally:
        connection.rollback()
        connection.close()
