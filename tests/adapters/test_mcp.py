"""MCP elicitation mapped onto parkgate, both directions, with the real MCP types.

accept <-> selected/answered, decline <-> cancelled, cancel <-> expired, exactly, both
ways (a ``cancel`` expires the ask now, as its TTL would). The in-process
MCP client/server pairs run the SDK's real protocol (both the 2025-11-25 back-channel
and the 2026-07-28 input-required flow).
"""

from __future__ import annotations

import json
import logging
import sqlite3
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.client.session import ClientRequestContext
from mcp.server.elicitation import render_elicitation_schema
from mcp.server.mcpserver import AcceptedElicitation, CancelledElicitation, Context, DeclinedElicitation, MCPServer
from mcp_types import ElicitRequestFormParams, ElicitRequestParams, ElicitRequestURLParams, ElicitResult, ErrorData
from mcp_types._v2025_11_25 import PrimitiveSchemaDefinition
from pydantic import TypeAdapter

from parkgate import AskStatus, AsyncGateway, Gateway, InputError, ManualClock, Reply, ReplyKind, StoppingPointError
from parkgate.adapters.mcp import (
    ANSWER_FIELD,
    CHOICE_FIELD,
    ParkgateElicitation,
    apply_elicit_result,
    build_example_server,
    elicit_params,
    form_model,
    requested_schema,
    spec_from_elicitation,
    to_elicit_result,
)
from parkgate.core import phrases as P
from parkgate.core.phrases import AskKind

OPTIONS = ["Sequence", "Class", "State machine"]
TTL = timedelta(hours=6)
PAST_TTL = TTL + timedelta(seconds=1)
MODES = ["legacy", "auto"]  # 2025-11-25 back-channel, and the 2026-07-28 input-required flow


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


def make_gateway(path: Path, clock: ManualClock) -> Gateway:
    return Gateway(f"sqlite:///{path}", clock=clock, ttl=TTL)


@pytest.fixture
def gateway(tmp_path: Path, clock: ManualClock) -> Iterator[Gateway]:
    gw = make_gateway(tmp_path / "server.db", clock)
    yield gw
    gw.close()


def park_choice(gw: Gateway, conversation: str = "c1", options: list[str] | None = None) -> str:
    reply = gw.ask(conversation, "Which UML diagram?", options or OPTIONS, run_id=f"run-{conversation}")
    assert reply.ask_id is not None
    return reply.ask_id


def park_text(gw: Gateway, conversation: str = "c1") -> str:
    reply = gw.ask(conversation, "Describe the change", run_id=f"run-{conversation}")
    assert reply.ask_id is not None
    return reply.ask_id


# -- parkgate -> MCP: what a reply or a closed ask stands for ----------------------------------
def test_a_selection_is_accept_with_the_chosen_label(gateway: Gateway) -> None:
    park_choice(gateway)
    reply = gateway.handle("c1", "2")
    result = to_elicit_result(reply)
    assert isinstance(result, ElicitResult)
    assert result.action == "accept" and result.content == {CHOICE_FIELD: "Class"}
    assert to_elicit_result(gateway.get(reply.ask_id or "")) == result


def test_a_text_answer_is_accept_with_the_text_as_given(gateway: Gateway) -> None:
    park_text(gateway)
    reply = gateway.handle("c1", "  Add a retry to the login flow ")
    result = to_elicit_result(reply)
    assert result == ElicitResult(action="accept", content={ANSWER_FIELD: "  Add a retry to the login flow "})
    assert to_elicit_result(gateway.get(reply.ask_id or "")) == result


@pytest.mark.parametrize("word", ["cancel", "/quit", "Nevermind", "exit"])
def test_a_cancel_word_is_decline(gateway: Gateway, word: str) -> None:
    ask_id = park_choice(gateway)
    reply = gateway.handle("c1", word)
    assert to_elicit_result(reply) == ElicitResult(action="decline")
    assert to_elicit_result(gateway.get(ask_id)) == ElicitResult(action="decline")


def test_an_operator_cancel_is_decline(gateway: Gateway) -> None:
    ask_id = park_choice(gateway)
    assert to_elicit_result(gateway.cancel(ask_id)) == ElicitResult(action="decline")


