"""MCP elicitation through parkgate, both directions, with the real MCP SDK.

accept <-> selected/answered, decline <-> cancelled, cancel <-> expired, exactly, both
ways. Every client/server test runs an MCP server as a subprocess and talks to it over
the stdio transport: ``tests/adapters/mcp_form_server.py`` (a plain server that elicits
any form), and the examples in ``examples/`` (parkgate's own server, and a client that a
person answers through parkgate). Stores: SQLite and PostgreSQL (the ``store`` fixture).
"""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
from collections.abc import Awaitable, Callable, Iterator
from datetime import timedelta
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import pytest
from mcp import Client
from mcp.client.session import ClientRequestContext
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.shared.exceptions import MCPError
from mcp_types import (
    INVALID_PARAMS,
    ElicitRequestFormParams,
    ElicitRequestParams,
    ElicitRequestURLParams,
    ElicitResult,
    ErrorData,
)
from mcp_types._v2025_11_25 import PrimitiveSchemaDefinition
from pydantic import TypeAdapter

from parkgate import AskStatus, Gateway, InputError, ManualClock, Reply, ReplyKind, StoppingPointError
from parkgate.adapters.mcp import (
    ABANDONED,
    DISMISSED,
    INVALID_ANSWER,
    ParkgateElicitation,
    apply_elicit_result,
    elicit_params,
    read_form,
    requested_schema,
    to_elicit_result,
)
from parkgate.core import phrases as P
from parkgate.core.expect import Expect
from parkgate.core.kinds import AskKind
from parkgate.store import Store

if TYPE_CHECKING:
    from conftest import StoreLocation

ROOT = Path(__file__).resolve().parents[2]
FORM_SERVER = Path(__file__).with_name("mcp_form_server.py")
ASK_SERVER = ROOT / "examples" / "mcp_ask_server.py"
CHAT_CLIENT = ROOT / "examples" / "mcp_chat_client.py"
OPTIONS = ["Sequence", "Class", "State machine"]
TTL = timedelta(hours=6)
PAST_TTL = TTL + timedelta(seconds=1)
MODES = ["legacy", "auto"]  # the 2025-11-25 back-channel, and the 2026-07-28 input-required flow


def park_choice(gw: Gateway, conversation: str = "c1") -> str:
    return gw.ask(conversation, "Which UML diagram?", OPTIONS, run_id=f"run-{conversation}").ask_id or ""


def park_text(gw: Gateway, conversation: str = "c1") -> str:
    return gw.ask(conversation, "Describe the change", run_id=f"run-{conversation}").ask_id or ""


def form(message: str, props: dict[str, Any], required: list[str] | None = None) -> ElicitRequestFormParams:
    schema: dict[str, Any] = {"type": "object", "properties": props}
    if required is not None:
        schema["required"] = required
    return ElicitRequestFormParams(message=message, requested_schema=schema)


ENV = {"type": "string", "oneOf": [{"const": "prod", "title": "Production"}, {"const": "stg", "title": "Staging"}]}


# -- parkgate -> MCP: what a reply or a closed ask stands for ---------------------------------
def test_a_selection_is_accept_with_the_chosen_label(gateway: Gateway) -> None:
    ask_id = park_choice(gateway)
    reply = gateway.handle("c1", "2")
    assert to_elicit_result(gateway.get(ask_id)) == ElicitResult(action="accept", content={"choice": "Class"})
    field = read_form(form("Which?", {"diagram": {"type": "string", "enum": OPTIONS}})).fields[0]
    assert to_elicit_result(reply, field) == ElicitResult(action="accept", content={"diagram": "Class"})


def test_cancel_words_decline_expiry_cancels_and_non_answers_have_no_result(
    gateway: Gateway, clock: ManualClock
) -> None:
    dropped = park_choice(gateway, "c1")
    assert to_elicit_result(gateway.handle("c1", "nevermind")) == ElicitResult(action="decline")
    assert to_elicit_result(gateway.get(dropped)) == ElicitResult(action="decline")
    park_choice(gateway, "c2")
    for text in ["9", "menu", "Clas"]:
        assert to_elicit_result(gateway.handle("c2", text)) is None
    expiring = gateway.ask("c3", "Deploy?", ["Yes", "No"], default="No").ask_id or ""
    clock.advance(PAST_TTL)
    assert to_elicit_result(gateway.handle("c3", "1")) == ElicitResult(action="cancel")
    ask = gateway.get(expiring)
    assert ask.answer == "No" and to_elicit_result(ask) == ElicitResult(action="cancel")  # a default is no accept
    with pytest.raises(InputError, match="not the outcome"):
        to_elicit_result(gateway.handle("never-seen", "hello"))


def test_an_ask_as_a_form_is_spec_valid_schema(gateway: Gateway) -> None:
    primitive: TypeAdapter[Any] = TypeAdapter(PrimitiveSchemaDefinition)
    choice = gateway.get(park_choice(gateway, "c1"))
    text = gateway.get(park_text(gateway, "c2"))
    replicas = gateway.ask("c3", "Replicas?", expect={"form": "integer", "minimum": 1}, default="2")
    number = gateway.get(replicas.ask_id or "")
    email = gateway.get(gateway.ask("c4", "Email?", expect="email").ask_id or "")
    picks = Expect("several", options=("a", "b", "c"), max_items=2)
    several = gateway.get(gateway.ask("c5", "Which?", expect=picks, default="3, 1").ask_id or "")
    assert requested_schema(several)["properties"]["answer"] == {
        "type": "array",
        "items": {"type": "string", "enum": ["a", "b", "c"]},
        "maxItems": 2,
        "default": ["a", "c"],
    }
    assert requested_schema(choice)["properties"] == {"choice": {"type": "string", "enum": OPTIONS}}
    assert requested_schema(text)["properties"] == {"answer": {"type": "string", "minLength": 1}}
    assert requested_schema(number)["properties"] == {"answer": {"type": "integer", "minimum": 1, "default": 2}}
    assert requested_schema(email)["properties"]["answer"]["format"] == "email"
    for ask in (choice, text, number, email, several):
        for prop in requested_schema(ask)["properties"].values():
            primitive.validate_python(prop)
        assert elicit_params(ask).message == ask.prompt


