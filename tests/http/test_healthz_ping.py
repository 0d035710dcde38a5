"""``/healthz`` runs one statement, the store's connection check, and reads no table.

Every statement the store sends is recorded where the driver sends it: SQLite's trace
callback on each connection the store opens (``sqlite3.connect`` is wrapped before the
store opens), and psycopg's ``Cursor.execute`` on PostgreSQL (every statement of the
store, pipelined or not, passes through it). A health check that read an ask, the audit
or the schema table would show here.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING, Any

import httpx
import psycopg
import pytest

from parkgate import Gateway
from parkgate.errors import StoreError
from parkgate.http.app import create_app

if TYPE_CHECKING:
    from conftest import StoreLocation

#: What each store sends for a health check is its own SQL.
pytestmark = pytest.mark.engines("each store's connection check is its own statement")

#: Health checks counted after the first (which also reads the schema version once).
CHECKS = 5


class Statements:
    """The statements the store sent, in order, from any thread."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._seen: list[str] = []

    def add(self, statement: object) -> None:
        text = statement.decode() if isinstance(statement, bytes) else str(statement)
        with self._lock:
            self._seen.append(" ".join(text.split()))

    def take(self) -> list[str]:
        """What was sent since the last call (and forget it), less the settings a new
        connection is opened with (a check may run on a thread whose connection is new)."""
        with self._lock:
            seen, self._seen = self._seen, []
        return [statement for statement in seen if not statement.startswith("PRAGMA ")]


def record_statements(monkeypatch: pytest.MonkeyPatch, engine: str) -> Statements:
    """Record every statement the store of ``engine`` sends from now on."""
    statements = Statements()
    if engine == "sqlite":
        connect: Callable[..., sqlite3.Connection] = sqlite3.connect

        def traced(*args: Any, **kwargs: Any) -> sqlite3.Connection:
            conn = connect(*args, **kwargs)
            conn.set_trace_callback(statements.add)
            return conn

        monkeypatch.setattr(sqlite3, "connect", traced)
    else:
        execute = psycopg.Cursor.execute

        def recorded(self: psycopg.Cursor[Any], query: Any, *args: Any, **kwargs: Any) -> Any:
            statements.add(query.as_string(self) if hasattr(query, "as_string") else query)
            return execute(self, query, *args, **kwargs)

        monkeypatch.setattr(psycopg.Cursor, "execute", recorded)
    return statements


@pytest.fixture
def statements(store_location: StoreLocation, monkeypatch: pytest.MonkeyPatch) -> Statements:
    return record_statements(monkeypatch, store_location.engine)


@pytest.fixture
async def http(store_location: StoreLocation, statements: Statements) -> AsyncIterator[httpx.AsyncClient]:
    """A client of the app on a store opened after the recording started (no deliverer runs)."""
    gateway = Gateway(store=store_location.open(), surface="http")
    app = create_app(gateway, deliver_callbacks=False)
    try:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://parkgate") as client:
            yield client
    finally:
        gateway.close()


async def test_healthz_sends_only_the_connection_check(http: httpx.AsyncClient, statements: Statements) -> None:
    parked = await http.post("/v1/asks", json={"conversation_id": "c", "prompt": "Which?", "options": ["A", "B"]})
    assert parked.status_code == 201
    assert statements.take(), "the recorder sees the store's statements (parking an ask sends several)"

    first = await http.get("/healthz")
    assert first.status_code == 200 and first.json()["schema_version"] >= 1
    assert statements.take().count("SELECT 1") == 1  # the first check also reads the schema version, once

    for _ in range(CHECKS):
        health = await http.get("/healthz")
        assert health.status_code == 200
        assert health.json() == first.json()  # the version is reported from memory
    assert statements.take() == ["SELECT 1"] * CHECKS


async def test_healthz_is_503_once_the_store_stops_answering(http: httpx.AsyncClient) -> None:
    """The check still reaches the store: a closed store fails it (a PostgreSQL server cut
    off is ``tests/http/test_http_operations.py``'s live-server test)."""
    assert (await http.get("/healthz")).status_code == 200
    app = http._transport.app  # type: ignore[attr-defined]
    app.state.gateway.store.close()
    health = await http.get("/healthz")
    assert health.status_code == 503 and health.json()["error"] == StoreError.wire_code, health.text
    assert "closed" in health.json()["detail"]