def test_an_expiry_is_cancel(gateway: Gateway, clock: ManualClock) -> None:
    ask_id = park_choice(gateway)
    clock.advance(PAST_TTL)
    reply = gateway.handle("c1", "2")
    assert reply.kind is ReplyKind.PASS and reply.expired_ask_id == ask_id
    assert to_elicit_result(reply) == ElicitResult(action="cancel")
    assert to_elicit_result(gateway.get(ask_id)) == ElicitResult(action="cancel")


def test_an_expiry_with_a_default_is_still_cancel(gateway: Gateway, clock: ManualClock) -> None:
    reply = gateway.ask("c1", "Deploy?", ["Yes", "No"], default="No")
    clock.advance(PAST_TTL)
    ask = gateway.get(reply.ask_id or "")
    assert ask.status is AskStatus.EXPIRED and ask.answer == "No"
    assert to_elicit_result(ask) == ElicitResult(action="cancel")


def test_non_answers_have_no_result_yet_and_keep_the_ask_open(gateway: Gateway) -> None:
    ask_id = park_choice(gateway)
    asked = gateway.get(ask_id)
    assert to_elicit_result(asked) is None
    kinds = []
    for text in ["9", "menu", "Clas", "0"]:
        reply = gateway.handle("c1", text)
        kinds.append(reply.kind)
        assert to_elicit_result(reply) is None
    assert kinds == [ReplyKind.RETRY, ReplyKind.RESHOWN, ReplyKind.RETRY, ReplyKind.ESCALATED]
    assert gateway.get(ask_id).is_open


def test_a_plain_pass_is_not_the_outcome_of_any_ask(gateway: Gateway) -> None:
    with pytest.raises(InputError, match="not the outcome"):
        to_elicit_result(gateway.handle("never-seen", "hello"))


def test_the_form_describes_the_ask_in_spec_valid_schema(gateway: Gateway) -> None:
    primitive: TypeAdapter[Any] = TypeAdapter(PrimitiveSchemaDefinition)
    choice = gateway.get(park_choice(gateway, "c1"))
    text = gateway.get(park_text(gateway, "c2"))
    assert requested_schema(choice) == {
        "type": "object",
        "properties": {CHOICE_FIELD: {"type": "string", "enum": OPTIONS}},
        "required": [CHOICE_FIELD],
    }
    assert requested_schema(text)["properties"] == {ANSWER_FIELD: {"type": "string", "minLength": 1}}
    for ask in (choice, text):
        for prop in requested_schema(ask)["properties"].values():
            primitive.validate_python(prop)
        rendered = render_elicitation_schema(form_model(ask))  # the SDK's own spec check
        assert rendered["properties"].keys() == requested_schema(ask)["properties"].keys()
        params = elicit_params(ask)
        assert isinstance(params, ElicitRequestFormParams) and params.message == ask.prompt


# -- MCP -> parkgate: applying a client's result ---------------------------------------------
def test_accept_selects_the_label_and_closes_the_ask(gateway: Gateway) -> None:
    ask_id = park_choice(gateway)
    reply = apply_elicit_result(gateway, ask_id, ElicitResult(action="accept", content={"choice": "State machine"}))
    assert reply.kind is ReplyKind.SELECTED and reply.answer == "State machine" and reply.option_index == 3
    ask = gateway.get(ask_id)
    assert ask.status is AskStatus.ANSWERED and ask.answer == "State machine"
    assert gateway.open_asks() == []


def test_accept_selects_by_label_even_when_labels_look_like_numbers(gateway: Gateway) -> None:
    ask_id = park_choice(gateway, options=["10", "1", "2"])
    reply = apply_elicit_result(gateway, ask_id, ElicitResult(action="accept", content={"choice": "1"}))
    assert reply.answer == "1" and reply.option_index == 2


def test_accept_takes_the_sdks_accepted_elicitation(gateway: Gateway) -> None:
    ask_id = park_choice(gateway)
    model = form_model(gateway.get(ask_id))
    reply = apply_elicit_result(gateway, ask_id, AcceptedElicitation(data=model(choice="class")))
    assert reply.kind is ReplyKind.SELECTED and reply.answer == "Class"  # matched after normalising