# -- MCP -> parkgate: applying a client's result --------------------------------------------------
def test_accept_selects_by_label_and_finishes_the_run(gateway: Gateway) -> None:
    ask_id = park_choice(gateway)
    reply = apply_elicit_result(gateway, ask_id, ElicitResult(action="accept", content={"choice": "state MACHINE"}))
    assert reply.kind is ReplyKind.SELECTED and reply.answer == "State machine" and reply.option_index == 3
    run = gateway.run("run-c1")
    assert run is not None and (run.status, run.outcome, run.pending_ask_id) == ("complete", "done", None)
    assert gateway.open_asks() == []


def test_accept_of_a_number_ask_checks_the_number(gateway: Gateway) -> None:
    ask_id = gateway.ask("c1", "Replicas?", expect={"form": "integer", "maximum": 5}, run_id="r1").ask_id or ""
    bounce = apply_elicit_result(gateway, ask_id, ElicitResult(action="accept", content={"answer": 9}))
    assert bounce.kind is ReplyKind.RETRY and "a whole number of at most 5" in bounce.text
    with pytest.raises(InputError, match="must be a number"):
        apply_elicit_result(gateway, ask_id, ElicitResult(action="accept", content={"answer": "4"}))
    answered = apply_elicit_result(gateway, ask_id, ElicitResult(action="accept", content={"answer": 4}))
    assert answered.kind is ReplyKind.ANSWERED
    assert to_elicit_result(gateway.get(ask_id)) == ElicitResult(action="accept", content={"answer": 4})


def test_accept_of_a_several_options_ask_takes_a_list_of_options(gateway: Gateway) -> None:
    picks = Expect("several", options=("Red", "Dark blue", "1"), max_items=2)
    ask_id = gateway.ask("c1", "Colours?", expect=picks, run_id="r1").ask_id or ""
    for wrong in ("Red", [], ["Purple"]):
        with pytest.raises(InputError, match=r"list of options|not one of the options"):
            apply_elicit_result(gateway, ask_id, ElicitResult(action="accept", content={"answer": wrong}))
    too_many = ElicitResult(action="accept", content={"answer": ["Red", "1", "dark BLUE"]})
    assert apply_elicit_result(gateway, ask_id, too_many).kind is ReplyKind.RETRY
    answered = apply_elicit_result(gateway, ask_id, ElicitResult(action="accept", content={"answer": ["1", "Red"]}))
    assert answered.kind is ReplyKind.ANSWERED and answered.answer == "3, 1"  # by position: "1" is a label
    assert to_elicit_result(gateway.get(ask_id)) == ElicitResult(action="accept", content={"answer": ["Red", "1"]})
    run = gateway.run("r1")
    assert run is not None and (run.status, run.outcome) == ("complete", "done")


def test_accept_with_content_the_form_did_not_ask_for_is_refused_and_changes_nothing(gateway: Gateway) -> None:
    ask_id = park_choice(gateway)
    before = gateway.get(ask_id)
    for content in ({"choice": "Activity"}, {"answer": "Class"}, {"choice": 2}, None):
        with pytest.raises(InputError):
            apply_elicit_result(gateway, ask_id, ElicitResult(action="accept", content=content))
    assert gateway.get(ask_id) == before


def test_decline_cancels_and_cancel_expires_now(gateway: Gateway) -> None:
    declined = park_choice(gateway, "c1")
    dismissed = park_choice(gateway, "c2")
    assert apply_elicit_result(gateway, declined, ElicitResult(action="decline")).kind is ReplyKind.CANCELLED
    passed = apply_elicit_result(gateway, dismissed, ElicitResult(action="cancel"))
    assert passed.kind is ReplyKind.PASS and passed.expired_ask_id == dismissed
    assert gateway.get(declined).status is AskStatus.CANCELLED and gateway.get(dismissed).status is AskStatus.EXPIRED
    for run_id, outcome in (("run-c1", "cancelled"), ("run-c2", DISMISSED)):
        run = gateway.run(run_id)
        assert run is not None and (run.status, run.outcome) == ("complete", outcome)
    assert apply_elicit_result(gateway, declined, ElicitResult(action="decline")).kind is ReplyKind.CANCELLED
    with pytest.raises(InputError, match="already cancelled"):
        apply_elicit_result(gateway, declined, ElicitResult(action="accept", content={"choice": "Class"}))


