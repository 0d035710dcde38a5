"""An ask's options are declared once (:mod:`parkgate.gateway.options`) and every surface takes
them from there: the gateways' and the clients' park calls, the wire layer and the HTTP
models. An option added to the definition reaches all of them, or a test here fails.
"""

from __future__ import annotations

import dataclasses
import json
import typing
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import httpx
import pytest

from parkgate import AsyncGateway, Gateway, InputError
from parkgate.channels import ChannelTarget
from parkgate.client import AsyncClient, Client, wire
from parkgate.core.expect import Expect
from parkgate.core.shape import declared_options
from parkgate.gateway.options import (
    AskFields,
    AskOptions,
    ClientAskFields,
    OwnedParkFields,
    OwnedRunFields,
    ParkFields,
    PromptFields,
    RunFields,
    field_names,
)
from parkgate.http.channel_targets import channel_target_of
from parkgate.http.models import CHANNEL_FIELDS, AskIn, StartIn, options_of

#: The fields of a body that are not options: what is asked, and where (a channel's field
#: is the library's ``post_to``, named by its channel).
QUESTION = {"conversation_id", "prompt", "kind", "options", "skill_output", *CHANNEL_FIELDS}

#: A value for every option, as a caller passes it.
EVERY_OPTION: dict[str, Any] = {
    "run_id": "run-1",
    "ttl": timedelta(minutes=5),
    "replace": True,
    "default": "Yes",
    "callback_url": "https://hooks.example/parkgate",
    "phase": "deploy",
    "context": {"ticket": 42},
    "watched": True,
    "owner": "agent",
    "expect": {"form": "integer", "minimum": 1},
    "follow_up": True,
    "responders": ["U_ALICE", "U_BOB"],
    "quorum": 2,
    "key": "run-1/approve",
    "post_to": ChannelTarget("slack", {"channel": "C123"}),
    "remind_after": [60, 120],
    "escalate_after": 180,
    "escalate_to": ["U_CAROL"],
}


def _fields_of(call: Callable[..., Any]) -> type:
    """The ``TypedDict`` a call's ``**fields`` are typed with."""
    unpacked = typing.get_type_hints(call)["fields"]
    assert typing.get_origin(unpacked) is typing.Unpack, call
    found: type = typing.get_args(unpacked)[0]
    return found


def _json_names(fields: type) -> set[str]:
    return {option.wire for option in declared_options(fields).values()}


def test_every_option_has_a_value_here_and_a_field_in_the_checked_options() -> None:
    assert set(EVERY_OPTION) == field_names(AskFields)
    assert {field.name for field in dataclasses.fields(AskOptions)} == field_names(AskFields)


@pytest.mark.parametrize(
    ("call", "fields"),
    [
        (Gateway.ask, AskFields),
        (AsyncGateway.ask, AskFields),
        (Gateway.ask_from_text, OwnedParkFields),
        (AsyncGateway.ask_from_text, OwnedParkFields),
        (Gateway.start, OwnedRunFields),
        (AsyncGateway.start, OwnedRunFields),
        (Client.ask, ClientAskFields),
        (AsyncClient.ask, ClientAskFields),
        (Client.ask_from_text, ParkFields),
        (AsyncClient.ask_from_text, ParkFields),
        (Client.start, RunFields),
        (AsyncClient.start, RunFields),
    ],
)
def test_each_park_call_takes_its_options_from_the_one_definition(call: Callable[..., Any], fields: type) -> None:
    assert _fields_of(call) is fields


def test_the_http_models_hold_exactly_the_options_the_clients_send() -> None:
    assert set(AskIn.model_fields) - QUESTION == _json_names(PromptFields)
    assert set(StartIn.model_fields) - {"conversation_id"} == _json_names(RunFields)


def test_the_library_only_options_stay_off_the_wire() -> None:
    assert field_names(AskFields) - field_names(PromptFields) == {"owner", "watched", "post_to"}
    assert set(declared_options(AskFields)) == field_names(PromptFields), "every other option says how it travels"