def test_accept_with_a_value_that_is_no_option_is_refused_and_changes_nothing(gateway: Gateway) -> None:
    ask_id = park_choice(gateway)
    before = gateway.get(ask_id)
    for content in ({"choice": "Activity"}, {"answer": "Class"}, {"choice": 2}, None):
        with pytest.raises(InputError):
            apply_elicit_result(gateway, ask_id, ElicitResult(action="accept", content=content))
    assert gateway.get(ask_id) == before


def test_accept_on_a_text_ask_follows_the_text_rules(gateway: Gateway) -> None:
    ask_id = park_text(gateway)
    empty = apply_elicit_result(gateway, ask_id, ElicitResult(action="accept", content={"answer": "   "}))
    assert empty.kind is ReplyKind.RETRY and empty.parked
    bare = apply_elicit_result(gateway, ask_id, ElicitResult(action="accept", content={"answer": "cancel"}))
    assert bare.kind is ReplyKind.ANSWERED and bare.answer == "cancel"  # a bare word is data
    slash_id = park_text(gateway, "c2")
    slash = apply_elicit_result(gateway, slash_id, ElicitResult(action="accept", content={"answer": "/cancel"}))
    assert slash.kind is ReplyKind.CANCELLED  # the slash door works on every surface


def test_decline_cancels_the_ask_and_completes_its_run(gateway: Gateway) -> None:
    ask_id = park_choice(gateway)
    reply = apply_elicit_result(gateway, ask_id, ElicitResult(action="decline"))
    assert reply.kind is ReplyKind.CANCELLED and reply.text == P.PHRASES[ReplyKind.CANCELLED]
    assert not reply.parked
    assert gateway.get(ask_id).status is AskStatus.CANCELLED
    run = gateway.run("run-c1")
    assert run is not None and run.status == "complete" and run.outcome == "cancelled"
    assert gateway.handle("c1", "2").kind is ReplyKind.PASS  # unparked


def closed_count(gw: Gateway, outcome: str) -> float:
    labels = {"outcome": outcome, "surface": gw.metrics.surface}
    return gw.metrics.registry.get_sample_value("parkgate_asks_closed_total", labels) or 0.0


def expiry_lines(caplog: pytest.LogCaptureFixture) -> list[dict[str, Any]]:
    lines = [json.loads(r.getMessage()) for r in caplog.records if r.name == "parkgate"]
    return [line for line in lines if line.get("event") == "ask_expired"]


@pytest.mark.parametrize("result", [ElicitResult(action="cancel"), CancelledElicitation()])
def test_cancel_expires_the_ask_now_as_its_ttl_would(
    gateway: Gateway, caplog: pytest.LogCaptureFixture, result: ElicitResult | CancelledElicitation
) -> None:
    ask_id = park_choice(gateway)
    with caplog.at_level(logging.INFO, logger="parkgate"):
        reply = apply_elicit_result(gateway, ask_id, result)
    # The reply an expiry on read gives: pass, naming the expired ask.
    assert reply.kind is ReplyKind.PASS and not reply.parked
    assert reply.expired_ask_id == ask_id and reply.ask_id is None
    ask = gateway.get(ask_id)
    assert (ask.status, ask.outcome, ask.answer) == (AskStatus.EXPIRED, "expired", None)
    run = gateway.run("run-c1")
    assert run is not None and (run.status, run.outcome, run.pending_ask_id) == ("complete", "expired", None)
    assert gateway.open_asks() == [] and gateway.audit() == []
    assert closed_count(gateway, "expired") == 1 and closed_count(gateway, "cancelled") == 0
    [line] = expiry_lines(caplog)
    assert line["ask_id"] == ask_id and line["run_id"] == "run-c1"
    # Read back, the ask says what closed it: the mapping is exact both ways.
    assert to_elicit_result(ask) == ElicitResult(action="cancel")
    assert to_elicit_result(reply) == ElicitResult(action="cancel")
    assert gateway.handle("c1", "2").kind is ReplyKind.PASS  # unparked; "2" goes onward