def test_a_dismissed_form_is_no_ttl_expiry_in_the_metrics_or_the_logs(
    gateway: Gateway, clock: ManualClock, caplog: pytest.LogCaptureFixture
) -> None:
    dismissed, lapsed = park_choice(gateway, "c-dismissed"), park_choice(gateway, "c-lapsed")
    with caplog.at_level(logging.INFO, logger="parkgate"):
        apply_elicit_result(gateway, dismissed, ElicitResult(action="cancel"))
        assert not [record for record in caplog.records if "ask_expired" in record.getMessage()]
        clock.advance(PAST_TTL)
        passed = apply_elicit_result(gateway, lapsed, ElicitResult(action="accept", content={"choice": "Class"}))
    assert passed.kind is ReplyKind.PASS and passed.expired_ask_id == lapsed  # the TTL ran out first
    assert (gateway.get(dismissed).status, gateway.get(dismissed).outcome) == (AskStatus.EXPIRED, DISMISSED)
    assert (gateway.get(lapsed).status, gateway.get(lapsed).outcome) == (AskStatus.EXPIRED, "expired")
    [logged] = [record for record in caplog.records if "ask_expired" in record.getMessage()]
    assert lapsed in logged.getMessage()
    closed = partial(gateway.metrics.registry.get_sample_value, "parkgate_asks_closed_total")
    assert closed({"outcome": DISMISSED, "surface": gateway.metrics.surface}) == 1
    assert closed({"outcome": "expired", "surface": gateway.metrics.surface}) == 1


def test_an_accept_is_the_senders_message_on_an_ask_with_responders(gateway: Gateway) -> None:
    ask_id = gateway.ask("c1", "Deploy?", ["Deploy", "Hold"], responders=["U_ALICE"]).ask_id or ""
    accept = ElicitResult(action="accept", content={"choice": "Deploy"})
    assert apply_elicit_result(gateway, ask_id, accept).kind is ReplyKind.NOT_YOURS
    assert apply_elicit_result(gateway, ask_id, accept, sender="U_BOB").kind is ReplyKind.NOT_YOURS
    assert gateway.get(ask_id).is_open
    assert apply_elicit_result(gateway, ask_id, accept, sender="U_ALICE").kind is ReplyKind.SELECTED
    assert gateway.get(ask_id).answered_by == "U_ALICE"


def test_a_redelivered_result_returns_the_first_reply(gateway: Gateway) -> None:
    ask_id = park_choice(gateway)
    accept = ElicitResult(action="accept", content={"choice": "Class"})
    first = apply_elicit_result(gateway, ask_id, accept, message_id="m-1")
    assert apply_elicit_result(gateway, ask_id, accept, message_id="m-1") == first
    with pytest.raises(InputError, match="already answered"):
        apply_elicit_result(gateway, ask_id, ElicitResult(action="decline"), message_id="m-2")


# -- reading an MCP form as parkgate asks ----------------------------------------------------------
def test_every_shape_of_the_restricted_schema_reads_as_an_ask() -> None:
    read = read_form(
        form(
            "Deploy",
            {
                "confirm": {"type": "boolean", "title": "Deploy now?", "default": False},
                "env": ENV,
                "region": {"type": "string", "enum": ["eu", "us"], "enumNames": ["Europe", "America"], "default": "us"},
                "tier": {"type": "string", "enum": ["a", "b"]},
                "replicas": {"type": "integer", "minimum": 1, "maximum": 10, "default": 2},
                "ratio": {"type": "number", "maximum": 1.5},
                "contact": {"type": "string", "format": "email"},
                "docs": {"type": "string", "format": "uri"},
                "day": {"type": "string", "format": "date"},
                "at": {"type": "string", "format": "date-time"},
                "note": {"type": "string", "minLength": 3, "description": "Why now?"},
                "free": {"type": "string"},
            },
        )
    )
    by_name = {field.name: field for field in read.fields}
    assert list(by_name) == (
        ["confirm", "env", "region", "tier", "replicas", "ratio", "contact", "docs", "day", "at", "note", "free"]
    )
    confirm = by_name["confirm"]
    assert (confirm.kind, confirm.spec.options, confirm.values, confirm.default) == (
        AskKind.CHOICE,
        ("Yes", "No"),
        (True, False),
        "No",
    )
    assert confirm.spec.prompt == "Deploy\n\nDeploy now? (1 of 12)"
    assert (by_name["env"].spec.options, by_name["env"].values) == (("Production", "Staging"), ("prod", "stg"))
    assert (by_name["region"].spec.options, by_name["region"].default) == (("Europe", "America"), "America")
    assert by_name["tier"].spec.options == ("a", "b")
    assert (by_name["replicas"].expect, by_name["replicas"].default) == (Expect("integer", minimum=1, maximum=10), "2")
    assert by_name["ratio"].expect == Expect("number", maximum=1.5)
    assert [by_name[name].expect for name in ("contact", "docs", "day", "at")] == [
        Expect("email"),
        Expect("uri"),
        Expect("date"),
        Expect("date-time"),
    ]
    assert by_name["note"].expect == Expect("text", min_length=3) and by_name["note"].spec.prompt.endswith("Why now?")
    assert by_name["free"].kind is AskKind.TEXT and by_name["free"].expect is None
    single = read_form(form("Deploy to production?", {"confirm": {"type": "boolean"}})).fields[0]
    assert single.spec.prompt == "Deploy to production?"


def test_a_one_field_form_keeps_its_fields_title_and_description_in_the_prompt() -> None:
    titled = {**ENV, "title": "Environment", "description": "Where it runs"}
    assert read_form(form("Deploy the web service", {"env": titled})).fields[0].spec.prompt == (
        "Deploy the web service\n\nEnvironment\nWhere it runs"
    )
    assert read_form(form("", {"env": titled})).fields[0].spec.prompt == "Environment\nWhere it runs"
    same = {"type": "boolean", "title": "Deploy now?"}
    assert read_form(form("Deploy now?", {"confirm": same})).fields[0].spec.prompt == "Deploy now?"


