"""History, figures and export through a real server: ``GET /v1/asks`` of any status, scoped
to a tenant's own asks (another tenant's token sees none of them), ``GET /v1/stats``, both
clients' ``history`` and ``stats``, and ``GET /v1/export`` as CSV and JSON Lines."""

from __future__ import annotations

import asyncio
import csv
import io
import json
import secrets
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from live_server import Server

from parkgate import ManualClock
from parkgate.client import AsyncClient, Client
from parkgate.http.tokens import digest

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
TTL = 60
#: name -> scopes: two tenants that park and read, and an operator.
TOKENS = {"team-a": ["park", "read"], "team-b": ["park", "read"], "ops": ["read", "operate"]}


@pytest.fixture
def tokens(tmp_path: Path) -> dict[str, str]:
    return {name: secrets.token_urlsafe(24) for name in TOKENS}


@pytest.fixture
def server(start_server: Any, database: Any, tokens: dict[str, str], tmp_path: Path) -> Server:
    lines = [
        f'[[token]]\nname = "{name}"\nsha256 = "{digest(tokens[name])}"\nscopes = {json.dumps(scopes)}\n'
        for name, scopes in TOKENS.items()
    ]
    path = tmp_path / "tokens.toml"
    path.write_text("\n".join(lines), encoding="utf-8")
    server: Server = start_server(database, extra_env={"PARKGATE_TOKENS_FILE": str(path)}, clock=ManualClock(T0))
    return server


def _clock(server: Server) -> ManualClock:
    clock: ManualClock = server.clock
    return clock


def _park(http: Any, conversation: str, prompt: str = "Deploy?", **more: Any) -> str:
    created = http.post(
        "/v1/asks", json={"conversation_id": conversation, "prompt": prompt, "options": ["Yes", "No"], **more}
    )
    assert created.status_code == 201, created.text
    return str(created.json()["ask_id"])


def test_a_tenant_lists_last_weeks_expired_asks_and_another_tenant_sees_none_of_them(
    server: Server, tokens: dict[str, str]
) -> None:
    clock = _clock(server)
    with (
        server.client(tokens["team-a"]) as a,
        server.client(tokens["team-b"]) as b,
        server.client(tokens["ops"]) as ops,
    ):
        mine = {_park(a, f"a-{n}", ttl_seconds=TTL) for n in range(3)}
        theirs = _park(b, "b-1", ttl_seconds=TTL)
        longer = _park(a, "a-longer", ttl_seconds=3600)
        clock.advance(3 * 24 * 3600)  # the asks lapsed unread three days ago: nothing closed them yet
        since = (T0 - timedelta(days=7)).isoformat()
        listed = a.get("/v1/asks", params={"status": "expired", "since": since})
        assert listed.status_code == 200, listed.text
        found = listed.json()["asks"]
        assert {ask["ask_id"] for ask in found} == mine | {longer}
        for ask in found:
            due = datetime.fromisoformat(ask["last_touched"]) + timedelta(seconds=ask["ttl_seconds"])
            assert (ask["status"], ask["answered_at"]) == ("expired", None)
            assert datetime.fromisoformat(ask["closed_at"]) == due, "its due time, not the listing's moment"
        assert [
            ask["ask_id"] for ask in b.get("/v1/asks", params={"status": "expired", "since": since}).json()["asks"]
        ] == [theirs]
        assert b.get("/v1/asks", params={"status": "expired", "owner": "team-a"}).json()["asks"] == []
        assert b.get("/v1/asks", params={"status": "all", "q": "deploy"}).json()["asks"][0]["ask_id"] == theirs
        everyone = ops.get("/v1/asks", params={"status": "closed", "limit": 2})
        first = everyone.json()
        assert len(first["asks"]) == 2 and first["next"] is not None
        rest = ops.get("/v1/asks", params={"status": "closed", "limit": 10, "cursor": first["next"]}).json()
        assert {ask["ask_id"] for ask in first["asks"] + rest["asks"]} == mine | {theirs, longer}
        only_b = ops.get("/v1/asks", params={"status": "closed", "owner": "team-b"}).json()["asks"]
        assert [ask["ask_id"] for ask in only_b] == [theirs]
        assert a.get("/v1/asks").json()["asks"] == [], "nothing open: the listing closed what lapsed"


