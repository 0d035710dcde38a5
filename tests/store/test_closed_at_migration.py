"""Schema version 20 keeps when an ask closed apart from when it was answered: a store
from version 19 is upgraded in place, its closed asks given a ``closed_at`` (an expired
one's no later than its due time, not the read that found it lapsed) and ``answered_at``
left only on answered asks; a store made new keeps both as the machine decides them.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import psycopg
import pytest

from parkgate import Gateway, ManualClock
from parkgate.core.kinds import AskStatus
from parkgate.store.migrations import iter_migrations
from parkgate.store.postgres import PostgresStore
from schema_v12 import BEFORE_V20

T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)
#: PostgreSQL: version 20's parkgate_step dropped, and version 12's made again.
V20_STEP_BACK_TO_V12 = (
    "DROP FUNCTION parkgate_step(TEXT, TEXT, TEXT, TIMESTAMPTZ, INTEGER, DOUBLE PRECISION, TEXT, TEXT, TEXT, "
    "INTEGER, TIMESTAMPTZ, TIMESTAMPTZ, INTEGER, TEXT, TEXT, TEXT, TIMESTAMPTZ, TEXT, TEXT, TEXT, TEXT, "
    "TIMESTAMPTZ, TEXT, TIMESTAMPTZ)",
    "CREATE FUNCTION parkgate_step(" + dict(iter_migrations("postgres"))[12].split("CREATE FUNCTION parkgate_step(")[1],
)
TTL = 3.0
#: How long after its due time the lapsed ask was read (issue 45: stamped 21 s later).
READ_LATE = timedelta(seconds=21)


def _close_three(gateway: Gateway, clock: ManualClock) -> dict[str, str]:
    """An answered, a cancelled and an expired ask (its expiry read 21 s after it fell due)."""
    answered = gateway.ask("c-a", "Deploy?", ["Deploy", "Hold"], ttl=TTL).ask_id or ""
    cancelled = gateway.ask("c-c", "Deploy?", ["Deploy", "Hold"], ttl=TTL).ask_id or ""
    expired = gateway.ask("c-e", "Deploy?", ["Deploy", "Hold"], ttl=TTL).ask_id or ""
    clock.advance(1)
    gateway.handle("c-a", "1")
    gateway.cancel(cancelled)
    clock.advance(TTL - 1 + READ_LATE.total_seconds())
    gateway.get(expired)
    return {"answered": answered, "cancelled": cancelled, "expired": expired}


def _as_before_v20(execute: Callable[[str], object]) -> None:
    """The rows as version 19 stamped them (answered_at the close's moment, the read's for
    an expiry), and version 20's columns and records taken out."""
    execute("UPDATE asks SET answered_at = closed_at WHERE status IN ('answered', 'cancelled')")
    expired_read = (T0 + timedelta(seconds=TTL) + READ_LATE).isoformat()
    execute(f"UPDATE asks SET answered_at = '{expired_read}' WHERE status = 'expired'")
    for statement in BEFORE_V20:
        execute(statement)
    execute("DELETE FROM schema_migrations WHERE version >= 20")


def _check(gateway: Gateway, ids: dict[str, str]) -> None:
    answered, cancelled, expired = (gateway.get(ids[name]) for name in ("answered", "cancelled", "expired"))
    assert answered.status is AskStatus.ANSWERED
    assert answered.closed_at == answered.answered_at == T0 + timedelta(seconds=1)
    assert cancelled.closed_at == T0 + timedelta(seconds=1) and cancelled.answered_at is None
    assert expired.status is AskStatus.EXPIRED and expired.answered_at is None
    assert expired.closed_at == T0 + timedelta(seconds=TTL), "its due time, not the read 21 s later"


def _engine_gateway(engine: str, tmp_path: Path, pg_url: str | None, schema: str | None, clock: ManualClock) -> Gateway:
    if engine == "sqlite":
        return Gateway(f"sqlite:///{tmp_path / 'v19.db'}", clock=clock)
    assert pg_url is not None and schema is not None
    return Gateway(store=PostgresStore(pg_url, schema=schema), clock=clock)


@pytest.mark.parametrize("engine", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def test_a_new_store_keeps_close_and_answer_times_as_the_machine_decides(
    engine: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    pg_url, schema = _pg(engine, request)
    clock = ManualClock(T0)
    with _engine_gateway(engine, tmp_path, pg_url, schema, clock) as gateway:
        ids = _close_three(gateway, clock)
    with _engine_gateway(engine, tmp_path, pg_url, schema, clock) as gateway:  # read back from the rows
        _check(gateway, ids)


def test_a_version_19_sqlite_file_is_back_filled(tmp_path: Path) -> None:
    clock = ManualClock(T0)
    with _engine_gateway("sqlite", tmp_path, None, None, clock) as gateway:
        ids = _close_three(gateway, clock)
    conn = sqlite3.connect(tmp_path / "v19.db", isolation_level=None)
    conn.execute("DROP TRIGGER channel_close_job")  # version 20 makes it again
    _as_before_v20(conn.execute)
    conn.close()
    with _engine_gateway("sqlite", tmp_path, None, None, clock) as gateway:
        assert gateway.store.schema_version() >= 20
        _check(gateway, ids)


def test_a_version_19_postgres_schema_is_back_filled(pg_url: str, pg_schema: str) -> None:
    clock = ManualClock(T0)
    with _engine_gateway("postgres", Path(), pg_url, pg_schema, clock) as gateway:
        ids = _close_three(gateway, clock)
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(f'SET search_path TO "{pg_schema}"'.encode())
        for statement in V20_STEP_BACK_TO_V12:
            conn.execute(statement.encode())
        _as_before_v20(lambda statement: conn.execute(statement.encode()))
    with _engine_gateway("postgres", Path(), pg_url, pg_schema, clock) as gateway:
        assert gateway.store.schema_version() >= 20
        _check(gateway, ids)


def _pg(engine: str, request: pytest.FixtureRequest) -> tuple[str | None, str | None]:
    if engine != "postgres":
        return None, None
    return request.getfixturevalue("pg_url"), request.getfixturevalue("pg_schema")
