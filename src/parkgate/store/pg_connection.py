"""What the PostgreSQL store keeps on each pooled connection, the pool's check of an idle
one, and what a driver or pool error means to the store (:func:`translate_error`)."""

from __future__ import annotations

import select
from collections.abc import Callable
from functools import partial
from typing import Any

import psycopg
from psycopg_pool import ConnectionPool, PoolClosed, PoolTimeout

from parkgate.store.base import StoreClosed, StoreConflict, StoreError, StoreUnavailable, retry_after_guess


class ConnectionHandles:
    """What the store keeps on each pooled connection, made once when the pool opens it.

    ``cursor`` is the one cursor every transaction on the connection uses: a cursor is
    only a client-side object (its adapters and last result), so one per message would
    be client work for nothing. ``readable`` polls the socket without
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


def handles(conn: psycopg.Connection[Any]) -> ConnectionHandles:
    found: ConnectionHandles = conn._parkgate  # type: ignore[attr-defined]  # set by the pool's configure
    return found


def check_idle_connection(conn: psycopg.Connection[Any]) -> None:
    """The pool's check on every checkout, without a round trip on a healthy connection.

    An idle connection has nothing to read: if its socket is readable, the server spoke
    out of turn (the termination notice of a restart, or end of file), and the full
    check (an empty query) confirms it and raises, so the pool drops it instead of
    handing it out. A connection that is merely idle costs one ``poll``, not a query.
    """
    if conn.closed or conn.broken:
        raise psycopg.OperationalError("the connection is closed")
    if handles(conn).readable():
        ConnectionPool.check_connection(conn)


_RETRYABLE = (
    psycopg.errors.UniqueViolation,
    psycopg.errors.DeadlockDetected,
    psycopg.errors.SerializationFailure,
    psycopg.errors.InvalidSqlStatementName,
)


def translate_error(error: BaseException, *, guessed: bool) -> StoreError | None:
    """The store's error for a failed transaction; ``None`` to let ``error`` through."""
    if isinstance(error, PoolClosed):
        return StoreClosed("PostgreSQL store")
    if isinstance(error, _RETRYABLE):
        # A racing worker won, or a remembered state was out of date (parkgate_claim), or
        # a connection's prepared statements fell out of step: nothing was written, and
        # the gateway retries the whole unit, which then reads what is really there.
        return StoreConflict(str(error))
    if isinstance(error, (psycopg.OperationalError, PoolTimeout)):
        return unavailable(error)
    if isinstance(error, psycopg.errors.ReadOnlySqlTransaction):
        return StoreError(f"PostgreSQL refused the write: {error}")
    return retry_after_guess(error) if guessed else None


def unavailable(error: Exception) -> StoreUnavailable:
    reason = " ".join(str(error).split())  # libpq's messages run over lines: one line here
    return StoreUnavailable(f"PostgreSQL is unreachable right now; try again ({reason})")