def test_every_multi_select_of_the_restricted_schema_reads_as_a_several_options_ask() -> None:
    primitive: TypeAdapter[Any] = TypeAdapter(PrimitiveSchemaDefinition)
    props: dict[str, Any] = {
        "tags": {"type": "array", "items": {"type": "string", "enum": ["api", "web"]}, "default": ["web"]},
        "zones": {
            "type": "array",
            "title": "Zones",
            "items": {"anyOf": [{"const": "eu-1", "title": "Frankfurt"}, {"const": "us-1", "title": "Virginia"}]},
            "minItems": 1,
            "maxItems": 1,
        },
    }
    for prop in props.values():
        primitive.validate_python(prop)  # shapes the spec allows
    by_name = {field.name: field for field in read_form(form("Pick", props)).fields}
    tags, zones = by_name["tags"], by_name["zones"]
    assert (tags.kind, tags.expect, tags.values, tags.default) == (
        AskKind.TEXT,
        Expect("several", options=("api", "web")),
        ("api", "web"),
        "2",
    )
    assert zones.expect == Expect("several", options=("Frankfurt", "Virginia"), min_items=1, max_items=1)
    assert zones.value("Virginia", None) == ["us-1"] and tags.value("1 2", None) == ["api", "web"]


@pytest.mark.parametrize(
    ("props", "message"),
    [
        ({}, "no fields"),
        ({"tags": {"type": "array", "items": {"type": "number"}}}, "field 'tags': an array's items"),
        ({"t": {"type": "array", "items": {"anyOf": [{"title": "A"}]}}}, "field 't': items.anyOf"),
        ({"t": {"type": "array", "items": {"enum": ["a", "b"]}, "maxItems": 3}}, "field 't': expect max_items"),
        ({"t": {"type": "array", "items": {"enum": ["a", "b"]}, "default": ["c"]}}, "field 't': default"),
        ({"t": {"type": "array", "items": {"enum": ["a", "b"]}, "default": "a"}}, "field 't': default"),
        ({"o": {"type": "object"}}, "field 'o' is 'object'"),
        ({"p": {"type": "string", "format": "phone"}}, "field 'p': format 'phone'"),
        ({"n": {"type": "integer", "minimum": "1"}}, "field 'n': expect minimum must be a finite number"),
        ({"n": {"type": "integer", "default": "two"}}, "field 'n': a number's default"),
        ({"b": {"type": "boolean", "default": "yes"}}, "field 'b': a boolean's default"),
        ({"e": {"type": "string", "enum": ["x", "y"], "default": "z"}}, "field 'e': default 'z'"),
        ({"c": {"type": "string", "enum": ["x", "x"]}}, "field 'c'"),
        ({"m": {"type": "string", "format": "email", "default": "nobody"}}, "field 'm': default 'nobody'"),
    ],
)
def test_a_shape_outside_the_spec_is_an_error_naming_the_field(props: dict[str, Any], message: str) -> None:
    with pytest.raises(StoppingPointError, match=message):
        read_form(form("Q?", props))


# -- a client that answers through parkgate, over stdio ----------------------------------------------
def form_server() -> Any:
    """The form server as a new subprocess, over stdio (a transport for ``Client``)."""
    return stdio_client(StdioServerParameters(command=sys.executable, args=[str(FORM_SERVER)]))


class Person:
    """The person in a parkgate conversation: answers each question shown with a script."""

    def __init__(self, gateway: Gateway, conversation: str, *lines: str | tuple[str, str]) -> None:
        self.gateway, self.conversation, self.lines = gateway, conversation, list(lines)
        self.asked: list[Reply] = []
        self.replies: list[Reply] = []
        self.shown = anyio.Event()

    def on_asked(self, reply: Reply) -> None:
        self.asked.append(reply)
        self.shown.set()

    async def answer(self) -> None:
        while self.lines:
            await self.shown.wait()
            self.shown = anyio.Event()
            while self.lines:
                line = self.lines.pop(0)
                sender, text = line if isinstance(line, tuple) else (None, line)  # a (sender, text) pair
                handle = partial(self.gateway.handle, self.conversation, text, sender=sender)
                reply = await anyio.to_thread.run_sync(handle)
                self.replies.append(reply)
                if not reply.parked:
                    break


async def elicit(
    callback: ParkgateElicitation,
    message: str,
    schema: dict[str, Any],
    person: Callable[[], Awaitable[None]] | None = None,
    **options: Any,
) -> dict[str, Any]:
    """Call the form server's ``elicit`` tool with ``callback`` answering; its JSON result."""
    async with anyio.create_task_group() as group:
        if person is not None:
            group.start_soon(person)
        async with Client(form_server(), elicitation_callback=callback, mode="legacy") as client:
            result = await client.call_tool("elicit", {"message": message, "schema": schema, **options})
        group.cancel_scope.cancel()
    text = str(getattr(result.content[0], "text", ""))
    assert not result.is_error, text
    found: dict[str, Any] = json.loads(text)
    return found


def schema_of(props: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "properties": props, "required": list(props)}


async def test_a_titled_choice_is_answered_in_the_chat_and_reaches_the_server(gateway: Gateway) -> None:
    person = Person(gateway, "chat-1", "prod", "menu", "4", "2")
    callback = ParkgateElicitation(gateway, "chat-1", on_asked=person.on_asked)
    result = await elicit(callback, "Deploy to which environment?", schema_of({"env": ENV}), person.answer)
    assert result == {"action": "accept", "content": {"env": "stg"}}
    assert [reply.kind for reply in person.replies] == [
        ReplyKind.RETRY,
        ReplyKind.RESHOWN,
        ReplyKind.RETRY,
        ReplyKind.SELECTED,
    ]
    [asked] = person.asked
    assert "1. Production" in asked.text and "2. Staging" in asked.text
    ask = gateway.get(asked.ask_id or "")
    assert ask.answer == "Staging"
    run = gateway.run(ask.run_id)
    assert run is not None and (run.status, run.outcome) == ("complete", "done")  # accepted: the run is finished