def test_cancel_records_the_asks_default_as_an_expiry_does(gateway: Gateway) -> None:
    asked = gateway.ask("c1", "Deploy?", ["Yes", "No"], run_id="run-c1", default="No")
    ask_id = asked.ask_id or ""
    reply = apply_elicit_result(gateway, ask_id, ElicitResult(action="cancel"))
    assert reply.kind is ReplyKind.PASS and reply.expired_ask_id == ask_id
    ask = gateway.get(ask_id)
    assert (ask.status, ask.answer, ask.option_index) == (AskStatus.EXPIRED, "No", 2)
    run = gateway.run("run-c1")  # the default stands in: the run goes on, nothing pending
    assert run is not None and (run.status, run.pending_ask_id) == ("running", None)
    assert to_elicit_result(ask) == ElicitResult(action="cancel")  # a default is not an accept


def test_decline_and_cancel_map_onto_different_closings(gateway: Gateway) -> None:
    declined = park_choice(gateway, "c1")
    dismissed = park_choice(gateway, "c2")
    assert apply_elicit_result(gateway, declined, DeclinedElicitation()).kind is ReplyKind.CANCELLED
    assert apply_elicit_result(gateway, dismissed, CancelledElicitation()).kind is ReplyKind.PASS
    assert to_elicit_result(gateway.get(declined)) == ElicitResult(action="decline")
    assert to_elicit_result(gateway.get(dismissed)) == ElicitResult(action="cancel")


def test_a_second_decline_for_a_dropped_ask_changes_nothing(gateway: Gateway) -> None:
    ask_id = park_choice(gateway)
    first = apply_elicit_result(gateway, ask_id, ElicitResult(action="decline"))
    closed = gateway.get(ask_id)
    again = apply_elicit_result(gateway, ask_id, ElicitResult(action="decline"))
    assert again == first and again.kind is ReplyKind.CANCELLED
    assert gateway.get(ask_id) == closed
    for result in (ElicitResult(action="cancel"), ElicitResult(action="accept", content={"choice": "Class"})):
        with pytest.raises(InputError, match="already cancelled"):
            apply_elicit_result(gateway, ask_id, result)
    assert gateway.get(ask_id) == closed


def test_a_second_cancel_for_an_expired_ask_changes_nothing(gateway: Gateway, caplog: pytest.LogCaptureFixture) -> None:
    ask_id = park_choice(gateway)
    with caplog.at_level(logging.INFO, logger="parkgate"):
        first = apply_elicit_result(gateway, ask_id, ElicitResult(action="cancel"))
        closed = gateway.get(ask_id)
        again = apply_elicit_result(gateway, ask_id, ElicitResult(action="cancel"))
    assert again == first and again.kind is ReplyKind.PASS and again.expired_ask_id == ask_id
    assert gateway.get(ask_id) == closed
    assert closed_count(gateway, "expired") == 1 and len(expiry_lines(caplog)) == 1


def test_gateway_expire_leaves_a_closed_ask_as_it_is(gateway: Gateway) -> None:
    ask_id = park_choice(gateway)
    answered = apply_elicit_result(gateway, ask_id, ElicitResult(action="accept", content={"choice": "Class"}))
    assert answered.kind is ReplyKind.SELECTED
    before = gateway.get(ask_id)
    assert gateway.expire(ask_id) == before
    assert closed_count(gateway, "expired") == 0


async def test_async_gateway_expire(gateway: Gateway) -> None:
    ask_id = park_choice(gateway)
    ask = await AsyncGateway(gateway).expire(ask_id)
    assert ask.status is AskStatus.EXPIRED and to_elicit_result(ask) == ElicitResult(action="cancel")


def test_a_result_for_an_ask_past_its_ttl_expires_it_and_passes(gateway: Gateway, clock: ManualClock) -> None:
    ask_id = park_choice(gateway)
    clock.advance(PAST_TTL)
    reply = apply_elicit_result(gateway, ask_id, ElicitResult(action="accept", content={"choice": "Class"}))
    assert reply.kind is ReplyKind.PASS and reply.expired_ask_id == ask_id
    assert gateway.get(ask_id).status is AskStatus.EXPIRED
    assert to_elicit_result(reply) == ElicitResult(action="cancel")


