"""``parkgate mcp-gateway`` with the MCP SDK's own client, over stdio and streamable HTTP, in
front of a real MCP server (``ops_server.py``) that records every call it gets: a safe
tool is forwarded at once, a call the policy names is parked as an ask and answered on a
live parkgate server on the same database (HTTP, Slack), and the downstream server is
called exactly once per approved call, never for a rejected or expired one.

Real time is what some of these test (a hold bound, an expiry read by nobody), so those
use holds and TTLs of a second or two; the others use long ones. How long an approval
stays valid is timed on the gateway's clock: those tests run the gateway's server in this
process on a :class:`~parkgate.ManualClock` and move it.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import anyio
import httpx
import pytest
from harness import TRANSPORTS, Setup, connected, in_process, open_asks, parked, say, text_of, wait_for
from live_server import Server
from slack_stand_in import BOT_TOKEN, SIGNING_SECRET, SlackWebApi, send

from parkgate import ManualClock
from parkgate.core.kinds import AskStatus
from parkgate.mcp_gateway.holding import META_KEY
from parkgate.store import open_store

DEPLOY = {"env": "prod", "version": "1.2.3", "api_token": "tok-4f9a-secret"}
ENGINES = ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]


def rule(**fields: str) -> str:
    """An ``[[approval]]`` table holding ``deploy`` calls, with ``fields`` (TOML values) added."""
    lines = ["[[approval]]", 'tools = ["deploy*"]', *(f"{key} = {value}" for key, value in fields.items())]
    return "\n".join(lines) + "\n"


def ask_id_of(result: Any) -> str:
    return str(result.meta[META_KEY]["ask_id"])


class Calls:
    """Calls the gateway's tools in the background, so a test can answer while they are held."""

    def __init__(self, client: Any, group: anyio.abc.TaskGroup) -> None:
        self.client, self.group = client, group
        self.results: dict[str, Any] = {}
        self.progress: dict[str, list[str]] = {}

    def start(self, key: str, tool: str, arguments: dict[str, Any]) -> None:
        self.progress[key] = []

        async def report(progress: float, total: float | None, message: str | None) -> None:
            self.progress[key].append(message or "")

        async def call() -> None:
            self.results[key] = await self.client.call_tool(tool, arguments, progress_callback=report)

        self.group.start_soon(call)

    async def held_on(self, key: str, ask_id: str) -> None:
        """Once the call ``key`` reports that it waits on ``ask_id`` (its progress says so)."""
        await wait_for(lambda: f"Waiting for approval: ask {ask_id}" in self.progress[key], "the held call's progress")

    async def result(self, key: str) -> Any:
        while key not in self.results:
            await anyio.sleep(0.02)
        return self.results[key]


@pytest.mark.parametrize("setup", ENGINES, indirect=True)
@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_a_safe_tool_is_forwarded_at_once_and_deploy_waits_for_an_approval_over_http(
    setup: Setup, http_server: Server, transport: str
) -> None:
    setup.configure(rule(ttl='"10m"', hold='"50s"'))
    with http_server.client() as http:
        async with connected(setup, transport) as client, anyio.create_task_group() as group:
            assert {tool.name for tool in (await client.list_tools()).tools} == {"status", "deploy", "drop"}
            status = await client.call_tool("status", {"service": "api"})
            assert (status.is_error, text_of(status)) == (False, "api: ok")
            assert setup.calls("status") == [{"tool": "status", "arguments": {"service": "api"}}]
            assert open_asks(http, "status") == []  # forwarded, never parked

            calls = Calls(client, group)
            calls.start("deploy", "deploy", DEPLOY)
            (ask,) = await parked(http)
            assert ask["options"] == ["Approve", "Reject"]
            assert ask["context"]["server"] == "ops" and ask["context"]["tool"] == "deploy"
            assert ask["context"]["arguments"] == {**DEPLOY, "api_token": "[redacted]"}
            assert "deploy" in ask["prompt"] and '"1.2.3"' in ask["prompt"] and "tok-4f9a" not in ask["prompt"]
            assert setup.calls("deploy") == []  # held: the server has not been called

            assert say(http, ask, "Approve", "alice")["kind"] == "selected"
            result = await calls.result("deploy")
            assert (result.is_error, text_of(result)) == (False, "deployed 1.2.3 to prod")
            # Exactly the approved arguments, the secret included, once.
            assert setup.calls("deploy") == [{"tool": "deploy", "arguments": DEPLOY}]
            record = http.get(f"/v1/asks/{ask['ask_id']}").json()
            assert (record["status"], record["answer"], record["answered_by"]) == ("answered", "Approve", "alice")


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_a_rejected_call_is_a_tool_error_saying_who_rejected_it_and_never_runs(
    setup: Setup, http_server: Server, transport: str
) -> None:
    setup.configure(rule(responders='["alice", "bob"]'))
    with http_server.client() as http:
        async with connected(setup, transport) as client, anyio.create_task_group() as group:
            calls = Calls(client, group)
            calls.start("deploy", "deploy", DEPLOY)
            (ask,) = await parked(http)
            assert say(http, ask, "2", "bob")["kind"] == "selected"  # Reject, by its number
            result = await calls.result("deploy")
            assert result.is_error and text_of(result) == f"Rejected by bob (ask {ask['ask_id']}): deploy did not run."
            assert result.meta[META_KEY] == {"ask_id": ask["ask_id"], "status": "answered"}
    assert setup.calls("deploy") == []


