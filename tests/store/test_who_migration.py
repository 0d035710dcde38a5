"""Schema version 12 keeps who may answer an ask and who did: a store from version 11 is
upgraded in place, its asks read as anyone's (no responders, quorum 1, no votes), and a
message to one of them records its sender (through ``parkgate_step`` on PostgreSQL).
"""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime
from pathlib import Path

import psycopg

from parkgate import Gateway, ManualClock, ReplyKind
from parkgate.core.kinds import AskStatus
from parkgate.store.postgres import PostgresStore
from schema_v12 import BEFORE_V12, SQLITE_BEFORE_V14, V12_STEP_BACK_TO_V4

T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)


def _park(gateway: Gateway) -> str:
    return gateway.ask("c-old", "Deploy?", ["Deploy", "Hold"]).ask_id or ""


def _check_upgraded(gateway: Gateway, ask_id: str) -> None:
    old = gateway.get(ask_id)
    assert (old.is_open, old.responders, old.quorum, old.votes, old.answered_by, old.closed_by) == (
        True,
        (),
        1,
        (),
        None,
        None,
    )
    assert gateway.get(ask_id).is_open  # read twice: the gateway now remembers it, and steps it by guess
    assert gateway.handle("c-old", "2", sender="U_OLD").kind is ReplyKind.SELECTED
    answered = gateway.get(ask_id)
    assert (answered.status, answered.answered_by) == (AskStatus.ANSWERED, "U_OLD")
    fresh = gateway.ask("c-new", "Deploy?", ["Deploy", "Hold"], responders=["A", "B"], quorum=2).ask_id or ""
    assert gateway.handle("c-new", "1", sender="A").kind is ReplyKind.VOTED
    assert [vote.sender for vote in gateway.get(fresh).votes] == ["A"]


def test_a_version_11_sqlite_file_is_upgraded(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'v11.db'}"
    with Gateway(url, clock=ManualClock(T0)) as gateway:
        ask_id = _park(gateway)
    conn = sqlite3.connect(tmp_path / "v11.db", isolation_level=None)
    for statement in (*SQLITE_BEFORE_V14, *BEFORE_V12):
        conn.execute(statement)
    conn.close()
    with Gateway(url, clock=ManualClock(T0)) as gateway:
        _check_upgraded(gateway, ask_id)


def test_a_version_11_postgres_schema_is_upgraded(pg_url: str, pg_schema: str) -> None:
    with Gateway(store=PostgresStore(pg_url, schema=pg_schema), clock=ManualClock(T0)) as gateway:
        ask_id = _park(gateway)
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(f'SET search_path TO "{pg_schema}"'.encode())
        for statement in (*V12_STEP_BACK_TO_V4, *BEFORE_V12):
            conn.execute(statement.encode())
    with Gateway(store=PostgresStore(pg_url, schema=pg_schema), clock=ManualClock(T0)) as gateway:
        _check_upgraded(gateway, ask_id)
