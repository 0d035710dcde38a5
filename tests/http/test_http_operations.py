"""``/healthz``, ``/metrics`` and ``/openapi.json`` through real servers.

The store going away is simulated with a TCP proxy in front of PostgreSQL that the
test cuts: the main PostgreSQL server is never touched.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpx
import psycopg
import pytest
from live_server import Server, TcpProxy, messages_path, running, wait_until
from psycopg import sql as pgsql

from engine_params import STORE_PARAMS
from parkgate import Gateway
from parkgate.http.app import create_app
from parkgate.http.settings import ENV_PG_TIMEOUT


def metric(text: str, name: str, **labels: str) -> float:
    """One sample's value from Prometheus text (0 when the series is absent)."""
    for line in text.splitlines():
        if not line.startswith(name + "{") and line.split(" ")[0] != name:
            continue
        found = dict(re.findall(r'(\w+)="([^"]*)"', line.split(" ")[0]))
        if all(found.get(key) == value for key, value in labels.items()):
            return float(line.rsplit(" ", 1)[1])
    return 0.0


def test_healthz_names_the_store(served: Server) -> None:
    response = httpx.get(served.url + "/healthz", timeout=30)
    assert response.status_code == 200
    body = response.json()
    assert body["status"] == "ok" and body["store"] in ("sqlite", "postgresql") and body["schema_version"] >= 1
    assert served.db_url not in response.text  # never the connection string


# Both engines: /healthz names the engine it reads.
@pytest.mark.parametrize("engine", STORE_PARAMS)
async def test_healthz_names_each_engine_and_never_its_url(database: Any, engine: str) -> None:
    with Gateway(store=database.open(), surface="http") as gateway:
        app = create_app(gateway, deliver_callbacks=False)
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://parkgate") as http:
            response = await http.get("/healthz")
    assert response.status_code == 200
    assert response.json()["store"] == {"sqlite": "sqlite", "postgres": "postgresql"}[engine]
    assert database.url not in response.text


def test_metrics_count_replies_outcomes_and_open_asks(served: Server, conv: str) -> None:
    with served.client() as http:
        before = http.get("/metrics").text
        http.post("/v1/workflows/uml/start", json={"conversation_id": conv})
        for text in ("x", "y", "z", "menu"):
            http.post(messages_path(conv), json={"text": text})
        http.post(messages_path(conv), json={"text": "/cancel"})
        http.post("/v1/workflows/uml/start", json={"conversation_id": conv})
        http.post(messages_path(conv), json={"text": "1"})  # selected; the describe phase is asked
        after = http.get("/metrics")
    assert after.headers["content-type"].startswith("text/plain")
    text = after.text

    def grew(name: str, **labels: str) -> float:
        return metric(text, name, **labels) - metric(before, name, **labels)

    assert grew("parkgate_replies_total", kind="asked", surface="http") == 3
    assert grew("parkgate_replies_total", kind="selected", surface="http") == 1
    assert grew("parkgate_replies_total", kind="retry", surface="http") == 2
    assert grew("parkgate_replies_total", kind="escalated", surface="http") == 1
    assert grew("parkgate_replies_total", kind="reshown", surface="http") == 1
    assert grew("parkgate_replies_total", kind="cancelled", surface="http") == 1
    assert grew("parkgate_asks_closed_total", outcome="cancelled", surface="http") == 1
    assert grew("parkgate_asks_closed_total", outcome="selected", surface="http") == 1
    assert grew("parkgate_time_to_answer_seconds_count", channel="none", surface="http") == 1
    assert metric(text, "parkgate_open_asks") >= 1


def test_get_routes_answer_head_with_the_get_status_and_no_body(served: Server, conv: str) -> None:
    with served.client() as http:
        created = http.post("/v1/asks", json={"conversation_id": conv, "prompt": "Pick", "options": ["A", "B"]})
        ask_id = created.json()["ask_id"]
        for path in ("/healthz", "/v1/asks", "/v1/asks?status=open", f"/v1/asks/{ask_id}", "/v1/workflows",
                     "/metrics", "/", "/openapi.json", "/console/console.js"):  # fmt: skip
            got, head = http.get(path), http.head(path)
            assert head.status_code == got.status_code == 200, (path, head.status_code, head.text)
            assert head.content == b"", path
            assert head.headers["content-type"] == got.headers["content-type"], path
        missing = http.head("/v1/asks/no-such-ask")
        assert missing.status_code == 404 and missing.content == b""
        assert http.head("/v1/asks/no-such-ask").headers["content-type"].startswith("application/json")
        # HEAD is named where GET is allowed, and nowhere else
        refused = http.delete("/v1/asks")
        assert refused.status_code == 405 and "HEAD" in refused.headers["allow"]
        refused = http.head(f"/v1/asks/{ask_id}/cancel")
        assert refused.status_code == 405 and "HEAD" not in refused.headers["allow"]
        assert http.get(f"/v1/asks/{ask_id}").json()["status"] == "open"  # HEAD changed nothing