async def test_a_form_for_responders_is_answered_only_by_them(gateway: Gateway) -> None:
    person = Person(gateway, "chat-who", ("U_MALLORY", "2"), "2", ("U_BOB", "1"), ("U_ALICE", "2"), ("U_BOB", "2"))
    callback = ParkgateElicitation(
        gateway, "chat-who", on_asked=person.on_asked, responders=["U_ALICE", "U_BOB"], quorum=2
    )
    result = await elicit(callback, "Deploy to which environment?", schema_of({"env": ENV}), person.answer)
    assert result == {"action": "accept", "content": {"env": "stg"}}
    assert [reply.kind for reply in person.replies] == [
        ReplyKind.NOT_YOURS,
        ReplyKind.NOT_YOURS,  # no sender
        ReplyKind.VOTED,
        ReplyKind.VOTED,
        ReplyKind.SELECTED,  # U_BOB changed his vote: two agree
    ]
    ask = gateway.get(person.asked[0].ask_id or "")
    assert (ask.answer, ask.answered_by, [vote.sender for vote in ask.votes]) == (
        "Staging",
        "U_BOB",
        ["U_ALICE", "U_BOB"],
    )


async def test_confirm_is_a_yes_no_choice_answered_true_or_false(gateway: Gateway) -> None:
    person = Person(gateway, "chat-2", "maybe", "yes")
    callback = ParkgateElicitation(gateway, "chat-2", on_asked=person.on_asked)
    schema = schema_of({"confirm": {"type": "boolean", "default": False}})
    assert await elicit(callback, "Deploy to production?", schema, person.answer) == {
        "action": "accept",
        "content": {"confirm": True},
    }
    assert gateway.get(person.asked[0].ask_id or "").default == "No"  # the schema's default is the ask's


async def test_numbers_take_only_numbers_in_range_and_the_retry_says_what_is_wanted(gateway: Gateway) -> None:
    person = Person(gateway, "chat-3", "ten", "11", "7", "2,5", "2.5")
    callback = ParkgateElicitation(gateway, "chat-3", on_asked=person.on_asked)
    schema = schema_of({"replicas": {"type": "integer", "minimum": 1, "maximum": 10}, "ratio": {"type": "number"}})
    result = await elicit(callback, "Scale", schema, person.answer)
    assert result == {"action": "accept", "content": {"replicas": 7, "ratio": 2.5}}
    kinds = [reply.kind for reply in person.replies]
    assert kinds == [ReplyKind.RETRY, ReplyKind.RETRY, ReplyKind.ANSWERED, ReplyKind.RETRY, ReplyKind.ANSWERED]
    assert person.replies[0].text.startswith("Please type a whole number from 1 to 10.\n\nScale")
    assert person.replies[3].text.startswith("Please type a number.\n\nScale")
    first = gateway.get(person.asked[0].ask_id or "")
    assert first.mismatches == 0 and first.answer == "7"
    assert len({reply.run_id for reply in person.asked}) == 1  # one run for the whole form


async def test_formatted_strings_are_checked_and_a_form_is_accepted_once_with_every_field(gateway: Gateway) -> None:
    person = Person(gateway, "chat-4", "ada", "ada@example.com", "next friday", "2026-03-06", "2026-03-06T09:00:00Z")
    callback = ParkgateElicitation(gateway, "chat-4", on_asked=person.on_asked)
    schema = schema_of(
        {
            "contact": {"type": "string", "format": "email", "title": "Contact"},
            "day": {"type": "string", "format": "date", "title": "Day"},
            "at": {"type": "string", "format": "date-time", "title": "Start"},
        }
    )
    result = await elicit(callback, "Book the window", schema, person.answer)
    assert result == {
        "action": "accept",
        "content": {"contact": "ada@example.com", "day": "2026-03-06", "at": "2026-03-06T09:00:00Z"},
    }
    labels = [reply.text.splitlines()[2] for reply in person.asked]
    assert labels == ["Contact (1 of 3)", "Day (2 of 3)", "Start (3 of 3)"]
    assert "an email address" in person.replies[0].text
    assert gateway.open_asks() == []
    run = gateway.run(person.asked[0].run_id or "")
    assert run is not None and (run.status, run.outcome) == ("complete", "done")


async def test_multi_selects_take_numbers_and_labels_and_reach_the_server_as_lists(gateway: Gateway) -> None:
    person = Person(gateway, "chat-ms", "purple", "1, 3 4", "/menu", "1, virginia", "2 1")
    callback = ParkgateElicitation(gateway, "chat-ms", on_asked=person.on_asked)
    titled = [
        {"const": "eu-1", "title": "Frankfurt"},
        {"const": "us-1", "title": "Virginia"},
        {"const": "ap-1", "title": "Tokyo"},
    ]
    schema = schema_of(
        {
            "zones": {"type": "array", "title": "Zones", "items": {"anyOf": titled}, "minItems": 1, "maxItems": 2},
            "tags": {"type": "array", "title": "Tags", "items": {"type": "string", "enum": ["api", "web"]}},
        }
    )
    result = await elicit(callback, "Roll out", schema, person.answer)
    assert result == {"action": "accept", "content": {"zones": ["eu-1", "us-1"], "tags": ["api", "web"]}}
    kinds = [reply.kind for reply in person.replies]
    assert kinds == [ReplyKind.RETRY, ReplyKind.RETRY, ReplyKind.RESHOWN, ReplyKind.ANSWERED, ReplyKind.ANSWERED]
    wanted = "the numbers or names of 1 to 2 of the options, separated by commas"
    assert person.replies[1].text.startswith(f"Please type {wanted}.\n\nRoll out")
    assert "1. Frankfurt\n2. Virginia\n3. Tokyo" in person.asked[0].text
    assert gateway.open_asks() == []
    run = gateway.run(person.asked[0].run_id or "")
    assert run is not None and (run.status, run.outcome) == ("complete", "done")