def test_figures_over_http_and_both_clients(server: Server, tokens: dict[str, str]) -> None:
    clock = _clock(server)
    with server.client(tokens["team-a"]) as a, server.client(tokens["ops"]) as ops:
        first = _park(a, "s-1", ttl_seconds=TTL)
        _park(a, "s-2", ttl_seconds=3600)
        clock.advance(20)
        assert ops.post(f"/v1/asks/{first}/cancel").status_code == 200
        clock.advance(3600 * 2)
        shown = ops.get("/v1/stats", params={"since": T0.isoformat(), "by": "day"})
        assert shown.status_code == 200, shown.text
        body = shown.json()
        assert body["by"] == "day" and body["since"] == T0.isoformat() and body["truncated"] is False
        assert {key: body["total"][key] for key in ("opened", "answered", "expired", "cancelled")} == {
            "opened": 2,
            "answered": 0,
            "expired": 1,
            "cancelled": 1,
        }
        assert body["total"]["time_to_answer"] == {"p50": None, "p90": None, "p99": None, "count": 0}
        assert [group["key"] for group in body["groups"]] == ["2026-03-02"]
        refused = ops.get("/v1/stats", params={"by": "colour"})
        assert refused.status_code == 422
    with Client(server.url, tokens["team-a"]) as client:
        stats = client.stats(since=T0, by="responder")
        assert stats.total["opened"] == 2 and [group["key"] for group in stats.groups] == ["(anyone)"]
        page = client.history(status="closed", limit=1)
        assert len(page.asks) == 1 and page.next_cursor is not None
        rest = client.history(status="closed", cursor=page.next_cursor)
        assert {ask.status.value for ask in (*page.asks, *rest.asks)} == {"cancelled", "expired"}
        assert all(ask.closed_at is not None for ask in rest.asks)

    async def through_async() -> None:
        async with AsyncClient(server.url, tokens["team-a"]) as client:
            page = await client.history(status="expired")
            assert [ask.conversation_id for ask in page.asks] == ["s-2"]
            figures = await client.stats(since=T0)
            assert figures.total["expired"] == 1

    asyncio.run(through_async())


def test_export_streams_asks_as_csv_and_json_lines_and_events_wait_for_the_log(
    server: Server, tokens: dict[str, str]
) -> None:
    clock = _clock(server)
    with server.client(tokens["team-a"]) as a, server.client(tokens["team-b"]) as b:
        ids = []
        for n in range(3):
            ids.append(_park(a, f"x-{n}", prompt=f'Ship "v{n}", now?'))
            clock.advance(1)
        _park(b, "x-theirs")
        lines = a.get("/v1/export", params={"what": "asks", "format": "jsonl"})
        assert lines.status_code == 200, lines.text
        assert lines.headers["content-type"].startswith("application/x-ndjson")
        assert lines.headers["content-disposition"].startswith('attachment; filename="parkgate-asks-')
        rows = [json.loads(line) for line in lines.text.splitlines()]
        assert [row["ask_id"] for row in rows] == list(reversed(ids)), "newest first, only the tenant's own"
        table = a.get("/v1/export", params={"what": "asks", "format": "csv", "since": T0.isoformat()})
        assert table.status_code == 200 and table.headers["content-type"].startswith("text/csv")
        read = list(csv.DictReader(io.StringIO(table.text)))
        assert [row["ask_id"] for row in read] == list(reversed(ids))
        assert read[0]["prompt"] == 'Ship "v2", now?' and json.loads(read[0]["options"]) == ["Yes", "No"]
        events = a.get("/v1/export", params={"what": "events", "format": "jsonl"})
        assert events.headers["content-disposition"].startswith('attachment; filename="parkgate-events-')
        assert {json.loads(line)["ask_id"] for line in events.text.splitlines()} == set(ids), "the tenant's own"
        naive = a.get("/v1/export", params={"what": "asks", "since": "2026-03-01T00:00:00"})
        assert naive.status_code == 422
