"""The HTTP server waits briefly for a PostgreSQL connection, then answers 503.

The library keeps its own default (``PostgresStore(timeout=10.0)``); the server's store
gets :data:`SERVER_PG_TIMEOUT_SECONDS` unless ``PARKGATE_PG_TIMEOUT`` says otherwise.
An outage is stood in for by holding every connection of the server's pool: a request
then waits for one exactly as it does while the server is away. (The shared server on
5432 is never stopped.)
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from parkgate.http.app import (
    ENV_DB,
    ENV_PG_SCHEMA,
    ENV_PG_TIMEOUT,
    SERVER_PG_TIMEOUT_SECONDS,
    app_from_env,
    create_app,
    open_server_store,
    parse_pg_timeout,
    store_from_env,
)
from parkgate.http.settings import ENV_TOKEN
from parkgate.store import open_store
from parkgate.store.postgres import PostgresStore
from parkgate.store.sqlite import SQLiteStore


@pytest.fixture
def server_env(monkeypatch: pytest.MonkeyPatch, pg_url: str, pg_schema: str) -> pytest.MonkeyPatch:
    """The environment a worker gets: PARKGATE_DB and PARKGATE_PG_SCHEMA on a fresh schema."""
    monkeypatch.delenv(ENV_TOKEN, raising=False)
    monkeypatch.delenv(ENV_PG_TIMEOUT, raising=False)
    monkeypatch.setenv(ENV_DB, pg_url)
    monkeypatch.setenv(ENV_PG_SCHEMA, pg_schema)
    return monkeypatch


def pool_timeout(store: Any) -> float:
    assert isinstance(store, PostgresStore)
    return float(store._pool.timeout)


@pytest.fixture
def opened() -> Iterator[list[Any]]:
    stores: list[Any] = []
    yield stores
    for store in stores:
        store.close()


@pytest.mark.postgres
def test_the_server_store_waits_three_seconds_and_the_library_keeps_ten(
    server_env: pytest.MonkeyPatch, pg_url: str, pg_schema: str, opened: list[Any]
) -> None:
    opened.append(store_from_env())
    opened.append(open_store(pg_url, schema=pg_schema))
    opened.append(PostgresStore(pg_url, schema=pg_schema))
    assert [pool_timeout(store) for store in opened] == [SERVER_PG_TIMEOUT_SECONDS, 10.0, 10.0]
    assert SERVER_PG_TIMEOUT_SECONDS == 3.0


@pytest.mark.postgres
def test_parkgate_pg_timeout_reaches_the_servers_store(server_env: pytest.MonkeyPatch, opened: list[Any]) -> None:
    server_env.setenv(ENV_PG_TIMEOUT, "1.25")
    opened.append(store_from_env())
    app = app_from_env()
    opened.append(app.state.gateway)
    assert pool_timeout(opened[0]) == 1.25
    assert pool_timeout(app.state.gateway.store) == 1.25


@pytest.mark.postgres
def test_an_app_made_from_a_url_gets_the_server_timeout_too(pg_url: str, pg_schema: str) -> None:
    # The schema rides in the URL's search_path: nothing lands in the shared public schema.
    url = f"{pg_url}{'&' if '?' in pg_url else '?'}options=-csearch_path%3D{pg_schema}"
    app = create_app(db_url=url, deliver_callbacks=False)
    try:
        assert pool_timeout(app.state.gateway.store) == SERVER_PG_TIMEOUT_SECONDS
    finally:
        app.state.gateway.close()


@pytest.mark.parametrize("value", ["0", "-2", "nan", "inf", "1e9", "three"])
def test_a_bad_parkgate_pg_timeout_is_refused_by_name(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv(ENV_DB, "postgresql://nobody@127.0.0.1:1/none")  # never reached
    monkeypatch.setenv(ENV_PG_TIMEOUT, value)
    with pytest.raises(ValueError, match=ENV_PG_TIMEOUT):
        store_from_env()
    with pytest.raises(ValueError, match="seconds"):
        parse_pg_timeout(value)


def test_the_pg_settings_are_ignored_on_sqlite(tmp_path: Any) -> None:
    store = open_server_store(f"sqlite:///{tmp_path / 'x.db'}", schema="unused", pg_timeout=0.1)
    try:
        assert isinstance(store, SQLiteStore) and store.schema_version() >= 1
    finally:
        store.close()


@pytest.mark.postgres
def test_a_request_gets_its_503_after_the_short_timeout_not_the_library_one(
    server_env: pytest.MonkeyPatch,
) -> None:
    server_env.setenv(ENV_PG_TIMEOUT, "0.5")
    app = app_from_env()
    gateway = app.state.gateway
    pool = gateway.store._pool
    client = TestClient(app)  # no lifespan: no outbox deliverer competing for connections
    try:
        held = [pool.getconn() for _ in range(pool.max_size)]
        try:
            started = time.monotonic()
            refused = client.post("/v1/conversations/c-1/messages", json={"text": "hello"})
            waited = time.monotonic() - started
        finally:
            for conn in held:
                pool.putconn(conn)
        assert refused.status_code == 503
        assert refused.json()["error"] == "store_unavailable"
        assert 0.4 <= waited < 2.5, f"waited {waited:.2f} s for a connection"
        again = client.post("/v1/conversations/c-1/messages", json={"text": "hello"})
        assert (again.status_code, again.json()["kind"]) == (200, "pass")  # serves again by itself
    finally:
        client.close()
        gateway.close()
