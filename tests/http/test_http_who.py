"""Who may answer over HTTP, in process on both stores: ``sender`` in a message's body,
``responders`` and ``quorum`` in a park's and a workflow start's, and the who-fields in
the ask's JSON; bad ones are a 422 that parks nothing, an operator's cancel is
``closed_by`` ``operator``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from parkgate import Gateway, ManualClock
from parkgate.cli.demo import UML
from parkgate.http.app import create_app
from parkgate.store import Store

ASK = {"conversation_id": "c-who", "prompt": "Deploy?", "options": ["Deploy", "Hold"]}
PATH = "/v1/conversations/c-who/messages"


@pytest.fixture
async def http(store: Store, clock: ManualClock) -> AsyncIterator[httpx.AsyncClient]:
    gateway = Gateway(store=store, clock=clock, workflows=[UML], surface="http")
    app = create_app(gateway, deliver_callbacks=False)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://parkgate") as client:
        yield client


async def say(http: httpx.AsyncClient, text: str, sender: str | None = None) -> dict[str, Any]:
    body = {"text": text} if sender is None else {"text": text, "sender": sender}
    response = await http.post(PATH, json=body)
    assert response.status_code == 200, response.text
    reply: dict[str, Any] = response.json()
    return reply


async def test_the_two_of_three_scenario_over_http(http: httpx.AsyncClient) -> None:
    parked = await http.post("/v1/asks", json={**ASK, "responders": ["A", "B", "C"], "quorum": 2})
    assert parked.status_code == 201, parked.text
    ask_id = parked.json()["ask_id"]
    assert (await say(http, "1", "U_Z"))["kind"] == "not_yours"
    assert (await say(http, "1"))["kind"] == "not_yours"  # no sender
    assert (await say(http, "1", "A"))["kind"] == "voted"
    assert (await say(http, "2", "B"))["kind"] == "voted"
    closed = await say(http, "1", "C")
    assert (closed["kind"], closed["answer"], closed["option_index"]) == ("selected", "Deploy", 1)
    shown = (await http.get(f"/v1/asks/{ask_id}")).json()
    assert (shown["responders"], shown["quorum"], shown["answered_by"], shown["closed_by"]) == (
        ["A", "B", "C"],
        2,
        "C",
        None,
    )
    assert [(vote["sender"], vote["option_index"], vote["answer"]) for vote in shown["votes"]] == [
        ("A", 1, "Deploy"),
        ("B", 2, "Hold"),
        ("C", 1, "Deploy"),
    ]
    assert all(isinstance(vote["at"], str) for vote in shown["votes"])


async def test_an_ask_without_responders_shows_empty_who_fields(http: httpx.AsyncClient) -> None:
    ask_id = (await http.post("/v1/asks", json=ASK)).json()["ask_id"]
    shown = (await http.get(f"/v1/asks/{ask_id}")).json()
    assert {key: shown[key] for key in ("responders", "quorum", "votes", "answered_by", "closed_by")} == {
        "responders": [],
        "quorum": 1,
        "votes": [],
        "answered_by": None,
        "closed_by": None,
    }
    assert (await say(http, "cancel", "U_ANY"))["kind"] == "cancelled"
    assert (await http.get(f"/v1/asks/{ask_id}")).json()["closed_by"] == "U_ANY"


async def test_an_operators_cancel_is_closed_by_operator(http: httpx.AsyncClient) -> None:
    ask_id = (await http.post("/v1/asks", json={**ASK, "responders": ["A"]})).json()["ask_id"]
    cancelled = await http.post(f"/v1/asks/{ask_id}/cancel")
    assert cancelled.status_code == 200, cancelled.text
    assert (cancelled.json()["status"], cancelled.json()["closed_by"]) == ("cancelled", "operator")


async def test_a_workflow_start_takes_responders(http: httpx.AsyncClient) -> None:
    started = await http.post("/v1/workflows/uml/start", json={"conversation_id": "c-who", "responders": ["A"]})
    assert started.status_code == 201, started.text
    assert (await say(http, "1", "B"))["kind"] == "not_yours"
    assert (await say(http, "1", "A"))["kind"] == "selected"


@pytest.mark.parametrize(
    ("body", "says"),
    [
        ({"responders": []}, "responders is empty"),
        ({"responders": ["A", "A"]}, "responders names 'A' twice"),
        ({"responders": ["A\u0007"]}, "responders item 1 contains a control character"),
        ({"quorum": 1}, "quorum needs responders"),
        ({"responders": ["A", "B"], "quorum": 3}, "quorum of 3 is more than the 2 responders"),
        ({"responders": ["A", "B"], "quorum": 0}, "quorum must be at least 1"),
        ({"responders": ["A", "B"], "quorum": "2"}, "quorum"),
        ({"responders": "A"}, "responders"),
        ({"prompt": "Why?", "options": None, "responders": ["A", "B"], "quorum": 2}, "a text ask takes quorum 1"),
    ],
)
async def test_bad_responders_or_quorum_are_422_and_park_nothing(
    http: httpx.AsyncClient, body: dict[str, Any], says: str
) -> None:
    refused = await http.post("/v1/asks", json={**ASK, **body})
    assert refused.status_code == 422, refused.text
    assert says in refused.json()["detail"]
    assert (await http.get("/v1/asks", params={"status": "open"})).json()["asks"] == []


@pytest.mark.parametrize(
    ("sender", "says"),
    [("", "sender"), ("x" * 201, "sender"), ("U\u0007", "sender contains a control character"), ("U\x00", "NUL")],
)
async def test_a_bad_sender_is_422_and_changes_nothing(http: httpx.AsyncClient, sender: str, says: str) -> None:
    ask_id = (await http.post("/v1/asks", json={**ASK, "responders": ["A"]})).json()["ask_id"]
    before = (await http.get(f"/v1/asks/{ask_id}")).json()
    refused = await http.post(PATH, json={"text": "1", "sender": sender})
    assert refused.status_code == 422, refused.text
    assert says in refused.json()["detail"]
    assert (await http.get(f"/v1/asks/{ask_id}")).json() == before
