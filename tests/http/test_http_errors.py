"""parkgate's own errors through the real app: each a documented 4xx or 503, never a 500.

In process (httpx's ASGITransport) because the gateway here carries a workflow the
demo server does not: one whose phase names a phase it does not have.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import pytest

from parkgate import Gateway, ManualClock
from parkgate.cli.demo import UML
from parkgate.http.app import create_app
from parkgate.workflow import Phase, Workflow

#: Its first phase's ``then`` names a phase the workflow does not have.
LOST = Workflow(
    name="lost",
    phases=[Phase("pick", "Which one?", options=("A", "B"), then=lambda answers: "nowhere")],
    finish=lambda answers: "never reached",
)


@pytest.fixture
def gateway(tmp_path: Path) -> Iterator[Gateway]:
    gw = Gateway(f"sqlite:///{tmp_path / 'parkgate.db'}", clock=ManualClock(), workflows=[UML, LOST], surface="http")
    yield gw
    gw.close()


@pytest.fixture
async def http(gateway: Gateway) -> AsyncIterator[httpx.AsyncClient]:
    app = create_app(gateway, deliver_callbacks=False)
    transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
    async with httpx.AsyncClient(transport=transport, base_url="http://parkgate") as client:
        yield client


async def test_a_workflow_whose_phase_names_an_unknown_phase_is_a_422_and_changes_nothing(
    http: httpx.AsyncClient,
) -> None:
    started = await http.post("/v1/workflows/lost/start", json={"conversation_id": "c-lost"})
    assert started.status_code == 201, started.text
    ask_id = started.json()["ask_id"]

    answered = await http.post("/v1/conversations/c-lost/messages", json={"text": "1"})
    assert answered.status_code == 422, answered.text
    body = answered.json()
    assert body["error"] == "invalid_input"
    assert "workflow 'lost' has no phase 'nowhere'" in body["detail"]
    # The answer was refused whole: the ask is still open, untouched, and can be left.
    ask = (await http.get(f"/v1/asks/{ask_id}")).json()
    assert (ask["status"], ask["mismatches"]) == ("open", 0)
    left = await http.post("/v1/conversations/c-lost/messages", json={"text": "/cancel"})
    assert left.json()["kind"] == "cancelled"


async def test_the_409_says_how_an_http_client_replaces_the_open_ask(http: httpx.AsyncClient) -> None:
    first = await http.post("/v1/asks", json={"conversation_id": "c-busy", "prompt": "A?", "options": ["x"]})
    again = await http.post("/v1/asks", json={"conversation_id": "c-busy", "prompt": "B?", "options": ["y"]})
    assert again.status_code == 409
    body = again.json()
    assert body["error"] == "ask_already_open" and body["open_ask_id"] == first.json()["ask_id"]
    assert 'send "replace": true' in body["detail"] and "replace=True" not in body["detail"]
    replaced = await http.post(
        "/v1/asks", json={"conversation_id": "c-busy", "prompt": "B?", "options": ["y"], "replace": True}
    )
    assert replaced.status_code == 201


async def test_a_closed_store_is_a_503_with_retry_after(http: httpx.AsyncClient, gateway: Gateway) -> None:
    gateway.store.close()
    response = await http.get("/v1/asks?status=open")
    assert response.status_code == 503, response.text
    assert response.json()["error"] == "store_error" and "closed" in response.json()["detail"]
    assert response.headers["Retry-After"] == "1"