async def test_a_cancelled_ask_is_a_tool_error_saying_who_cancelled_it(setup: Setup, http_server: Server) -> None:
    setup.configure(rule())
    with http_server.client() as http:
        async with connected(setup, "stdio") as client, anyio.create_task_group() as group:
            calls = Calls(client, group)
            calls.start("deploy", "deploy", DEPLOY)
            (ask,) = await parked(http)
            assert say(http, ask, "/cancel", "alice")["kind"] == "cancelled"
            result = await calls.result("deploy")
            assert result.is_error and text_of(result).startswith(f"Cancelled by alice (ask {ask['ask_id']})")
    assert setup.calls("deploy") == []


async def test_an_ask_nobody_answers_is_an_expired_tool_error_within_2_s_of_its_ttl(setup: Setup) -> None:
    setup.configure(rule(ttl='"2s"', hold='"30s"'))
    async with connected(setup, "stdio") as client:
        result = await client.call_tool("deploy", DEPLOY)
        returned = datetime.now(UTC)
    assert result.is_error and text_of(result).startswith("Expired: nobody answered ask ")
    with open_store(setup.db_url) as store, store.transaction() as tx:
        ask = tx.ask(ask_id_of(result))
    assert ask is not None and ask.status is AskStatus.EXPIRED
    assert 0 <= (returned - ask.due_at).total_seconds() <= 2.0
    assert setup.calls("deploy") == []


async def test_past_its_hold_a_call_is_pending_and_the_identical_call_attaches_to_its_ask(
    setup: Setup, http_server: Server
) -> None:
    setup.configure(rule(ttl='"10m"', hold='"1s"'))
    with http_server.client() as http:
        async with connected(setup, "stdio") as client, anyio.create_task_group() as group:
            first = await client.call_tool("deploy", DEPLOY)
            pending_id = ask_id_of(first)
            assert first.is_error and first.meta[META_KEY]["status"] == "pending"
            assert f"Ask {pending_id} waits for a person" in text_of(first)
            assert "Call deploy again with exactly the same arguments" in text_of(first)

            other = await client.call_tool("deploy", {**DEPLOY, "version": "1.2.4"})  # changed arguments
            assert ask_id_of(other) != pending_id
            assert {ask["ask_id"] for ask in open_asks(http)} == {pending_id, ask_id_of(other)}

            calls = Calls(client, group)
            calls.start("again", "deploy", dict(DEPLOY))  # identical: attaches, parks nothing
            await calls.held_on("again", pending_id)
            assert len(open_asks(http)) == 2
            (ask,) = [ask for ask in open_asks(http) if ask["ask_id"] == pending_id]
            say(http, ask, "Approve", "alice")
            result = await calls.result("again")
            assert (result.is_error, text_of(result)) == (False, "deployed 1.2.3 to prod")
    assert setup.calls("deploy") == [{"tool": "deploy", "arguments": DEPLOY}]


async def test_a_decision_made_while_no_call_waits_goes_to_the_next_identical_call_once(
    setup: Setup, http_server: Server
) -> None:
    setup.configure(rule(ttl='"10m"', hold='"0.5s"'))
    rejected_args = {**DEPLOY, "version": "0.9"}
    with http_server.client() as http:
        async with connected(setup, "stdio") as client:
            approved = ask_id_of(await client.call_tool("deploy", DEPLOY))
            rejected = ask_id_of(await client.call_tool("deploy", rejected_args))
            for ask in open_asks(http):
                say(http, ask, "Approve" if ask["ask_id"] == approved else "Reject", "alice")

            forwarded = await client.call_tool("deploy", DEPLOY)  # takes the approval at once
            assert (forwarded.is_error, text_of(forwarded)) == (False, "deployed 1.2.3 to prod")
            refused = await client.call_tool("deploy", rejected_args)
            assert text_of(refused) == f"Rejected by alice (ask {rejected}): deploy did not run."

            # Each decision served one call: the same calls again ask again.
            again = await client.call_tool("deploy", DEPLOY)
            assert again.meta[META_KEY]["status"] == "pending" and ask_id_of(again) != approved
            assert ask_id_of(await client.call_tool("deploy", rejected_args)) != rejected
    assert setup.calls("deploy") == [{"tool": "deploy", "arguments": DEPLOY}]