def test_the_openapi_schema_documents_the_public_contract(served_sqlite: Server) -> None:
    schema = httpx.get(served_sqlite.url + "/openapi.json", timeout=30).json()
    paths = schema["paths"]
    for path, method in [
        ("/v1/asks", "post"),
        ("/v1/asks", "get"),
        ("/v1/asks/{ask_id}", "get"),
        ("/v1/asks/{ask_id}/cancel", "post"),
        ("/v1/conversations/{conversation_id}/messages", "post"),
        ("/v1/conversations/{conversation_id}", "get"),
        ("/v1/workflows/{name}/start", "post"),
        ("/healthz", "get"),
        ("/metrics", "get"),
    ]:
        assert method in paths[path], (path, method)
    reply = schema["components"]["schemas"]["ReplyOut"]["properties"]
    assert {"kind", "text", "parked", "ask_id", "expired_ask_id", "answer", "option_index"} <= reply.keys()
    ask_in = schema["components"]["schemas"]["AskIn"]["properties"]
    assert {"conversation_id", "run_id", "kind", "prompt", "options", "ttl_seconds", "replace", "callback_url"} <= (
        ask_in.keys()
    )
    assert "skill_output" in ask_in
    assert paths["/v1/asks"]["post"]["security"] == [{"bearer": []}]
    assert not [path for path, operations in paths.items() if "head" in operations]  # HEAD mirrors GET, undocumented


@pytest.fixture
def proxied_schema(pg_url: str) -> Iterator[tuple[str, str, TcpProxy]]:
    """A fresh schema, and a database URL that reaches PostgreSQL through a cuttable proxy."""
    parts = urlsplit(pg_url)
    proxy = TcpProxy(parts.hostname or "127.0.0.1", parts.port or 5432).start()
    netloc = f"{parts.username}@" if parts.username else ""
    if parts.password:
        netloc = f"{parts.username}:{parts.password}@"
    url = urlunsplit((parts.scheme, f"{netloc}127.0.0.1:{proxy.port}", parts.path, parts.query, ""))
    schema = f"pgh_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(pgsql.SQL("CREATE SCHEMA {}").format(pgsql.Identifier(schema)))
    try:
        yield url, schema, proxy
    finally:
        proxy.cut()
        with psycopg.connect(pg_url, autocommit=True) as conn:
            conn.execute(pgsql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(pgsql.Identifier(schema)))


@pytest.mark.postgres
def test_healthz_and_v1_are_503_json_while_the_store_is_away_and_recover(
    proxied_schema: tuple[str, str, TcpProxy], tmp_path: Any
) -> None:
    url, schema, proxy = proxied_schema
    # A request waits PARKGATE_PG_TIMEOUT for a connection before its 503: 1 s, not the 3 s default.
    server = Server(url, tmp_path / "server.log", schema=schema, in_thread=True, extra_env={ENV_PG_TIMEOUT: "1"})
    with running(server.start()), server.client(timeout=60) as http:
        parked = http.post("/v1/asks", json={"conversation_id": "away", "prompt": "Q?", "options": ["A", "B"]})
        assert parked.status_code == 201
        proxy.cut()
        health = http.get("/healthz")
        assert health.status_code == 503, health.text
        assert health.json()["error"] == "store_unavailable" and health.json()["detail"]
        down = http.post(messages_path("away"), json={"text": "2"})
        assert down.status_code == 503 and down.json()["error"] == "store_unavailable", down.text
        proxy.resume()
        wait_until(lambda: http.get("/healthz").status_code == 200, 60, "the server to reach the store again")
        reply = http.post(messages_path("away"), json={"text": "2"}).json()
        assert (reply["kind"], reply["answer"]) == ("selected", "B")  # the 503'd message changed nothing
        assert "Traceback" not in server.log_text()
