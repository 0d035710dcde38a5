"""The client's own user as the approver (MCP elicitation): with the MCP SDK's client and
an elicitation callback, a rule's ``ask_client`` puts a held call's ask to the client's
user on a form (Approve / Reject, a reason), on both of MCP's protocol eras (a request
while the call is held; a 2026-07-28 ``input_required`` round); the answer goes through
parkgate's door as a message from that user, so the ask's record, its responders and the
other surfaces hold: whichever answers first wins. A client without the callback, or a
rule without ``ask_client``, leaves the answer to the people on parkgate's surfaces.
"""

from __future__ import annotations

import re
from typing import Any

import anyio
import pytest
from harness import Setup, connected, parked, say, text_of, wait_for
from live_server import Server
from mcp_types import ElicitRequestFormParams, ElicitResult
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from test_held_calls import DEPLOY, ENGINES, Calls, ask_id_of, rule

from parkgate.mcp_gateway.holding import META_KEY

#: The connections the form travels on: the transport, and the client's protocol mode
#: ("auto": 2026-07-28, the form as an input_required round; "legacy": the handshake era,
#: the form as an elicitation/create request).
CONNECTIONS = [("stdio", "auto"), ("stdio", "legacy"), ("http", "auto"), ("http", "legacy")]
DEPLOYED = "deployed 1.2.3 to prod"


class Form:
    """The client's user at the approval form: answers ``action`` (with ``decision`` and
    ``reason``), once ``release()`` is called where ``wait`` is set."""

    def __init__(self, action: str = "accept", decision: str = "Approve", reason: str | None = None) -> None:
        self.action, self.decision, self.reason = action, decision, reason
        self.shown: list[ElicitRequestFormParams] = []
        self.gate: anyio.Event | None = None
        self.withdrawn = False

    def waiting(self) -> Form:
        self.gate = anyio.Event()
        return self

    def release(self) -> None:
        assert self.gate is not None
        self.gate.set()

    async def __call__(self, context: Any, params: Any) -> ElicitResult:
        assert isinstance(params, ElicitRequestFormParams)
        self.shown.append(params)
        if self.gate is not None:
            try:
                await self.gate.wait()
            except anyio.get_cancelled_exc_class():
                self.withdrawn = True
                raise
        content = {"decision": self.decision, **({"reason": self.reason} if self.reason else {})}
        return ElicitResult(action=self.action, content=content if self.action == "accept" else None)  # type: ignore[arg-type]


@pytest.mark.parametrize(("transport", "mode"), CONNECTIONS)
async def test_the_client_s_user_approves_on_the_form_and_the_call_runs_once(
    setup: Setup, http_server: Server, transport: str, mode: str
) -> None:
    setup.configure(rule(responders='["alice", "bob"]', ask_client='"alice"'))
    form = Form()
    with http_server.client() as http:
        async with connected(setup, transport, elicitation_callback=form, mode=mode) as client:
            assert (client.protocol_version in MODERN_PROTOCOL_VERSIONS) == (mode == "auto")
            result = await client.call_tool("deploy", DEPLOY)
            assert (result.is_error, text_of(result)) == (False, DEPLOYED)
        (shown,) = form.shown
        found = re.search(r"\nAsk (\w+): the first answer decides", shown.message)
        assert found is not None, shown.message
        record = http.get(f"/v1/asks/{found[1]}").json()
    assert (record["answer"], record["answered_by"]) == ("Approve", "alice")  # through the door, as alice
    assert shown.message.startswith(record["prompt"]) and record["prompt"].startswith('Run deploy on ops?\nenv: "prod"')
    assert "tok-4f9a" not in shown.message  # the form shows what the ask shows: secrets redacted
    decision = shown.requested_schema["properties"]["decision"]
    assert decision["enum"] == ["Approve", "Reject"] and shown.requested_schema["required"] == ["decision"]
    assert setup.calls("deploy") == [{"tool": "deploy", "arguments": DEPLOY}]