def test_a_result_for_a_closed_ask_is_refused_unless_it_is_a_redelivery(gateway: Gateway) -> None:
    ask_id = park_choice(gateway)
    accept = ElicitResult(action="accept", content={"choice": "Class"})
    first = apply_elicit_result(gateway, ask_id, accept, message_id="m-1")
    assert first.kind is ReplyKind.SELECTED
    assert apply_elicit_result(gateway, ask_id, accept, message_id="m-1") == first
    with pytest.raises(InputError, match="already answered"):
        apply_elicit_result(gateway, ask_id, ElicitResult(action="decline"), message_id="m-2")
    assert gateway.get(ask_id).answer == "Class"


def test_round_trip_reply_to_result_to_a_second_gateway(tmp_path: Path, clock: ManualClock) -> None:
    """A person's reply on one gateway, carried as an ElicitResult, lands the same on another."""
    person = make_gateway(tmp_path / "person.db", clock)
    server = make_gateway(tmp_path / "server2.db", clock)
    try:
        for text, expected in [("3", ReplyKind.SELECTED), ("stop", ReplyKind.CANCELLED)]:
            here = park_choice(person, f"p-{text}")
            there = park_choice(server, f"s-{text}")
            result = to_elicit_result(person.handle(f"p-{text}", text))
            assert result is not None
            applied = apply_elicit_result(server, there, result)
            assert applied.kind is expected
            assert server.get(there).answer == person.get(here).answer
            assert server.get(there).status is person.get(here).status
    finally:
        person.close()
        server.close()


# -- reading an MCP form as a parkgate ask -------------------------------------------------------
def form(message: str, props: dict[str, Any]) -> ElicitRequestFormParams:
    return ElicitRequestFormParams(message=message, requested_schema={"type": "object", "properties": props})


def test_forms_read_as_asks() -> None:
    plain = spec_from_elicitation(form("Pick", {"color": {"type": "string", "enum": ["red", "blue"]}}))
    assert (plain.kind, plain.spec.options, plain.field, plain.values) == (
        AskKind.CHOICE,
        ("red", "blue"),
        "color",
        ("red", "blue"),
    )
    titled = spec_from_elicitation(
        form(
            "Env?",
            {
                "env": {
                    "type": "string",
                    "oneOf": [{"const": "p", "title": "Production"}, {"const": "s", "title": "Staging"}],
                }
            },
        )
    )
    assert titled.spec.options == ("Production", "Staging") and titled.values == ("p", "s")
    legacy = spec_from_elicitation(
        form("Env?", {"env": {"type": "string", "enum": ["p", "s"], "enumNames": ["Prod", "Stage"]}})
    )
    assert legacy.spec.options == ("Prod", "Stage") and legacy.values == ("p", "s")
    text = spec_from_elicitation(form("Why?", {"reason": {"type": "string"}}))
    assert text.kind is AskKind.TEXT and text.spec.prompt == "Why?" and text.field == "reason"


@pytest.mark.parametrize(
    "props",
    [
        {},
        {"a": {"type": "string"}, "b": {"type": "string"}},
        {"n": {"type": "number"}},
        {"ok": {"type": "boolean"}},
        {"c": {"type": "string", "enum": ["x", "x"]}},
    ],
)
def test_forms_parkgate_cannot_ask_are_errors(props: dict[str, Any]) -> None:
    with pytest.raises(StoppingPointError):
        spec_from_elicitation(form("Q?", props))


def test_the_result_uses_the_forms_field_and_wire_values(gateway: Gateway) -> None:
    titled = spec_from_elicitation(
        form(
            "Env?",
            {
                "env": {
                    "type": "string",
                    "oneOf": [{"const": "p", "title": "Production"}, {"const": "s", "title": "Staging"}],
                }
            },
        )
    )
    gateway.ask("c1", titled.spec.prompt, list(titled.spec.options))
    assert to_elicit_result(gateway.handle("c1", "staging"), titled) == ElicitResult(
        action="accept", content={"env": "s"}
    )


# -- the example server, over the SDK's real protocol ---------------------------------------------
class ScriptedClient:
    """An MCP client's elicitation callback that answers from a script and records the forms."""

    def __init__(self, *results: ElicitResult) -> None:
        self.results = list(results)
        self.seen: list[ElicitRequestParams] = []

    async def __call__(self, context: ClientRequestContext, params: ElicitRequestParams) -> ElicitResult | ErrorData:
        self.seen.append(params)
        return self.results.pop(0)


