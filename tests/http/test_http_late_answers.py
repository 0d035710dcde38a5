"""An answer naming its ask over HTTP (``POST /v1/conversations/{id}/messages`` with
``ask_id``): it goes to that ask only, and once that ask has closed it is a ``late``
reply saying how and when it closed, and a ``late`` event at the end of its timeline;
the ask stays as it closed. In process, on a manual clock, so the close time is known.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from late_words import at
from parkgate import Gateway, ManualClock
from parkgate.http.app import create_app


@pytest.fixture
def gateway(tmp_path: Path, clock: ManualClock) -> Iterator[Gateway]:
    # The HTTP service's gateway, as parkgate serve makes it: its surface is http.
    with Gateway(f"sqlite:///{tmp_path / 'parkgate.db'}", clock=clock, surface="http") as gw:
        yield gw


@pytest.fixture
async def http(gateway: Gateway) -> AsyncIterator[httpx.AsyncClient]:
    app = create_app(gateway, deliver_callbacks=False)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://parkgate") as client:
        yield client


async def park(http: httpx.AsyncClient, conversation: str, **fields: Any) -> str:
    body = {"conversation_id": conversation, "prompt": "Deploy?", "options": ["Deploy", "Hold"], **fields}
    parked = await http.post("/v1/asks", json=body)
    assert parked.status_code == 201, parked.text
    return str(parked.json()["ask_id"])


async def say(http: httpx.AsyncClient, conversation: str, **body: Any) -> dict[str, Any]:
    answer = await http.post(f"/v1/conversations/{conversation}/messages", json=body)
    assert answer.status_code == 200, answer.text
    reply: dict[str, Any] = answer.json()
    return reply


async def timeline(http: httpx.AsyncClient, ask_id: str) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = (await http.get(f"/v1/asks/{ask_id}/events")).json()["events"]
    return events


async def test_an_answer_naming_a_cancelled_ask_is_late_and_told_how_and_when_it_closed(
    http: httpx.AsyncClient, clock: ManualClock
) -> None:
    ask_id = await park(http, "deploy-1")
    clock.advance(timedelta(minutes=5))
    cancelled_at = clock.now()
    assert (await http.post(f"/v1/asks/{ask_id}/cancel", json={})).status_code == 200
    before = (await http.get(f"/v1/asks/{ask_id}")).json()
    clock.advance(timedelta(minutes=3))

    reply = await say(http, "deploy-1", text="1", sender="alice", ask_id=ask_id, message_id="m-1")
    assert (reply["kind"], reply["parked"], reply["ask_id"]) == ("late", False, ask_id)
    assert reply["text"] == f"This question is already closed (dropped by an operator {at(cancelled_at)})."
    assert (await http.get(f"/v1/asks/{ask_id}")).json() == before  # the ask stays as it closed

    events = await timeline(http, ask_id)
    assert [event["type"] for event in events][-2:] == ["closed", "late"]
    late = events[-1]
    assert (late["sender"], late["at"]) == ("alice", clock.now().isoformat())
    assert late["data"] == {
        "surface": "http",
        "status": "cancelled",
        "outcome": "cancelled",
        "closed_at": cancelled_at.isoformat(),
        "text": "Deploy",  # what it would have answered
    }
    # A redelivery answers the same and logs nothing more.
    assert await say(http, "deploy-1", text="1", sender="alice", ask_id=ask_id, message_id="m-1") == reply
    assert len(await timeline(http, ask_id)) == len(events)


async def test_an_answer_naming_an_ask_past_its_ttl_closes_it_as_expired_and_is_late(
    http: httpx.AsyncClient, clock: ManualClock
) -> None:
    ask_id = await park(http, "deploy-2", ttl_seconds=60)
    due_at = clock.now() + timedelta(seconds=60)
    clock.advance(timedelta(seconds=90))
    reply = await say(http, "deploy-2", text="Hold", ask_id=ask_id)
    assert (reply["kind"], reply["text"]) == ("late", f"This question is already closed (it expired {at(due_at)}).")
    ask = (await http.get(f"/v1/asks/{ask_id}")).json()
    assert (ask["status"], ask["answer"]) == ("expired", None)
    assert [event["type"] for event in await timeline(http, ask_id)][-2:] == ["closed", "late"]


async def test_an_answer_naming_the_open_ask_answers_it_and_leaves_another_alone(http: httpx.AsyncClient) -> None:
    first = await park(http, "deploy-3")
    second = await park(http, "deploy-3", replace=True)  # the first is closed as replaced
    late = await say(http, "deploy-3", text="1", ask_id=first)
    assert (late["kind"], late["parked"]) == ("late", True)  # the second is still open there
    assert "replaced by a newer question at " in late["text"]
    assert (await http.get(f"/v1/asks/{second}")).json()["status"] == "open"
    selected = await say(http, "deploy-3", text="2", ask_id=second)
    assert (selected["kind"], selected["answer"]) == ("selected", "Hold")


async def test_an_ask_id_unknown_or_of_another_conversation_is_a_pass_that_tells_nothing(
    http: httpx.AsyncClient,
) -> None:
    elsewhere = await park(http, "deploy-4")
    await http.post(f"/v1/asks/{elsewhere}/cancel", json={})
    await park(http, "deploy-5")
    for named in (elsewhere, "no-such-ask"):
        reply = await say(http, "deploy-5", text="1", ask_id=named)
        assert (reply["kind"], reply["text"], reply["ask_id"]) == ("pass", "", None)
    assert [event["type"] for event in await timeline(http, elsewhere)][-1] == "closed"