@pytest.mark.parametrize("setup", ENGINES, indirect=True)
@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_a_reject_on_the_form_is_a_tool_error_naming_who_and_why(
    setup: Setup, http_server: Server, mode: str
) -> None:
    setup.configure(rule(ask_client="true"))
    form = Form(decision="Reject", reason="wrong version, use 1.4.3")
    async with connected(setup, "stdio", elicitation_callback=form, mode=mode) as client:
        result = await client.call_tool("deploy", DEPLOY)
    ask_id = ask_id_of(result)
    assert result.is_error and result.meta[META_KEY] == {"ask_id": ask_id, "status": "answered"}
    assert (
        text_of(result)
        == f"Rejected by mcp-client (ask {ask_id}): deploy did not run. Reason: wrong version, use 1.4.3"
    )
    with http_server.client() as http:
        record = http.get(f"/v1/asks/{ask_id}").json()
    assert (record["status"], record["answer"], record["answered_by"]) == ("answered", "Reject", "mcp-client")
    assert setup.calls("deploy") == []


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_a_person_on_a_surface_who_answers_first_wins_and_the_form_changes_nothing(
    setup: Setup, http_server: Server, mode: str
) -> None:
    setup.configure(rule(ask_client="true"))
    form = Form(decision="Reject").waiting()
    with http_server.client() as http:
        async with (
            connected(setup, "stdio", elicitation_callback=form, mode=mode) as client,
            anyio.create_task_group() as group,
        ):
            calls = Calls(client, group)
            calls.start("deploy", "deploy", DEPLOY)
            (ask,) = await parked(http)
            await wait_for(lambda: form.shown, "the form")
            assert say(http, ask, "Approve", "bob")["kind"] == "selected"
            if mode == "legacy":  # the call is held: it returns at once, and the form is withdrawn
                result = await calls.result("deploy")
                await wait_for(lambda: form.withdrawn, "the form withdrawn")
            else:  # the form is the call's own round: the call returns once the form is answered
                form.release()
                result = await calls.result("deploy")
            assert (result.is_error, text_of(result)) == (False, DEPLOYED)
            record = http.get(f"/v1/asks/{ask['ask_id']}").json()
    assert (record["answer"], record["answered_by"]) == ("Approve", "bob")  # the form's Reject came too late
    assert setup.calls("deploy") == [{"tool": "deploy", "arguments": DEPLOY}]


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_the_client_s_approval_is_one_vote_of_a_quorum(setup: Setup, http_server: Server, mode: str) -> None:
    setup.configure(rule(responders='["alice", "bob", "carol"]', quorum="2", ask_client='"alice"'))
    form = Form()
    with http_server.client() as http:
        async with (
            connected(setup, "stdio", elicitation_callback=form, mode=mode) as client,
            anyio.create_task_group() as group,
        ):
            calls = Calls(client, group)
            calls.start("deploy", "deploy", DEPLOY)
            (ask,) = await parked(http)
            await wait_for(lambda: http.get(f"/v1/asks/{ask['ask_id']}").json()["votes"], "alice's vote")
            assert setup.calls("deploy") == [] and "deploy" not in calls.results
            assert say(http, ask, "Approve", "carol")["kind"] == "selected"
            result = await calls.result("deploy")
    assert text_of(result) == DEPLOYED
    assert setup.calls("deploy") == [{"tool": "deploy", "arguments": DEPLOY}]


async def test_a_declined_form_leaves_the_call_held_for_the_people_on_parkgate_s_surfaces(
    setup: Setup, http_server: Server
) -> None:
    setup.configure(rule(ask_client="true"))
    form = Form(action="decline")
    with http_server.client() as http:
        async with (
            connected(setup, "stdio", elicitation_callback=form) as client,
            anyio.create_task_group() as group,
        ):
            calls = Calls(client, group)
            calls.start("deploy", "deploy", DEPLOY)
            (ask,) = await parked(http)
            await calls.held_on("deploy", ask["ask_id"])  # the form was declined: the call is held
            assert len(form.shown) == 1 and http.get(f"/v1/asks/{ask['ask_id']}").json()["status"] == "open"
            say(http, ask, "Reject", "bob")
            result = await calls.result("deploy")
    assert text_of(result) == f"Rejected by bob (ask {ask['ask_id']}): deploy did not run."
    assert setup.calls("deploy") == []


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_without_an_elicitation_callback_the_ask_waits_for_a_person(
    setup: Setup, http_server: Server, mode: str
) -> None:
    setup.configure(rule(ask_client="true"))
    with http_server.client() as http:
        async with connected(setup, "stdio", mode=mode) as client, anyio.create_task_group() as group:
            calls = Calls(client, group)
            calls.start("deploy", "deploy", DEPLOY)
            (ask,) = await parked(http)
            await calls.held_on("deploy", ask["ask_id"])
            say(http, ask, "Approve", "bob")
            result = await calls.result("deploy")
    assert text_of(result) == DEPLOYED
    assert setup.calls("deploy") == [{"tool": "deploy", "arguments": DEPLOY}]


async def test_a_rule_without_ask_client_never_shows_the_client_s_user_a_form(
    setup: Setup, http_server: Server
) -> None:
    setup.configure(rule(hold='"0.5s"'))
    form = Form()
    async with connected(setup, "stdio", elicitation_callback=form) as client:
        result = await client.call_tool("deploy", DEPLOY)
    assert result.meta[META_KEY]["status"] == "pending" and form.shown == []
    assert setup.calls("deploy") == []
