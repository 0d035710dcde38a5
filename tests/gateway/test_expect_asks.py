"""A text ask that expects a form, through the gateway.

The form is stored with the ask, so a reopened gateway (another process) and the
remembered-ask path decide alike; bad expectations are refused before anything is written.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import httpx
import pytest

from parkgate import AsyncGateway, Gateway, InputError, ReplyKind
from parkgate.core.expect import Expect
from parkgate.http.app import create_app

if TYPE_CHECKING:
    from conftest import Reopen


def test_a_number_ask_takes_only_a_number_in_range_and_says_what_it_wants(gateway: Gateway, reopen: Reopen) -> None:
    asked = gateway.ask("c1", "How many replicas?", expect={"form": "integer", "minimum": 1, "maximum": 5})
    assert "a whole number from 1 to 5" in asked.text
    bounce = gateway.handle("c1", "three", message_id="m1")
    assert bounce.kind is ReplyKind.RETRY and bounce.parked
    assert bounce.text.startswith("Please type a whole number from 1 to 5.\n\nHow many replicas?")
    # Another gateway on the same store (another process) reads the form with the ask.
    other = reopen()
    assert other.get(asked.ask_id or "").expect == Expect("integer", minimum=1, maximum=5)
    assert other.handle("c1", "9").kind is ReplyKind.RETRY
    escalated = other.handle("c1", "0")
    assert escalated.kind is ReplyKind.ESCALATED and "Still not a whole number from 1 to 5 (3 tries)" in escalated.text
    assert gateway.handle("c1", "4").kind is ReplyKind.ANSWERED  # the first gateway's memory is stale: it re-reads
    ask = gateway.get(asked.ask_id or "")
    assert (ask.answer, ask.mismatches) == ("4", 0)
    assert gateway.handle("c1", "m1").kind is ReplyKind.PASS  # unparked


def test_a_remembered_ask_keeps_its_form(gateway: Gateway) -> None:
    gateway.ask("c1", "Your email?", expect="email")
    for _ in range(2):  # decided from the store's memory of the open ask
        assert gateway.handle("c1", "not an address").kind is ReplyKind.RETRY
    answered = gateway.handle("c1", "ada@example.com")
    assert answered.kind is ReplyKind.ANSWERED and answered.answer == "ada@example.com"


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"options": ["Yes", "No"], "expect": "integer"}, "expect is for text asks"),
        ({"expect": {"form": "integer", "minimum": 3, "maximum": 1}}, "minimum 3 is above maximum 1"),
        ({"expect": "phone"}, "expect form must be one of"),
        ({"expect": "integer", "default": "many"}, "default 'many' is not a whole number"),
        ({"expect": ["integer"]}, "expect must be a form's name"),
    ],
)
def test_a_bad_expectation_parks_nothing(gateway: Gateway, arguments: dict[str, Any], message: str) -> None:
    with pytest.raises(InputError, match=message):
        gateway.ask("c1", "How many?", **arguments)
    assert gateway.open_asks() == []


def test_a_default_of_the_form_is_recorded_on_expiry(gateway: Gateway, clock: Any) -> None:
    asked = gateway.ask("c1", "Start on?", expect="date", default="2026-03-01", ttl=60)
    clock.advance(61)
    ask = gateway.get(asked.ask_id or "")
    assert ask.status.value == "expired" and ask.answer == "2026-03-01"


async def test_the_async_gateway_parks_a_form_too(gateway: Gateway) -> None:
    agw = AsyncGateway(gateway)
    asked = await agw.ask("c1", "When?", expect=Expect("date-time"))
    assert (await agw.handle("c1", "tomorrow")).kind is ReplyKind.RETRY
    assert (await agw.get(asked.ask_id or "")).expect == Expect("date-time")


async def test_http_parks_a_form_and_shows_it_on_the_ask(gateway: Gateway) -> None:
    app = create_app(gateway, deliver_callbacks=False)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://parkgate") as http:
        body = {"conversation_id": "c1", "prompt": "Replicas?", "expect": {"form": "integer", "maximum": 5}}
        parked = await http.post("/v1/asks", json=body)
        assert parked.status_code == 201, parked.text
        ask_id = parked.json()["ask_id"]
        shown = (await http.get(f"/v1/asks/{ask_id}")).json()
        assert shown["expect"] == {"form": "integer", "maximum": 5}
        reply = await http.post("/v1/conversations/c1/messages", json={"text": "6"})
        assert reply.json()["kind"] == "retry" and "a whole number of at most 5" in reply.json()["text"]
        wrong = {"form": "email", "maximum": 5}
        bad = await http.post("/v1/asks", json={**body, "conversation_id": "c2", "expect": wrong})
        assert bad.status_code == 422 and "maximum is for the number and integer forms" in bad.text
        unknown = await http.post("/v1/asks", json={**body, "conversation_id": "c3", "expect": {"form": "phone"}})
        assert unknown.status_code == 422


def test_a_several_options_ask_takes_numbers_and_labels_and_keeps_its_form(gateway: Gateway, reopen: Reopen) -> None:
    expect = {"form": "several", "options": ["Red", "Dark blue", "Green"], "max_items": 2}
    asked = gateway.ask("c1", "Which colours?", expect=expect)
    assert "1. Red\n2. Dark blue\n3. Green" in asked.text
    bounce = gateway.handle("c1", "1 2 3")
    assert bounce.kind is ReplyKind.RETRY and bounce.text.startswith("Please type the numbers or names of at most 2")
    other = reopen()
    stored = other.get(asked.ask_id or "").expect
    assert stored == Expect("several", options=("Red", "Dark blue", "Green"), max_items=2)
    assert other.handle("c1", "/menu").kind is ReplyKind.RESHOWN
    answered = gateway.handle("c1", "3, dark blue")
    assert answered.kind is ReplyKind.ANSWERED and answered.answer == "3, dark blue"
    assert gateway.handle("c2", "x").kind is ReplyKind.PASS


def test_a_several_options_default_is_recorded_on_expiry(gateway: Gateway, clock: Any) -> None:
    expect = Expect("several", options=("a", "b", "c"))
    with pytest.raises(InputError, match="default '4' is not"):
        gateway.ask("c1", "Which?", expect=expect, default="4")
    asked = gateway.ask("c1", "Which?", expect=expect, default="1, 3", ttl=60)
    clock.advance(61)
    assert gateway.get(asked.ask_id or "").answer == "1, 3"


async def test_http_parks_a_several_options_ask_and_shows_its_options(gateway: Gateway) -> None:
    app = create_app(gateway, deliver_callbacks=False)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://parkgate") as http:
        expect = {"form": "several", "options": ["Red", "Green"], "min_items": 1}
        parked = await http.post("/v1/asks", json={"conversation_id": "c1", "prompt": "Colours?", "expect": expect})
        assert parked.status_code == 201, parked.text
        shown = (await http.get(f"/v1/asks/{parked.json()['ask_id']}")).json()
        assert shown["expect"] == expect
        reply = await http.post("/v1/conversations/c1/messages", json={"text": "2,1"})
        assert reply.json()["kind"] == "answered"