async def test_a_pending_ask_nobody_reads_expires_at_its_ttl_and_the_next_identical_call_says_so(
    setup: Setup,
) -> None:
    setup.configure(rule(ttl='"2s"', hold='"0.2s"'))
    async with connected(setup, "stdio") as client:
        pending = await client.call_tool("deploy", DEPLOY)
        ask_id = ask_id_of(pending)

        def closed() -> Any:  # read as stored: this read closes nothing
            with open_store(setup.db_url) as store, store.transaction() as tx:
                ask = tx.ask(ask_id)
                return ask if ask is not None and not ask.is_open else None

        ask = await wait_for(closed, "the gateway's deliverer to expire the ask", 15)
        noticed = datetime.now(UTC)
        assert ask.status is AskStatus.EXPIRED and (noticed - ask.due_at).total_seconds() <= 2.0
        result = await client.call_tool("deploy", DEPLOY)
        assert text_of(result).startswith(f"Expired: nobody answered ask {ask_id} within 2 s")
    assert setup.calls("deploy") == []


async def test_two_of_three_forwards_only_after_the_second_approval_and_others_change_nothing(
    setup: Setup, http_server: Server
) -> None:
    setup.configure(rule(responders='["alice", "bob", "carol"]', quorum="2"))
    with http_server.client() as http:
        async with connected(setup, "stdio") as client, anyio.create_task_group() as group:
            calls = Calls(client, group)
            calls.start("deploy", "deploy", DEPLOY)
            (ask,) = await parked(http)
            assert say(http, ask, "Approve", "alice")["kind"] == "voted"
            assert say(http, ask, "Approve", "mallory")["kind"] == "not_yours"
            assert say(http, ask, "Approve", "mallory")["kind"] == "not_yours"
            assert http.get(f"/v1/asks/{ask['ask_id']}").json()["status"] == "open"
            assert setup.calls("deploy") == [] and "deploy" not in calls.results
            assert say(http, ask, "Approve", "carol")["kind"] == "selected"
            result = await calls.result("deploy")
            assert text_of(result) == "deployed 1.2.3 to prod"
    assert setup.calls("deploy") == [{"tool": "deploy", "arguments": DEPLOY}]


async def test_rules_match_by_annotation_and_by_argument(setup: Setup, http_server: Server) -> None:
    setup.configure(
        '[[approval]]\nannotations = { destructiveHint = true }\nhold = "0.2s"\n\n'
        '[[approval]]\ntools = ["ops.deploy"]\narguments = { env = "prod*" }\nhold = "0.2s"\n'
    )
    async with connected(setup, "stdio") as client:
        staging = await client.call_tool("deploy", {**DEPLOY, "env": "staging"})
        assert text_of(staging) == "deployed 1.2.3 to staging"
        production = await client.call_tool("deploy", {**DEPLOY, "env": "production"})
        assert production.meta[META_KEY]["status"] == "pending"
        dropped = await client.call_tool("drop", {"table": "users"})
        assert dropped.meta[META_KEY]["status"] == "pending"
        with http_server.client() as http:
            assert [ask["context"]["arguments"] for ask in open_asks(http, "drop")] == [{"table": "users"}]
            assert [ask["context"]["arguments"]["env"] for ask in open_asks(http)] == ["production"]
    assert [call["arguments"]["env"] for call in setup.calls("deploy")] == ["staging"]
    assert setup.calls("drop") == []


@pytest.fixture
def slack_api() -> Any:
    api = SlackWebApi().start()
    yield api
    api.stop()


async def test_approving_on_slack_forwards_the_call_and_an_identical_call_posts_nothing_more(
    setup: Setup, slack_api: SlackWebApi
) -> None:
    setup.env.update(
        PARKGATE_SLACK_BOT_TOKEN=BOT_TOKEN,
        PARKGATE_SLACK_SIGNING_SECRET=SIGNING_SECRET,
        PARKGATE_SLACK_API_URL=slack_api.url,
    )
    server = Server(setup.db_url, setup.folder / "server.log", schema=setup.schema, extra_env=setup.env, in_thread=True)
    setup.configure(
        rule(responders='["UALICE"]', hold='"1s"', post_to='{ channel = "slack", where = { channel = "C1" } }')
    )
    server.start()
    try:
        async with connected(setup, "stdio") as client, anyio.create_task_group() as group:
            pending = await client.call_tool("deploy", DEPLOY)
            ask_id = ask_id_of(pending)
            (post,) = await wait_for(lambda: slack_api.of("chat.postMessage"), "the ask's post")
            assert post.args["channel"] == "C1" and "deploy" in post.args["text"]
            calls = Calls(client, group)
            calls.start("again", "deploy", DEPLOY)  # attaches: no second ask, no second post
            await calls.held_on("again", ask_id)
            with httpx.Client(base_url=server.url, timeout=30) as slack:
                click = slack_api.click(ask_id, "parkgate:option:1", "UALICE", "t-1")
                assert send(slack, click, form=True).status_code == 200
            result = await calls.result("again")
            assert text_of(result) == "deployed 1.2.3 to prod"
            (update,) = await wait_for(lambda: slack_api.of("chat.update"), "the post's update")
            assert update.args["text"] == "Answered: Approve, by <@UALICE>"
            assert len(slack_api.of("chat.postMessage")) == 1
    finally:
        server.stop()
    assert setup.calls("deploy") == [{"tool": "deploy", "arguments": DEPLOY}]


