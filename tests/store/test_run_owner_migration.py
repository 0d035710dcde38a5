"""Schema version 11 records who started a run: a store from before it is upgraded in
place, and each run started by a named token's ask takes that ask's owner, so that the
owner rule (only its owner parks in a run) holds for the runs already stored.
"""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime
from pathlib import Path

import psycopg
import pytest

from parkgate import Gateway, ManualClock, RunClosed
from parkgate.store.postgres import PostgresStore
from schema_v12 import BEFORE_V12, SQLITE_BEFORE_V14, V12_STEP_BACK_TO_V4

T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)
#: What version 11 added, taken out again, and its record.
BEFORE_V11 = (*BEFORE_V12, "ALTER TABLE runs DROP COLUMN owner", "DELETE FROM schema_migrations WHERE version >= 11")


def _park_runs(gateway: Gateway) -> None:
    gateway.ask("c-a", "Deploy?", ["Yes", "No"], run_id="run-a", owner="agent")
    gateway.ask("c-lib", "Deploy?", ["Yes", "No"], run_id="run-lib")


def _check_upgraded(gateway: Gateway) -> None:
    owned, unowned = gateway.run("run-a"), gateway.run("run-lib")
    assert owned is not None and owned.owner == "agent"
    assert unowned is not None and unowned.owner is None
    with pytest.raises(RunClosed):  # another owner cannot join the run stored before v11
        gateway.ask("c-a", "Your key?", run_id="run-a", owner="other-agent", replace=True)
    assert gateway.ask("c-a", "Deploy now?", run_id="run-a", owner="agent", replace=True).run_id == "run-a"


def test_a_version_10_sqlite_file_gives_its_runs_their_askers_owner(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'v10.db'}"
    with Gateway(url, clock=ManualClock(T0)) as gateway:
        _park_runs(gateway)
    conn = sqlite3.connect(tmp_path / "v10.db", isolation_level=None)
    for statement in (*SQLITE_BEFORE_V14, *BEFORE_V11):
        conn.execute(statement)
    conn.close()
    with Gateway(url, clock=ManualClock(T0)) as gateway:
        _check_upgraded(gateway)


def test_a_version_10_postgres_schema_gives_its_runs_their_askers_owner(pg_url: str, pg_schema: str) -> None:
    with Gateway(store=PostgresStore(pg_url, schema=pg_schema), clock=ManualClock(T0)) as gateway:
        _park_runs(gateway)
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(f'SET search_path TO "{pg_schema}"'.encode())
        for statement in (*V12_STEP_BACK_TO_V4, *BEFORE_V11):
            conn.execute(statement.encode())
    with Gateway(store=PostgresStore(pg_url, schema=pg_schema), clock=ManualClock(T0)) as gateway:
        _check_upgraded(gateway)