async def test_a_multi_select_default_is_the_ask_default_and_a_cancel_word_declines(gateway: Gateway) -> None:
    person = Person(gateway, "chat-md", "/cancel")
    callback = ParkgateElicitation(gateway, "chat-md", on_asked=person.on_asked)
    prop = {"type": "array", "items": {"type": "string", "enum": ["api", "web", "db"]}, "default": ["db", "api"]}
    assert await elicit(callback, "Which?", schema_of({"tags": prop}), person.answer) == {
        "action": "decline",
        "content": None,
    }
    assert gateway.get(person.asked[0].ask_id or "").default == "3, 1"
    assert gateway.handle("chat-md", "1").kind is ReplyKind.PASS


async def test_a_cancel_word_in_any_field_declines_the_whole_form(gateway: Gateway) -> None:
    person = Person(gateway, "chat-5", "1", "/cancel")
    callback = ParkgateElicitation(gateway, "chat-5", on_asked=person.on_asked)
    schema = schema_of({"env": ENV, "replicas": {"type": "integer"}})
    assert await elicit(callback, "Deploy", schema, person.answer) == {"action": "decline", "content": None}
    run = gateway.run(person.asked[0].run_id or "")
    assert run is not None and (run.status, run.outcome) == ("complete", "cancelled")
    assert gateway.handle("chat-5", "2").kind is ReplyKind.PASS


async def test_an_ask_nobody_answers_expires_and_reaches_the_server_as_cancel(
    gateway: Gateway, clock: ManualClock
) -> None:
    shown = anyio.Event()
    callback = ParkgateElicitation(gateway, "chat-6", on_asked=lambda reply: shown.set())

    async def nobody() -> None:
        await shown.wait()
        clock.advance(PAST_TTL)  # the wait's own reads close it

    assert await elicit(callback, "Deploy?", schema_of({"env": ENV}), nobody) == {"action": "cancel", "content": None}
    assert gateway.audit() == []


async def test_a_timeout_expires_the_ask_and_answers_cancel(gateway: Gateway) -> None:
    asked: list[Reply] = []
    callback = ParkgateElicitation(gateway, "chat-7", timeout=0.05, on_asked=asked.append)
    assert await elicit(callback, "Deploy?", schema_of({"env": ENV})) == {"action": "cancel", "content": None}
    ask = gateway.get(asked[0].ask_id or "")
    assert (ask.status, ask.outcome) == (AskStatus.EXPIRED, "expired")
    run = gateway.run(ask.run_id)
    assert run is not None and (run.status, run.outcome) == ("complete", "expired")


async def test_forms_parkgate_cannot_ask_get_invalid_params_naming_the_field_and_park_nothing(
    gateway: Gateway,
) -> None:
    callback = ParkgateElicitation(gateway, "chat-8")
    schema = schema_of({"tags": {"type": "array", "items": {"type": "object"}}})
    async with Client(form_server(), elicitation_callback=callback, mode="legacy") as client:
        with pytest.raises(MCPError, match="field 'tags'") as refused:  # the server passes the error on
            await client.call_tool("elicit", {"message": "Tags?", "schema": schema})
    assert refused.value.error.code == INVALID_PARAMS
    assert gateway.open_asks() == []
    context: Any = None
    sign_in = ElicitRequestURLParams(message="Sign in", url="https://example.invalid/login", elicitation_id="e1")
    url = await callback(context, sign_in)
    assert isinstance(url, ErrorData) and url.code == INVALID_PARAMS


def assert_abandoned(gateway: Gateway, asked: list[Reply]) -> None:
    """The ask closed at once as cancelled (abandoned), its run with it; the next message passes."""
    [shown] = asked
    ask = gateway.get(shown.ask_id or "")
    assert (ask.status, ask.outcome) == (AskStatus.CANCELLED, ABANDONED)
    run = gateway.run(ask.run_id)
    assert run is not None and (run.status, run.outcome, run.pending_ask_id) == ("complete", ABANDONED, None)
    reply = gateway.handle(ask.conversation_id, "2")
    assert reply.kind is ReplyKind.PASS and reply.text == ""  # never "Selected 2. Staging" for nobody


async def test_a_server_that_gives_up_on_its_request_closes_the_ask(gateway: Gateway) -> None:
    asked: list[Reply] = []
    callback = ParkgateElicitation(gateway, "chat-9", on_asked=asked.append)
    result = await elicit(callback, "Deploy?", schema_of({"env": ENV}), timeout=0.5)
    assert result == {"action": "timed out"}
    assert_abandoned(gateway, asked)


async def test_a_client_request_that_times_out_closes_the_ask(gateway: Gateway) -> None:
    asked: list[Reply] = []
    callback = ParkgateElicitation(gateway, "chat-10", on_asked=asked.append)
    async with Client(form_server(), elicitation_callback=callback, mode="legacy") as client:
        with pytest.raises(MCPError, match="timed out"):
            await client.call_tool("elicit", {"message": "Deploy?", "schema": schema_of({"env": ENV})}, 0.5)
    assert_abandoned(gateway, asked)