async def call_ask_person(server: MCPServer, callback: Any, mode: str, **arguments: Any) -> dict[str, Any]:
    async with Client(server, elicitation_callback=callback, mode=mode) as client:
        result = await client.call_tool("ask_person", arguments)
    assert not result.is_error, result.content
    assert isinstance(result.structured_content, dict)
    return result.structured_content


@pytest.mark.parametrize("mode", MODES)
async def test_the_example_server_parks_elicits_and_applies_the_selection(
    gateway: Gateway, tmp_path: Path, mode: str
) -> None:
    server = build_example_server(gateway)
    client = ScriptedClient(ElicitResult(action="accept", content={"choice": "Class"}))
    out = await call_ask_person(
        server, client, mode, conversation_id="c1", question="Which UML diagram?", options=OPTIONS
    )

    assert out["kind"] == "selected" and out["answer"] == "Class" and out["option_index"] == 2
    [params] = client.seen
    assert isinstance(params, ElicitRequestFormParams) and params.message == "Which UML diagram?"
    assert params.requested_schema["properties"]["choice"]["enum"] == OPTIONS
    ask = gateway.get(out["ask_id"])
    assert ask.status is AskStatus.ANSWERED and ask.conversation_id == "c1"
    assert gateway.open_asks() == []
    # Parked exactly once, although the 2026-07-28 flow runs the resolvers every round.
    with sqlite3.connect(tmp_path / "server.db") as db:
        [(count,)] = db.execute("SELECT count(*) FROM asks WHERE conversation_id = 'c1'").fetchall()
    assert count == 1


@pytest.mark.parametrize("mode", MODES)
async def test_the_example_server_maps_decline_and_cancel_onto_closed_asks(gateway: Gateway, mode: str) -> None:
    server = build_example_server(gateway)
    declined = await call_ask_person(
        server, ScriptedClient(ElicitResult(action="decline")), mode, conversation_id="c-decline", question="Why?"
    )
    assert declined["kind"] == "cancelled" and declined["text"] == P.PHRASES[ReplyKind.CANCELLED]
    assert gateway.get(declined["ask_id"]).status is AskStatus.CANCELLED
    dismissed = await call_ask_person(
        server, ScriptedClient(ElicitResult(action="cancel")), mode, conversation_id="c-cancel", question="Why?"
    )
    assert dismissed["kind"] == "pass" and dismissed["text"] == P.PHRASES[ReplyKind.PASS]
    assert gateway.get(dismissed["ask_id"]).status is AskStatus.EXPIRED
    assert gateway.open_asks() == []


@pytest.mark.parametrize("mode", MODES)
async def test_the_example_server_bounces_an_empty_answer_and_asks_the_same_ask_again(
    gateway: Gateway, mode: str
) -> None:
    server = build_example_server(gateway)
    first = await call_ask_person(
        server,
        ScriptedClient(ElicitResult(action="accept", content={"answer": ""})),
        mode,
        conversation_id="c1",
        question="Describe the change",
    )
    assert first["kind"] == "retry"
    second = await call_ask_person(
        server,
        ScriptedClient(ElicitResult(action="accept", content={"answer": "Adds SSO"})),
        mode,
        conversation_id="c1",
        question="Describe the change",
    )
    assert second["kind"] == "answered" and second["answer"] == "Adds SSO"
    assert second["ask_id"] == first["ask_id"]  # the same parked ask, not a second one
    assert gateway.get(first["ask_id"]).mismatches == 0


# -- a client that answers through parkgate --------------------------------------------------------
def elicit_server() -> MCPServer:
    """A plain MCP server (not parkgate) whose tool elicits a titled single-choice form."""
    server = MCPServer("deployer")

    @server.tool()
    async def deploy(ctx: Context) -> str:
        result = await ctx.session.elicit_form(
            message="Deploy to which environment?",
            requested_schema={
                "type": "object",
                "properties": {
                    "env": {
                        "type": "string",
                        "oneOf": [{"const": "prod", "title": "Production"}, {"const": "stg", "title": "Staging"}],
                    }
                },
                "required": ["env"],
            },
            related_request_id=ctx.request_id,
        )
        return f"{result.action}:{(result.content or {}).get('env')}"

    return server