async def test_two_identical_calls_held_on_one_approval_forward_once_and_the_other_asks_again(
    setup: Setup, http_server: Server
) -> None:
    setup.configure(rule(ttl='"10m"', hold='"3s"'))
    with http_server.client() as http:
        async with connected(setup, "stdio") as client, anyio.create_task_group() as group:
            calls = Calls(client, group)
            calls.start("one", "deploy", DEPLOY)
            (ask,) = await parked(http)
            calls.start("two", "deploy", DEPLOY)
            await calls.held_on("one", ask["ask_id"])
            await calls.held_on("two", ask["ask_id"])
            say(http, ask, "Approve", "alice")
            results = [await calls.result("one"), await calls.result("two")]
    forwarded = [result for result in results if not result.is_error]
    assert [text_of(result) for result in forwarded] == ["deployed 1.2.3 to prod"]
    (again,) = [result for result in results if result.is_error]
    assert again.meta[META_KEY]["status"] == "pending" and ask_id_of(again) != ask["ask_id"]
    assert setup.calls("deploy") == [{"tool": "deploy", "arguments": DEPLOY}]


@pytest.mark.parametrize("setup", ENGINES, indirect=True)
async def test_an_approval_valid_for_ten_minutes_forwards_the_identical_call_until_then_and_asks_again_after(
    setup: Setup, clocked_http_server: Server, clock: ManualClock
) -> None:
    setup.configure(rule(ttl='"1h"', hold='"0.3s"', valid_for='"10m"'))
    changed_args = {**DEPLOY, "version": "1.2.4"}
    with clocked_http_server.client() as http:
        async with in_process(setup, clock) as client:
            approval = ask_id_of(await client.call_tool("deploy", DEPLOY))
            (ask,) = open_asks(http)
            clock.advance(timedelta(minutes=3))  # the window runs from the approval, not the ask
            say(http, ask, "Approve", "alice")
            for _ in range(3):
                assert text_of(await client.call_tool("deploy", DEPLOY)) == "deployed 1.2.3 to prod"
            clock.advance(timedelta(minutes=9, seconds=59))
            assert text_of(await client.call_tool("deploy", DEPLOY)) == "deployed 1.2.3 to prod"
            assert open_asks(http) == []  # none of them asked

            changed = await client.call_tool("deploy", changed_args)  # other arguments: another ask
            assert changed.meta[META_KEY]["status"] == "pending"
            clock.advance(timedelta(seconds=1))  # ten minutes since the approval
            lapsed = await client.call_tool("deploy", DEPLOY)
            assert lapsed.meta[META_KEY]["status"] == "pending"
            assert ask_id_of(lapsed) not in (approval, ask_id_of(changed))
            assert {ask["ask_id"] for ask in open_asks(http)} == {ask_id_of(changed), ask_id_of(lapsed)}
            assert ask_id_of(await client.call_tool("deploy", DEPLOY)) == ask_id_of(lapsed)  # attaches to it
    assert setup.calls("deploy") == [{"tool": "deploy", "arguments": DEPLOY}] * 4


async def test_within_an_approval_s_window_a_rejection_still_answers_one_call(
    setup: Setup, clocked_http_server: Server, clock: ManualClock
) -> None:
    setup.configure(rule(hold='"0.3s"', valid_for='"10m"'))
    with clocked_http_server.client() as http:
        async with in_process(setup, clock) as client:
            rejected = ask_id_of(await client.call_tool("deploy", DEPLOY))
            (ask,) = open_asks(http)
            say(http, ask, "Reject", "bob")
            refused = await client.call_tool("deploy", DEPLOY)
            assert text_of(refused) == f"Rejected by bob (ask {rejected}): deploy did not run."
            again = await client.call_tool("deploy", DEPLOY)
            assert again.meta[META_KEY]["status"] == "pending" and ask_id_of(again) != rejected
    assert setup.calls("deploy") == []
