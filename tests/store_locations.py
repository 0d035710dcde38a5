"""Where test databases live, and this process's supply of them (for ``tests/conftest.py``).

A module of its own, not the conftest, so that a test can import it (the tests of the
supply itself do). :class:`Databases` pays for migrations once per test process:

- SQLite: a template file, migrated once in a folder of this process's own, copied for
  each test that wants a migrated database.
- PostgreSQL: a pool of migrated schemas named for this process (``pgpool_<pid>_<n>``).
  A schema a test gives back is emptied (``TRUNCATE ... RESTART IDENTITY CASCADE`` of
  every table but ``schema_migrations``) and handed to the next test, unless its catalog
  fingerprint (relations and columns, constraints, triggers, functions, applied versions)
  changed, or it could not be emptied: then it is dropped.

Empty locations (an unmigrated file path, a new empty schema) are made as before, for
migration tests, missing-schema tests and servers that migrate as they start.
"""

from __future__ import annotations

import itertools
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql as pgsql

from parkgate.store import Store
from parkgate.store.postgres import create_schema as _create_schema
from parkgate.store.postgres import drop_schema


def create_schema(url: str) -> str:
    """Create a uniquely named, empty schema and return its name."""
    return _create_schema(url, "pgt")


@dataclass(frozen=True)
class StoreLocation:
    """Where one test database lives: a SQLite file, or a schema on a PostgreSQL server."""

    engine: str  # "sqlite" | "postgres"
    url: str
    schema: str | None = None
    path: Path | None = None

    def open(self, **options: Any) -> Store:
        """A new store object (its own connections or pool) on this database."""
        if self.engine == "postgres":
            from parkgate.store.postgres import PostgresStore

            return PostgresStore(self.url, schema=self.schema, **options)
        from parkgate.store.sqlite import SQLiteStore

        return SQLiteStore(self.url, **options)

    def raw_query(self, statement: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        """Run ``statement`` (``?`` placeholders) on a fresh raw connection, outside parkgate."""
        if self.engine == "postgres":
            assert self.schema is not None
            with psycopg.connect(self.url, autocommit=True) as conn:
                conn.execute(pgsql.SQL("SET search_path TO {}").format(pgsql.Identifier(self.schema)))
                cur = conn.execute(statement.replace("?", "%s").encode(), params)
                return list(cur.fetchall()) if cur.description else []
        import sqlite3

        assert self.path is not None
        conn = sqlite3.connect(self.path, isolation_level=None)
        try:
            return list(conn.execute(statement, params).fetchall())
        finally:
            conn.close()


class Databases:
    """This process's database locations: fresh ones, and migrated ones paid for once.

    SQLite: a migrated template file, made once per process in a folder of its own
    (pytest's per-process temporary folder), copied for each test that wants a migrated
    database. PostgreSQL: a pool of migrated schemas named for this process; a schema a
    test gives back is emptied (``TRUNCATE ... RESTART IDENTITY CASCADE`` of every table but
    ``schema_migrations``) and reused, unless its catalog fingerprint (tables, columns,
    indexes, constraints, triggers, functions, applied versions) changed, in which case it
    is dropped. Fresh (unmigrated) locations are made as before, for the tests of
    migrations and of missing schemas.
    """

    def __init__(self, root: Path) -> None:
        self.root = root
        self._sqlite_template: Path | None = None
        self._numbers = itertools.count(1)
        self._free: dict[str, list[str]] = {}  # url: schemas there, migrated and empty
        self._fingerprints: dict[tuple[str, str], str] = {}

    # -- SQLite ----------------------------------------------------------------------

    def sqlite(self, folder: Path, *, migrated: bool) -> StoreLocation:
        path = folder / "parkgate.db"
        if migrated:
            shutil.copyfile(self._template(), path)
        return StoreLocation("sqlite", f"sqlite:///{path}", path=path)

    def _template(self) -> Path:
        if self._sqlite_template is None:
            folder = self.root / f"template-{os.getpid()}"
            folder.mkdir()
            path = folder / "parkgate.db"
            from parkgate.store.sqlite import SQLiteStore

            SQLiteStore(f"sqlite:///{path}").close()
            for side in ("-wal", "-shm", "-journal"):  # a clean close leaves none; a copy needs none
                assert not Path(f"{path}{side}").exists(), f"the template left {path}{side}"
            self._sqlite_template = path
        return self._sqlite_template

    # -- PostgreSQL ------------------------------------------------------------------

    def postgres(self, url: str, *, migrated: bool) -> StoreLocation:
        if not migrated:
            return StoreLocation("postgres", url, schema=create_schema(url))
        free = self._free.get(url)
        if free:
            return StoreLocation("postgres", url, schema=free.pop())
        name = f"pgpool_{os.getpid()}_{next(self._numbers)}"
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(pgsql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(pgsql.Identifier(name)))
            conn.execute(pgsql.SQL("CREATE SCHEMA {}").format(pgsql.Identifier(name)))
        from parkgate.store.postgres import PostgresStore

        PostgresStore(url, schema=name, min_size=1, max_size=1).close()
        with psycopg.connect(url, autocommit=True) as conn:
            self._fingerprints[(url, name)] = _fingerprint(conn, name)
        return StoreLocation("postgres", url, schema=name)

    def give_back(self, location: StoreLocation) -> None:
        """End a test's use of ``location``: reuse a pooled schema if it is intact, else drop it."""
        if location.engine != "postgres" or location.schema is None:
            return  # a SQLite file goes with the test's temporary folder
        key = (location.url, location.schema)
        expected = self._fingerprints.get(key)
        if expected is not None and _empty_for_reuse(location.url, location.schema, expected):
            self._free.setdefault(location.url, []).append(location.schema)
            return
        self._fingerprints.pop(key, None)
        drop_schema(location.url, location.schema)

    def close(self) -> None:
        for url, names in self._free.items():
            for name in names:
                drop_schema(url, name)
        self._free.clear()


#: One catalog query: what a migrated schema is made of, as one digest.
_FINGERPRINT = """
SELECT md5(coalesce(string_agg(part, ' | ' ORDER BY part), '')) FROM (
    SELECT 'rel ' || c.relname || ' ' || c.relkind::text || ' ' || coalesce(a.attname || ' '
           || format_type(a.atttypid, a.atttypmod) || ' ' || a.attnotnull::text, '') AS part
    FROM pg_class c
    LEFT JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
    WHERE c.relnamespace = to_regnamespace(%(schema)s)
    UNION ALL
    SELECT 'con ' || conname || ' ' || md5(pg_get_constraintdef(oid)) FROM pg_constraint
    WHERE connamespace = to_regnamespace(%(schema)s)
    UNION ALL
    SELECT 'trg ' || t.tgname || ' ' || t.tgrelid::regclass::text FROM pg_trigger t
    JOIN pg_class c ON c.oid = t.tgrelid
    WHERE c.relnamespace = to_regnamespace(%(schema)s) AND NOT t.tgisinternal
    UNION ALL
    SELECT 'fn ' || proname || ' ' || md5(prosrc) FROM pg_proc WHERE pronamespace = to_regnamespace(%(schema)s)
) AS parts
"""


def _fingerprint(conn: psycopg.Connection[Any], schema: str) -> str:
    row = conn.execute(_FINGERPRINT, {"schema": schema}).fetchone()
    versions = conn.execute(
        pgsql.SQL("SELECT string_agg(version::text, ',' ORDER BY version) FROM {}.schema_migrations").format(
            pgsql.Identifier(schema)
        )
    ).fetchone()
    return f"{row[0] if row else ''}/{versions[0] if versions else ''}"


def _empty_for_reuse(url: str, schema: str, expected: str) -> bool:
    """Empty every parkgate table of ``schema`` if its make-up is still ``expected``."""
    try:
        with psycopg.connect(url, autocommit=True) as conn:
            if _fingerprint(conn, schema) != expected:
                return False
            conn.execute("SET lock_timeout = '5s'")
            tables = conn.execute(
                "SELECT tablename FROM pg_tables WHERE schemaname = %s AND tablename <> 'schema_migrations'", (schema,)
            ).fetchall()
            if tables:
                names = pgsql.SQL(", ").join(pgsql.Identifier(schema, table) for (table,) in tables)
                conn.execute(pgsql.SQL("TRUNCATE {} RESTART IDENTITY CASCADE").format(names))
        return True
    except psycopg.Error:
        return False  # gone, locked past the timeout, or the server away: not reusable