async def run_deploy(callback: ParkgateElicitation, person: Any) -> str:
    async with anyio.create_task_group() as group:
        group.start_soon(person)
        async with Client(elicit_server(), elicitation_callback=callback, mode="legacy") as client:
            result = await client.call_tool("deploy", {})
    text = result.content[0]
    return str(getattr(text, "text", ""))


async def test_a_client_parks_the_servers_form_and_the_persons_chat_answers_it(gateway: Gateway) -> None:
    shown: list[Reply] = []
    ready = anyio.Event()

    def on_asked(reply: Reply) -> None:
        shown.append(reply)
        ready.set()

    callback = ParkgateElicitation(gateway, "chat-7", poll_seconds=0.01, on_asked=on_asked)
    kinds: list[ReplyKind] = []

    async def person() -> None:
        await ready.wait()
        for text in ["prod", "menu", "4", "2"]:
            kinds.append((await anyio.to_thread.run_sync(gateway.handle, "chat-7", text)).kind)

    assert await run_deploy(callback, person) == "accept:stg"
    assert kinds == [ReplyKind.RETRY, ReplyKind.RESHOWN, ReplyKind.RETRY, ReplyKind.SELECTED]
    [asked] = shown
    assert asked.kind is ReplyKind.ASKED and "1. Production" in asked.text and "2. Staging" in asked.text
    assert gateway.get(asked.ask_id or "").answer == "Staging"


async def test_a_persons_cancel_word_reaches_the_server_as_decline(gateway: Gateway) -> None:
    ready = anyio.Event()
    callback = ParkgateElicitation(gateway, "chat-8", poll_seconds=0.01, on_asked=lambda reply: ready.set())

    async def person() -> None:
        await ready.wait()
        await anyio.to_thread.run_sync(gateway.handle, "chat-8", "nevermind")

    assert await run_deploy(callback, person) == "decline:None"


async def test_an_ask_nobody_answers_expires_and_reaches_the_server_as_cancel(
    gateway: Gateway, clock: ManualClock
) -> None:
    shown: list[Reply] = []
    ready = anyio.Event()

    def on_asked(reply: Reply) -> None:
        shown.append(reply)
        ready.set()

    callback = ParkgateElicitation(gateway, "chat-9", poll_seconds=0.01, on_asked=on_asked)

    async def nobody() -> None:
        await ready.wait()
        clock.advance(PAST_TTL)  # the reader (the callback's own poll) closes it

    assert await run_deploy(callback, nobody) == "cancel:None"
    [asked] = shown
    assert gateway.get(asked.ask_id or "").status is AskStatus.EXPIRED
    assert gateway.audit() == []


async def test_a_timeout_expires_the_ask_and_answers_cancel(gateway: Gateway, caplog: pytest.LogCaptureFixture) -> None:
    shown: list[Reply] = []
    callback = ParkgateElicitation(gateway, "chat-10", poll_seconds=0.01, timeout=0.05, on_asked=shown.append)

    async def nobody() -> None:
        return None

    with caplog.at_level(logging.INFO, logger="parkgate"):
        assert await run_deploy(callback, nobody) == "cancel:None"
    [asked] = shown
    ask = gateway.get(asked.ask_id or "")
    assert (ask.status, ask.outcome) == (AskStatus.EXPIRED, "expired")
    run = gateway.run(ask.run_id)
    assert run is not None and (run.status, run.outcome) == ("complete", "expired")
    assert gateway.open_asks() == []
    assert closed_count(gateway, "expired") == 1
    assert [line["ask_id"] for line in expiry_lines(caplog)] == [ask.id]


async def test_forms_parkgate_cannot_ask_get_an_error_and_park_nothing(gateway: Gateway) -> None:
    callback = ParkgateElicitation(gateway, "chat-11")
    context: Any = None
    url = ElicitRequestURLParams(message="Sign in", url="https://example.invalid/login", elicitation_id="e1")
    assert isinstance(await callback(context, url), ErrorData)
    two = form("Two?", {"a": {"type": "string"}, "b": {"type": "string"}})
    error = await callback(context, two)
    assert isinstance(error, ErrorData) and "one question" in error.message
    assert gateway.open_asks() == []