async def test_a_session_closed_mid_question_closes_the_ask(gateway: Gateway) -> None:
    asked: list[Reply] = []
    shown = anyio.Event()

    def on_asked(reply: Reply) -> None:
        asked.append(reply)
        shown.set()

    callback = ParkgateElicitation(gateway, "chat-11", on_asked=on_asked)
    client = Client(form_server(), elicitation_callback=callback, mode="legacy")
    async with client, anyio.create_task_group() as group:
        group.start_soon(client.call_tool, "elicit", {"message": "Deploy?", "schema": schema_of({"env": ENV})})
        await shown.wait()
        group.cancel_scope.cancel()  # the client leaves: its session closes
    assert_abandoned(gateway, asked)


async def test_a_killed_server_closes_the_ask(gateway: Gateway) -> None:
    asked: list[Reply] = []
    shown = anyio.Event()

    def on_asked(reply: Reply) -> None:
        asked.append(reply)
        shown.set()

    callback = ParkgateElicitation(gateway, "chat-12", on_asked=on_asked)
    failures: list[BaseException] = []
    async with Client(form_server(), elicitation_callback=callback, mode="legacy") as client:
        pid = int(str(getattr((await client.call_tool("pid", {})).content[0], "text", "")))

        async def call() -> None:
            try:
                await client.call_tool("elicit", {"message": "Deploy?", "schema": schema_of({"env": ENV})})
            except Exception as error:  # the connection closed under the call
                failures.append(error)

        async with anyio.create_task_group() as group:
            group.start_soon(call)
            await shown.wait()
            os.kill(pid, signal.SIGKILL)
    assert failures, "the call should fail once its server is gone"
    assert_abandoned(gateway, asked)


async def test_a_client_in_the_input_required_flow_answers_the_example_deploy_form(gateway: Gateway) -> None:
    person = Person(gateway, "chat-13", "2", "three", "3", "yes")
    callback = ParkgateElicitation(gateway, "chat-13", on_asked=person.on_asked)
    server = StdioServerParameters(command=sys.executable, args=[str(ROOT / "examples" / "mcp_deploy_server.py")])
    async with anyio.create_task_group() as group:
        group.start_soon(person.answer)
        async with Client(stdio_client(server), elicitation_callback=callback, mode="auto") as client:
            result = await client.call_tool("deploy", {})
    assert str(getattr(result.content[0], "text", "")) == "deployed staging x3"
    assert gateway.open_asks() == []


# -- parkgate's example server, as a subprocess on stdio --------------------------------------------
def location_env(location: StoreLocation) -> dict[str, str]:
    """The server's store, and the test's own ``PYTHONPATH`` (the sources under test)."""
    env = {"PARKGATE_DB": location.url}
    if "PYTHONPATH" in os.environ:
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]
    if location.schema is not None:
        env["PARKGATE_PG_SCHEMA"] = location.schema
    return env


@pytest.fixture
def ask_server(store: Store, store_location: StoreLocation) -> StdioServerParameters:
    """The example server (examples/mcp_ask_server.py) on the test's store."""
    return StdioServerParameters(command=sys.executable, args=[str(ASK_SERVER)], env=location_env(store_location))


@pytest.fixture
def seen(store: Store) -> Iterator[Gateway]:
    """A gateway on the same store, with the real clock, to see what the server did."""
    yield Gateway(store=store)


class ScriptedClient:
    """An MCP client's elicitation callback that answers from a script and records the forms."""

    def __init__(self, *results: ElicitResult) -> None:
        self.results = list(results)
        self.seen: list[ElicitRequestParams] = []

    async def __call__(self, context: ClientRequestContext, params: ElicitRequestParams) -> ElicitResult | ErrorData:
        self.seen.append(params)
        if not self.results:
            await anyio.sleep_forever()
        return self.results.pop(0)


async def ask_person(server: StdioServerParameters, client: ScriptedClient, mode: str, **arguments: Any) -> Any:
    async with Client(stdio_client(server), elicitation_callback=client, mode=mode) as session:
        return await session.call_tool("ask_person", arguments)


@pytest.mark.parametrize("mode", MODES)
async def test_the_example_server_parks_elicits_and_applies_the_selection(
    ask_server: StdioServerParameters, seen: Gateway, mode: str
) -> None:
    client = ScriptedClient(ElicitResult(action="accept", content={"choice": "Class"}))
    result = await ask_person(
        ask_server, client, mode, conversation_id="c1", question="Which UML diagram?", options=OPTIONS
    )
    out = result.structured_content
    assert not result.is_error and out["kind"] == "selected" and out["answer"] == "Class" and out["option_index"] == 2
    assert (out["status"], out["outcome"]) == ("answered", "selected")
    [params] = client.seen
    assert isinstance(params, ElicitRequestFormParams)
    assert params.requested_schema["properties"]["choice"]["enum"] == OPTIONS
    ask = seen.get(out["ask_id"])
    assert ask.status is AskStatus.ANSWERED and ask.conversation_id == "c1"
    run = seen.run(ask.run_id)
    assert run is not None and (run.status, run.outcome) == ("complete", "done")
    assert seen.open_asks() == []