def test_every_option_a_client_sends_arrives_as_the_gateways_keyword() -> None:
    sent = {name: EVERY_OPTION[name] for name in field_names(PromptFields)}
    call = wire.park("c-1", "How many?", None, "text", typing.cast(PromptFields, sent))
    assert call.body is not None
    body = AskIn.model_validate_json(call.body)
    arrived = options_of(body, PromptFields)
    assert arrived == {**sent, "ttl": 300.0}, "ttl travels as ttl_seconds, expect as its JSON"
    assert set(json.loads(call.body)) - QUESTION == _json_names(PromptFields)


def test_a_workflow_start_sends_its_options_the_same_way() -> None:
    call = wire.start("c-1", "uml", {"run_id": "run-9", "replace": True})
    assert call.body is not None
    assert options_of(StartIn.model_validate_json(call.body), RunFields) == {"run_id": "run-9", "replace": True}


def _refusing_transport(request: httpx.Request) -> httpx.Response:
    raise AssertionError(f"nothing should be sent: {request.url}")


@pytest.mark.parametrize(
    ("park", "named"),
    [
        (lambda client: client.ask("c", "Deploy?", ["Yes"], owner="agent"), "owner"),
        (lambda client: client.ask("c", "Deploy?", ["Yes"], watched=True), "watched"),
        (lambda client: client.ask_from_text("c", "[[ask]]\nWhy?\n[[/ask]]", default="x"), "default"),
        (lambda client: client.start("c", "uml", ttl=60), "ttl"),
    ],
)
def test_a_client_refuses_an_option_its_call_does_not_take_before_sending(
    park: Callable[[Client], object], named: str
) -> None:
    client = Client("http://127.0.0.1:9", transport=httpx.MockTransport(_refusing_transport))
    with client, pytest.raises(TypeError, match=named):
        park(client)


def test_a_gateway_refuses_an_option_its_call_does_not_take(gateway: Gateway) -> None:
    with pytest.raises(TypeError, match="default"):
        gateway.ask_from_text("c", "[[ask]]\nWhy?\n[[/ask]]", default="x")  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="callback_url"):
        gateway.start("c", "uml", callback_url="https://hooks.example/x")  # type: ignore[call-arg]
    assert gateway.audit() == [], "nothing was parked"


def test_every_option_reaches_the_parked_ask(gateway: Gateway) -> None:
    options = {**EVERY_OPTION, "expect": None, "default": "Yes"}
    reply = gateway.ask("c", "Deploy?", ["Yes", "No"], **options)
    ask = gateway.get(reply.ask_id or "")
    assert (ask.run_id, ask.ttl, ask.default, ask.callback_url) == (
        "run-1",
        timedelta(minutes=5),
        "Yes",
        options["callback_url"],
    )
    assert (ask.phase, dict(ask.context or {}), ask.watched, ask.owner) == ("deploy", {"ticket": 42}, True, "agent")
    assert gateway.get(gateway.ask("c2", "How many?", expect="integer").ask_id or "").expect == Expect("integer")


def test_the_checked_options_are_one_frozen_value() -> None:
    checked = AskOptions.checked({"ttl": 60, "callback_url": "https://hooks.example/x"})
    assert (checked.ttl, checked.watched) == (timedelta(seconds=60), True), "a callback means a waiter"
    with pytest.raises(dataclasses.FrozenInstanceError):
        checked.ttl = None  # type: ignore[misc]
    with pytest.raises(InputError, match="ttl"):
        AskOptions.checked({"ttl": "60"})


def test_a_client_sends_the_librarys_post_to_as_its_channels_key() -> None:
    target = ChannelTarget("slack", {"channel": "C123"})
    call = wire.park("c-1", "Deploy?", ["Yes"], None, {"post_to": target})
    assert call.body is not None and json.loads(call.body)["slack"] == {"channel": "C123"}
    assert channel_target_of(AskIn.model_validate_json(call.body)) == target
    keyed = wire.park("c-1", "Deploy?", ["Yes"], None, typing.cast(ClientAskFields, {"slack": {"channel": "C123"}}))
    assert keyed.body == call.body, "the channel's key as a keyword sends the same"
    with pytest.raises(InputError, match="one channel"):
        wire.park("c-1", "Deploy?", ["Yes"], None, typing.cast(ClientAskFields, {"post_to": target, "slack": {}}))
    with pytest.raises(TypeError, match="mattermost"):
        wire.park("c-1", "Deploy?", ["Yes"], None, typing.cast(ClientAskFields, {"mattermost": {"channel": "x"}}))
