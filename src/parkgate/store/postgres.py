"""The shared store: PostgreSQL through psycopg 3 and its connection pool.

For several gateway processes on several hosts. Each message's transaction reads the
conversation's open ask ``FOR UPDATE``, so racing workers serialise on that row; the
unique partial index keeps a conversation to one open ask, and the primary key of
``inbound_messages`` applies a redelivered ``message_id`` once.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import Any

import psycopg
from psycopg import sql as pgsql
from psycopg_pool import ConnectionPool, PoolClosed, PoolTimeout

from parkgate.store.base import Intent, SchemaMissing, Store, StoreClosed, StoreError, Transaction
from parkgate.store.migrations import MigrationTable, apply_migrations
from parkgate.store.pg_connection import ConnectionHandles, check_idle_connection, unavailable
from parkgate.store.pg_transaction import DIALECT as DIALECT
from parkgate.store.pg_transaction import PipelinedTransaction, PostgresTransaction
from parkgate.store.signal import CloseSignal
from parkgate.store.sql import DEFAULT_SIZE, RecentOpenAsks
from parkgate.store.watch import PostgresWatcher

MIGRATION_LOCK_KEY = 0x7061726B  # "park": one migrator at a time across processes
MIGRATIONS = MigrationTable(
    engine="postgres",
    create="CREATE TABLE IF NOT EXISTS schema_migrations "
    "(version INTEGER PRIMARY KEY, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())",
    record="INSERT INTO schema_migrations (version) VALUES (%s)",
)
logger = logging.getLogger(__name__)


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


class PostgresStore(Store):
    """Asks in PostgreSQL, shared by any number of gateway processes on any hosts.

    ``remember`` is how many conversations this process remembers the open ask of, so
    that a message there is decided without a read: one round trip instead of two
    (see :class:`parkgate.store.sql.Guesses`); 0 reads every time.

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

        self._pool = _open_pool(url, schema, min_size, max_size, timeout)
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
            raise unavailable(error) from None
        if not found:
            raise SchemaMissing(schema)

    def transaction(self, intent: Intent = Intent.WRITE) -> AbstractContextManager[Transaction]:
        """One unit of work; ``intent`` changes nothing here: reads take no lock but an
        open ask's ``FOR UPDATE``, which a unit that finds one needs anyway."""
        return PipelinedTransaction(self._pool, self.recent, PostgresTransaction)

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

    def ping(self) -> None:
        """``SELECT 1`` on a pooled connection: one round trip to the server."""
        try:
            with self._pooled() as conn:
                conn.execute("SELECT 1").fetchone()
        except (psycopg.OperationalError, PoolTimeout) as error:
            raise unavailable(error) from None

    def migrate(self) -> list[int]:
        created = False
        try:
            with self._pooled() as conn, conn.transaction():
                conn.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK_KEY,))
                if self.schema:
                    created = self._create_schema(conn, self.schema)
                applied = apply_migrations(
                    lambda statement, params: conn.execute(statement, params),
                    lambda script: conn.execute(script.encode()),
                    MIGRATIONS,
                )
        except (psycopg.OperationalError, PoolTimeout) as error:
            raise unavailable(error) from None
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

    def watch(self, signal: CloseSignal) -> PostgresWatcher:
        return PostgresWatcher(self.url, self.schema, signal)

    def close(self) -> None:
        """Close the pool; the store refuses to be used afterwards (:class:`StoreClosed`)."""
        self._pool.close()


def _open_pool(url: str, schema: str | None, min_size: int, max_size: int, timeout: float) -> ConnectionPool[Any]:
    """An open pool whose connections use ``schema``; :class:`StoreUnavailable` with the
    server's own reason when none opens within ``timeout``."""

    def configure(conn: psycopg.Connection[Any]) -> None:
        if schema:
            conn.execute(pgsql.SQL("SET search_path TO {}").format(pgsql.Identifier(schema)))
        conn._parkgate = ConnectionHandles(conn)  # type: ignore[attr-defined]  # goes when the connection goes

    pool: ConnectionPool[Any] = ConnectionPool(
        url,
        min_size=min_size,
        max_size=max_size,
        configure=configure,
        open=False,
        timeout=timeout,
        # Transactions are pipelines (see PipelinedTransaction); anything else run on a
        # pooled connection is one statement that commits itself.
        kwargs={"autocommit": True},
        # Drop connections that died with a server restart instead of handing them out.
        check=check_idle_connection,
    )
    # While opening, the pool retries in its own thread and logs a warning per failed
    # try; the store raises the reason once instead (one clear error for a CLI or a host).
    pool_log = logging.getLogger("psycopg.pool")
    pool_log.addFilter(_drop_records)
    try:
        pool.open(wait=True, timeout=timeout)
    except PoolTimeout as error:
        pool.close()
        raise unavailable(_why_unreachable(url, timeout) or error) from None
    finally:
        pool_log.removeFilter(_drop_records)
    return pool


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
        raise unavailable(error) from None
    return name


def drop_schema(url: str, name: str) -> None:
    """Drop ``name`` with everything in it; quiet when the server is out of reach."""
    try:
        with psycopg.connect(url, autocommit=True, connect_timeout=5) as conn:
            conn.execute(pgsql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(pgsql.Identifier(name)))
    except psycopg.OperationalError:
        pass
