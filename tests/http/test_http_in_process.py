"""Quick in-process checks (httpx ASGITransport) where the test must own the clock.

A manual clock expires asks without sleeping: reads over HTTP close them as
``expired``; the outbox deliverer sends the expiry callback and backs off on failure.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from parkgate import Gateway, ManualClock
from parkgate.cli.demo import UML
from parkgate.delivery.outbox import MAX_DELAY_SECONDS, OutboxDeliverer, backoff_delay
from parkgate.http.app import create_app


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def gateway(tmp_path: Path, clock: ManualClock) -> Any:
    gw = Gateway(f"sqlite:///{tmp_path / 'parkgate.db'}", clock=clock, workflows=[UML], surface="http")
    yield gw
    gw.close()


@pytest.fixture
async def http(gateway: Gateway) -> AsyncIterator[httpx.AsyncClient]:
    app = create_app(gateway, deliver_callbacks=False)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://parkgate") as client:
        yield client


class Hook:
    """A callback receiver behind httpx.MockTransport: answers with ``statuses`` in turn."""

    def __init__(self, *statuses: int) -> None:
        self.statuses = list(statuses)
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        status = self.statuses.pop(0) if len(self.statuses) > 1 else self.statuses[0]
        return httpx.Response(status)

    def client(self) -> httpx.AsyncClient:
        return httpx.AsyncClient(transport=httpx.MockTransport(self))


async def test_reading_an_ask_past_its_ttl_closes_it_as_expired(http: httpx.AsyncClient, clock: ManualClock) -> None:
    created = await http.post(
        "/v1/asks", json={"conversation_id": "ttl", "prompt": "Q?", "options": ["A", "B"], "ttl_seconds": 600}
    )
    ask_id = created.json()["ask_id"]
    clock.advance(timedelta(minutes=5))
    listed = (await http.get("/v1/asks?status=open")).json()["asks"]
    assert [(a["ask_id"], a["hours_open"]) for a in listed] == [(ask_id, round(5 / 60, 3))]
    clock.advance(timedelta(minutes=5, seconds=1))
    ask = (await http.get(f"/v1/asks/{ask_id}")).json()
    assert (ask["status"], ask["answer"]) == ("expired", None)
    assert (await http.get("/v1/asks?status=open")).json() == {"asks": [], "next": None}
    reply = (await http.post("/v1/conversations/ttl/messages", json={"text": "1"})).json()
    assert (reply["kind"], reply["expired_ask_id"], reply["parked"]) == ("pass", None, False)  # already closed


async def test_a_message_to_an_expired_ask_passes_with_its_id_and_a_default_is_recorded(
    http: httpx.AsyncClient, clock: ManualClock
) -> None:
    created = await http.post(
        "/v1/asks",
        json={"conversation_id": "def", "prompt": "Q?", "options": ["A", "B"], "ttl_seconds": 60, "default": "B"},
    )
    ask_id = created.json()["ask_id"]
    clock.advance(61)
    reply = (await http.post("/v1/conversations/def/messages", json={"text": "1"})).json()
    assert (reply["kind"], reply["expired_ask_id"], reply["answer"]) == ("pass", ask_id, None)
    ask = (await http.get(f"/v1/asks/{ask_id}")).json()
    assert (ask["status"], ask["answer"]) == ("expired", "B")


async def test_a_long_poll_returns_expired_when_the_ttl_passes_during_the_wait(
    http: httpx.AsyncClient, clock: ManualClock
) -> None:
    created = await http.post("/v1/asks", json={"conversation_id": "lp", "prompt": "Q?", "ttl_seconds": 60})
    ask_id = created.json()["ask_id"]
    poll = asyncio.create_task(http.get(f"/v1/asks/{ask_id}", params={"wait": 30}))
    await asyncio.sleep(0.3)
    assert not poll.done()
    clock.advance(61)
    response = await asyncio.wait_for(poll, 20)
    assert response.json()["status"] == "expired"


async def test_an_expiry_callback_is_sent_with_its_idempotency_key(
    http: httpx.AsyncClient, gateway: Gateway, clock: ManualClock
) -> None:
    created = await http.post(
        "/v1/asks",
        json={"conversation_id": "cbx", "prompt": "Q?", "ttl_seconds": 60, "callback_url": "http://hooks.test/x"},
    )
    ask_id = created.json()["ask_id"]
    hook = Hook(200)
    deliverer = OutboxDeliverer(gateway.store, clock, client=hook.client())
    assert await deliverer.deliver_due() == 0  # nothing closed yet
    clock.advance(61)
    await http.get("/v1/asks?status=open")  # the read that expires it
    assert await deliverer.deliver_due() == 1
    (sent,) = hook.requests
    assert sent.headers["idempotency-key"] == f"{ask_id}.closed" and str(sent.url) == "http://hooks.test/x"
    event = json.loads(sent.content)
    assert event["type"] == "ask.closed"
    body = event["data"]
    assert (body["ask_id"], body["status"], body["outcome"]) == (ask_id, "expired", "expired")
    assert await deliverer.deliver_due() == 0  # delivered once, not again


async def test_a_failed_callback_backs_off_and_is_retried_with_the_same_key(
    http: httpx.AsyncClient, gateway: Gateway, clock: ManualClock
) -> None:
    created = await http.post(
        "/v1/asks",
        json={"conversation_id": "cbr", "prompt": "Q?", "options": ["A"], "callback_url": "http://hooks.test/r"},
    )
    await http.post("/v1/conversations/cbr/messages", json={"text": "a"})
    hook = Hook(500, 500, 200)
    deliverer = OutboxDeliverer(
        gateway.store,
        clock,
        client=hook.client(),
        base_delay=10,
        max_delay=25,
        random=lambda: 0.0,  # no jitter
    )
    assert await deliverer.deliver_due() == 0 and len(hook.requests) == 1
    assert await deliverer.deliver_due() == 0 and len(hook.requests) == 1  # not due before its backoff
    clock.advance(10)
    assert await deliverer.deliver_due() == 0 and len(hook.requests) == 2
    clock.advance(19)
    assert await deliverer.deliver_due() == 0 and len(hook.requests) == 2  # the second wait doubled to 20 s
    clock.advance(1)
    assert await deliverer.deliver_due() == 1 and len(hook.requests) == 3
    assert {r.headers["idempotency-key"] for r in hook.requests} == {f"{created.json()['ask_id']}.closed"}
    assert [r.headers["x-parkgate-attempt"] for r in hook.requests] == ["1", "2", "3"]


async def test_an_unreachable_receiver_is_retried_not_dropped(gateway: Gateway, clock: ManualClock) -> None:
    gateway.ask("cbu", "Q?", ["A"], callback_url="http://hooks.test/u")
    gateway.handle("cbu", "1")

    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("connection refused", request=request)

    down = OutboxDeliverer(gateway.store, clock, client=httpx.AsyncClient(transport=httpx.MockTransport(refuse)))
    assert await down.deliver_due() == 0
    clock.advance(MAX_DELAY_SECONDS)
    hook = Hook(204)
    assert await OutboxDeliverer(gateway.store, clock, client=hook.client()).deliver_due() == 1


def test_the_backoff_doubles_and_is_capped() -> None:
    assert [backoff_delay(n, base=1, cap=60) for n in range(1, 9)] == [1, 2, 4, 8, 16, 32, 60, 60]
    assert backoff_delay(10_000) == MAX_DELAY_SECONDS


async def test_a_bad_content_length_is_a_400_json(http: httpx.AsyncClient) -> None:
    response = await http.post(
        "/v1/conversations/x/messages",
        content=b"{}",
        headers={"content-length": "many", "content-type": "application/json"},
    )
    assert response.status_code == 400 and response.json()["error"] == "bad_request"


async def test_the_console_page_carries_the_shared_phrases(http: httpx.AsyncClient) -> None:
    from parkgate.core.phrases import EXPIRED_NOTICE, STAND_IN_MODEL

    page = await http.get("/")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert json.dumps(STAND_IN_MODEL) in page.text and json.dumps(EXPIRED_NOTICE) in page.text
    assert "script-src 'self'" in page.headers["content-security-policy"]


@pytest.mark.parametrize(
    "path", ["/console/index.html", "/console//index.html", "/console/./index.html", "/console/x/../index.html"]
)
async def test_the_page_template_is_never_served_raw(http: httpx.AsyncClient, gateway: Gateway, path: str) -> None:
    app = http._transport.app  # type: ignore[attr-defined]
    status, headers, body = await raw_asgi_get(app, path)
    root = await http.get("/")
    assert status == 200, body[:200]
    assert b"__PARKGATE_PHRASES__" not in body
    assert body.decode() == root.text  # the rendered console, with its headers
    assert headers[b"content-security-policy"].decode() == root.headers["content-security-policy"]


async def raw_asgi_get(app: Any, path: str) -> tuple[int, dict[bytes, bytes], bytes]:
    """One GET straight through the ASGI app, with ``path`` exactly as given (no client normalising)."""
    sent: list[dict[str, Any]] = []
    requested = False

    async def receive() -> dict[str, Any]:
        nonlocal requested
        if requested:  # the client stays connected until the response is sent
            await asyncio.sleep(3600)
        requested = True
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {
        "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "GET", "scheme": "http",
        "path": path, "raw_path": path.encode(), "root_path": "", "query_string": b"",
        "headers": [(b"host", b"parkgate")], "client": ("127.0.0.1", 1), "server": ("parkgate", 80),
    }  # fmt: skip
    await app(scope, receive, send)
    start = next(m for m in sent if m["type"] == "http.response.start")
    body = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    return start["status"], dict(start["headers"]), body


async def test_the_console_page_has_an_inline_favicon_its_policy_allows(http: httpx.AsyncClient) -> None:
    page = await http.get("/")
    assert '<link rel="icon" href="data:,">' in page.text  # so a browser never asks for /favicon.ico
    assert "img-src 'self' data:" in page.headers["content-security-policy"]


async def test_an_app_made_from_a_url_serves_the_demo_on_the_http_surface(tmp_path: Path) -> None:
    app = create_app(db_url=f"sqlite:///{tmp_path / 'own.db'}", token="t", deliver_callbacks=False)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://p", headers={"Authorization": "Bearer t"}) as c:
        assert (await c.get("/v1/workflows")).json() == {"workflows": ["uml"]}
        started = await c.post("/v1/workflows/uml/start", json={"conversation_id": "own"})
        assert started.status_code == 201
        metrics = (await c.get("/metrics")).text
        assert 'parkgate_replies_total{kind="asked",surface="http"} 1.0' in metrics
    app.state.gateway.close()


async def test_a_run_is_read_and_finished_over_http(http: httpx.AsyncClient, clock: ManualClock) -> None:
    created = await http.post(
        "/v1/asks", json={"conversation_id": "runs", "run_id": "run-1", "prompt": "Deploy?", "options": ["Yes", "No"]}
    )
    ask_id = created.json()["ask_id"]
    run = (await http.get("/v1/runs/run-1")).json()
    assert {k: run[k] for k in ("run_id", "conversation_id", "status", "outcome", "pending_ask_id", "answers")} == {
        "run_id": "run-1",
        "conversation_id": "runs",
        "status": "running",
        "outcome": None,
        "pending_ask_id": ask_id,
        "answers": {},
    }
    refused = await http.post("/v1/runs/run-1/finish", json={"outcome": "deployed"})
    assert refused.status_code == 409
    assert (refused.json()["error"], refused.json()["open_ask_id"]) == ("run_still_asking", ask_id)
    assert (await http.get("/v1/runs/run-1")).json() == run  # nothing changed
    await http.post("/v1/conversations/runs/messages", json={"text": "1"})
    clock.advance(timedelta(seconds=30))
    finished = await http.post("/v1/runs/run-1/finish", json={"outcome": "deployed"})
    assert finished.status_code == 200
    body = finished.json()
    assert (body["status"], body["outcome"], body["pending_ask_id"]) == ("complete", "deployed", None)
    assert body["updated_at"] == clock.now().isoformat()
    assert (await http.get("/v1/runs/run-1")).json() == body
    again = await http.post("/v1/runs/run-1/finish")  # no body: outcome "done"
    assert (again.status_code, again.json()["outcome"]) == (200, "done")


async def test_a_workflow_runs_answers_show_on_its_run(http: httpx.AsyncClient) -> None:
    started = (await http.post("/v1/workflows/uml/start", json={"conversation_id": "wf", "run_id": "wf-run"})).json()
    assert started["run_id"] == "wf-run"
    await http.post("/v1/conversations/wf/messages", json={"text": "2"})
    run = (await http.get("/v1/runs/wf-run")).json()
    assert run["workflow"] == "uml" and run["status"] == "running" and len(run["answers"]) == 1
    assert run["pending_ask_id"] is not None  # the next phase's question


async def test_reading_a_run_closes_its_pending_ask_past_the_ttl_over_http(
    http: httpx.AsyncClient, clock: ManualClock
) -> None:
    created = await http.post(
        "/v1/asks",
        json={"conversation_id": "late", "run_id": "run-late", "prompt": "Q?", "options": ["A"], "ttl_seconds": 60},
    )
    clock.advance(timedelta(seconds=61))
    run = (await http.get("/v1/runs/run-late")).json()
    assert (run["status"], run["outcome"], run["pending_ask_id"]) == ("complete", "expired", None)
    assert (await http.get(f"/v1/asks/{created.json()['ask_id']}")).json()["status"] == "expired"


async def test_unknown_runs_are_404_and_a_bad_outcome_is_422(http: httpx.AsyncClient) -> None:
    for response in (await http.get("/v1/runs/nope"), await http.post("/v1/runs/nope/finish")):
        assert response.status_code == 404 and response.json()["error"] == "unknown_run"
        assert "nope" in response.json()["detail"]
    await http.post("/v1/asks", json={"conversation_id": "bad", "run_id": "run-bad", "prompt": "Q?"})
    for outcome in ("", "x" * 201, 5):
        response = await http.post("/v1/runs/run-bad/finish", json={"outcome": outcome})
        assert response.status_code == 422, (outcome, response.text)
    extra = await http.post("/v1/runs/run-bad/finish", json={"outcome": "done", "status": "complete"})
    assert extra.status_code == 422


async def test_a_long_poll_returns_as_soon_as_this_server_closes_the_ask(
    http: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Pauses between reads far longer than the bound below: only the wake-up can end it in time.
    monkeypatch.setattr("parkgate.gateway.FALLBACK_READ_SECONDS", 60.0)
    created = await http.post("/v1/asks", json={"conversation_id": "poll", "prompt": "Q?", "options": ["A", "B"]})
    ask_id = created.json()["ask_id"]
    waiter = asyncio.create_task(http.get(f"/v1/asks/{ask_id}?wait=50"))
    await asyncio.sleep(0.1)  # ordering only: let the long poll read the open ask
    await http.post("/v1/conversations/poll/messages", json={"text": "2"})
    ask = (await asyncio.wait_for(waiter, 10)).json()
    assert (ask["status"], ask["answer"]) == ("answered", "B")