@pytest.mark.parametrize("mode", MODES)
async def test_the_example_server_bounces_an_empty_answer_and_asks_again_in_the_same_call(
    ask_server: StdioServerParameters, seen: Gateway, mode: str
) -> None:
    client = ScriptedClient(
        ElicitResult(action="accept", content={"answer": " "}),
        ElicitResult(action="accept", content={"answer": "Adds SSO"}),
    )
    result = await ask_person(ask_server, client, mode, conversation_id="c1", question="Describe the change")
    assert result.structured_content["kind"] == "answered" and result.structured_content["answer"] == "Adds SSO"
    first, second = client.seen
    assert first.message == "Describe the change" and second.message.startswith("Please type an answer")


async def test_the_example_server_maps_decline_and_cancel(ask_server: StdioServerParameters, seen: Gateway) -> None:
    decline, cancel = ScriptedClient(ElicitResult(action="decline")), ScriptedClient(ElicitResult(action="cancel"))
    declined = await ask_person(ask_server, decline, "legacy", conversation_id="c-1", question="Why?")
    assert declined.structured_content["kind"] == "cancelled"
    assert (declined.structured_content["status"], declined.structured_content["outcome"]) == ("cancelled", "cancelled")
    assert declined.structured_content["text"] == P.TEXT_CANCELLED  # "Why?" is a text question
    dismissed = await ask_person(ask_server, cancel, "legacy", conversation_id="c-2", question="Why?")
    out = dismissed.structured_content
    # The model reads "expired", and why: never a bare pass.
    assert (out["kind"], out["status"], out["outcome"], out["text"]) == ("pass", "expired", DISMISSED, P.MCP_DISMISSED)
    ask = seen.get(out["ask_id"])
    assert (ask.status, ask.outcome) == (AskStatus.EXPIRED, DISMISSED)
    assert seen.open_asks() == []


class LapsingClient(ScriptedClient):
    """A client whose dialog stays open past the ask's TTL, then answers: the TTL ran out first."""

    def __init__(self, seen: Gateway, result: ElicitResult) -> None:
        super().__init__(result)
        self.gateway = seen

    async def __call__(self, context: ClientRequestContext, params: ElicitRequestParams) -> ElicitResult | ErrorData:
        for ask in self.gateway.open_asks():
            self.gateway.expire(ask.id)  # what the TTL does to an ask nobody answered in time
        return await super().__call__(context, params)


@pytest.mark.parametrize("mode", MODES)
async def test_the_example_server_says_expired_when_the_dialog_lapsed(
    ask_server: StdioServerParameters, seen: Gateway, mode: str
) -> None:
    """An answer that comes back after the TTL closed the ask finds it expired (in the
    input-required flow too: the retry names the ask its first round parked)."""
    client = LapsingClient(seen, ElicitResult(action="accept", content={"choice": "Class"}))
    result = await ask_person(ask_server, client, mode, conversation_id="c1", question="Which?", options=OPTIONS)
    out = result.structured_content
    assert (out["kind"], out["status"], out["outcome"], out["text"]) == ("pass", "expired", "expired", P.MCP_EXPIRED)
    assert out["answer"] is None and seen.open_asks() == []
    assert len(client.seen) == 1  # asked once; no second question was parked for the late answer


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("content", [{"choice": "Activity"}, {"choice": 2}, {"answer": "Class"}])
async def test_the_example_server_refuses_content_it_did_not_ask_for_and_closes_the_ask(
    ask_server: StdioServerParameters, seen: Gateway, store_location: StoreLocation, mode: str, content: dict[str, Any]
) -> None:
    client = ScriptedClient(ElicitResult(action="accept", content=content))
    result = await ask_person(ask_server, client, mode, conversation_id="c1", question="Which?", options=OPTIONS)
    assert result.is_error
    assert "the question was closed" in str(getattr(result.content[0], "text", ""))
    assert seen.open_asks() == []
    [ask] = _asks_in(store_location, seen, "c1")
    assert (ask.status, ask.outcome) == (AskStatus.CANCELLED, INVALID_ANSWER)


async def test_the_example_server_closes_its_ask_when_the_client_leaves(
    ask_server: StdioServerParameters, seen: Gateway, store_location: StoreLocation
) -> None:
    client = ScriptedClient()  # never answers
    async with anyio.create_task_group() as group:
        group.start_soon(
            partial(ask_person, ask_server, client, "legacy", conversation_id="c1", question="Which?", options=OPTIONS)
        )
        with anyio.fail_after(60):  # bounded: a server process starting on a busy machine
            while not client.seen:
                await anyio.sleep(0.02)
        group.cancel_scope.cancel()  # it was asked; now the client leaves
    with anyio.fail_after(30):  # the server sees its client gone and closes the ask
        while _asks_in(store_location, seen, "c1")[0].is_open:
            await anyio.sleep(0.05)
    [ask] = _asks_in(store_location, seen, "c1")
    assert (ask.status, ask.outcome) == (AskStatus.CANCELLED, ABANDONED)


def _asks_in(location: StoreLocation, gateway: Gateway, conversation: str) -> list[Any]:
    rows = location.raw_query("SELECT id FROM asks WHERE conversation_id = ?", (conversation,))
    return [gateway.get(row[0]) for row in rows]


# -- docs/adapters/mcp.md's example client, run as a person would ------------------------------------
def test_the_chat_client_example_runs_a_whole_form(store: Store, store_location: StoreLocation) -> None:
    env = {**os.environ, **location_env(store_location)}
    done = subprocess.run(
        [sys.executable, str(CHAT_CLIENT)],
        input="prod\n2\nlots\n3\nyes\n",
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "That did not match any option" in done.stdout and "Please type a whole number from 1 to 10" in done.stdout
    assert done.stdout.rstrip().endswith("server: deployed staging x3")
    assert Gateway(store=store).open_asks() == []
