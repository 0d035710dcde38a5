"""The OpenAI Agents SDK adapter through the real SDK: a ``ScriptedModel`` agent whose
``deploy`` tool needs approval, on SQLite and PostgreSQL, with no network and no key."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import timedelta
from typing import TYPE_CHECKING, Any

import pytest
from agents import Agent, RunConfig, function_tool
from agents.testing import ModelCall, ModelStep, ScriptedModel, assistant_message, function_call
from pydantic import BaseModel

from parkgate import AskAlreadyOpen, Gateway, InputError, ManualClock, ReplyKind
from parkgate.adapters.openai_agents import DEFAULT_LEASE, AgentApprovals, Finished
from parkgate.core import phrases as P

if TYPE_CHECKING:
    from conftest import Reopen, StoreLocation

OFFLINE = RunConfig(tracing_disabled=True)


class Ops:
    """A scripted ops agent: asked to deploy, it calls ``deploy`` for each named target
    (in one turn), then reports every tool output it was given."""

    def __init__(self, *targets: str) -> None:
        self.targets = targets or ("prod",)
        self.ran: list[str] = []
        self.fail_next = False
        self.model = ScriptedModel([ModelStep.respond(self.respond) for _ in range(6)])

        @function_tool(needs_approval=True)
        def deploy(env: str) -> str:
            """Deploy the service to ``env``."""
            self.ran.append(env)
            return f"deployed {env}"

        self.agent = Agent(name="ops", model=self.model, tools=[deploy])

    def respond(self, call: ModelCall) -> Any:
        if self.fail_next:
            self.fail_next = False
            return RuntimeError("the model is down")
        outputs = tool_outputs(call.input)
        if outputs:
            return [assistant_message(" | ".join(outputs))]
        return [function_call("deploy", {"env": env}, call_id=f"call-{env}") for env in self.targets]

    @property
    def last_outputs(self) -> list[str]:
        assert self.model.last_call is not None
        return tool_outputs(self.model.last_call.input)


def tool_outputs(model_input: Any) -> list[str]:
    """The tool outputs the model was given, in order."""
    items = model_input if isinstance(model_input, list) else []
    return [
        str(item["output"]) for item in items if isinstance(item, dict) and item.get("type") == "function_call_output"
    ]


def approvals_for(gateway: Gateway, ops: Ops, **options: Any) -> AgentApprovals:
    return AgentApprovals(gateway, ops.agent, OFFLINE, **options)


async def eventually(check: Callable[[], bool], what: str) -> None:
    """Wait for the watcher task to have done ``what`` (polls; asserts no timing)."""
    for _ in range(3000):
        if check():
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"never happened: {what}")


def pending_follow_ups(location: StoreLocation) -> int:
    return int(location.raw_query("SELECT count(*) FROM follow_ups WHERE done_at IS NULL")[0][0])


def kept_states(location: StoreLocation) -> int:
    return int(location.raw_query("SELECT count(*) FROM agent_states")[0][0])


async def test_an_approval_parks_an_ask_and_1_runs_the_tool_and_returns_the_final_output(
    gateway: Gateway, store_location: StoreLocation
) -> None:
    ops = Ops()
    approvals = approvals_for(gateway, ops)
    turn = await approvals.run("c1", "deploy prod")
    assert turn.reply.kind is ReplyKind.ASKED and turn.final_output is None and turn.result is not None
    assert "Run deploy?" in turn.reply.text and 'Arguments: {"env": "prod"}' in turn.reply.text
    assert "1. Approve" in turn.reply.text and "2. Reject" in turn.reply.text
    assert ops.ran == [] and kept_states(store_location) == 1
    ask = gateway.parked("c1")
    assert ask is not None and ask.context is not None
    assert ask.context["agent_approval"]["tool"] == "deploy"

    done = await approvals.handle("c1", "1", sender="alice")
    assert done.reply.kind is ReplyKind.SELECTED and done.finished
    assert done.final_output == "deployed prod" and ops.ran == ["prod"]
    assert gateway.get(ask.id).answered_by == "alice"
    run = gateway.run(ask.run_id)
    assert run is not None and run.outcome == "done"
    assert kept_states(store_location) == 0 and gateway.parked("c1") is None


async def test_four_misses_then_cancel_rejects_and_the_model_hears_why(gateway: Gateway) -> None:
    ops = Ops()
    approvals = approvals_for(gateway, ops)
    await approvals.run("c1", "deploy prod")
    kinds = [(await approvals.handle("c1", word)).reply.kind for word in ("maybe", "yes please", "9", "hm")]
    assert ReplyKind.RETRY in kinds and kinds[-1] is ReplyKind.ESCALATED and ops.ran == []
    turn = await approvals.handle("c1", "cancel")
    assert turn.reply.kind is ReplyKind.CANCELLED and turn.finished
    assert ops.ran == [] and ops.last_outputs == [P.AGENT_CANCELLED]
    assert turn.final_output == P.AGENT_CANCELLED


async def test_reject_asks_why_and_the_model_reads_the_reason_the_run_keeps(gateway: Gateway) -> None:
    ops = Ops()
    approvals = approvals_for(gateway, ops)
    turn = await approvals.run("c1", "deploy prod")
    rejected = await approvals.handle("c1", "2")
    assert rejected.reply.kind is ReplyKind.SELECTED and not rejected.finished and ops.model.remaining_steps == 5
    assert rejected.text.startswith("Selected 2. Reject\n\nWhy not run deploy? The agent is told your reason")
    kinds = [(await approvals.handle("c1", word)).reply.kind for word in ("  ", "/menu")]
    assert kinds == [ReplyKind.RETRY, ReplyKind.RESHOWN]  # the question's door: a miss, a re-show
    done = await approvals.handle("c1", "wrong version, use 1.4.3")
    assert done.reply.kind is ReplyKind.ANSWERED and done.finished and ops.ran == []
    assert ops.last_outputs == ["Rejected: wrong version, use 1.4.3"] and done.final_output == ops.last_outputs[0]
    assert turn.reply.run_id is not None
    run = gateway.run(turn.reply.run_id)
    assert run is not None and (run.outcome, run.output) == ("done", "Rejected: wrong version, use 1.4.3")
    assert run.answers == {"deploy:call-prod": "Reject", "deploy:call-prod:reason": "wrong version, use 1.4.3"}


async def test_a_dash_or_a_reason_question_nobody_answers_gives_no_reason(gateway: Gateway, clock: ManualClock) -> None:
    ops = Ops("prod", "staging")
    approvals = approvals_for(gateway, ops, ttl=timedelta(minutes=30))
    await approvals.run("c1", "deploy both")
    await approvals.handle("c1", "2")
    asked = await approvals.handle("c1", "-")
    assert asked.asked is not None and "Run deploy (2 of 2)?" in asked.asked.text
    await approvals.handle("c1", "2")
    clock.advance(timedelta(minutes=31))
    assert gateway.read_due() == 1  # the reason question expires: its default, "-", stands in
    assert await approvals.follow_up() == 1
    assert ops.last_outputs == [P.AGENT_REJECTED, P.AGENT_REJECTED] and ops.ran == []


async def test_a_cancel_at_the_reason_question_drops_the_turn_and_the_reject_stands(gateway: Gateway) -> None:
    ops = Ops("prod", "staging")
    approvals = approvals_for(gateway, ops)
    turn = await approvals.run("c1", "deploy both")
    await approvals.handle("c1", "2")
    done = await approvals.handle("c1", "cancel")  # a text question's data: the reason is "cancel"
    assert done.asked is not None and "Run deploy (2 of 2)?" in done.asked.text
    await approvals.handle("c1", "2")
    dropped = await approvals.handle("c1", "/cancel")
    assert dropped.reply.kind is ReplyKind.CANCELLED and dropped.finished and ops.ran == []
    assert ops.last_outputs == ["Rejected: cancel", P.AGENT_REJECTED]
    assert turn.reply.run_id is not None
    run = gateway.run(turn.reply.run_id)
    assert run is not None and run.outcome == "cancelled"


async def test_a_reason_given_with_the_reject_or_none_asked_for_resumes_at_once(gateway: Gateway) -> None:
    ops = Ops()
    given = approvals_for(gateway, ops)
    await given.run("c1", "deploy prod")
    turn = await given.handle("c1", "2", sender="alice", reason="use 1.4.3")
    assert turn.finished and turn.asked is None and ops.last_outputs == ["Rejected: use 1.4.3"]
    unasked = approvals_for(gateway, ops, ask_reason=False)
    await unasked.run("c2", "deploy prod")
    turn = await unasked.handle("c2", "2", reason="   ")  # a blank reason is none
    assert turn.finished and ops.last_outputs == [P.AGENT_REJECTED] and ops.ran == []


async def test_an_expiry_nobody_reads_resumes_the_run_with_the_rejection(
    gateway: Gateway, clock: ManualClock, store_location: StoreLocation
) -> None:
    ops = Ops()
    approvals = approvals_for(gateway, ops)
    turn = await approvals.run("c1", "deploy prod")
    assert await approvals.follow_up() == 0  # open: nothing to follow up
    clock.advance(timedelta(hours=6, seconds=1))
    assert gateway.read_due() == 1  # what a deliverer does when the TTL falls due
    assert await approvals.follow_up() == 1
    assert ops.ran == [] and ops.last_outputs == ["No decision: the question expired after 6 h; the tool did not run"]
    assert turn.reply.run_id is not None
    run = gateway.run(turn.reply.run_id)
    assert run is not None and run.status.value == "complete" and kept_states(store_location) == 0
    assert await approvals.follow_up() == 0  # resumed once


async def test_an_expiry_found_by_the_next_message_returns_the_resumed_output(
    gateway: Gateway, clock: ManualClock
) -> None:
    ops = Ops()
    approvals = approvals_for(gateway, ops, ttl=timedelta(minutes=30))
    await approvals.run("c1", "deploy prod")
    clock.advance(timedelta(minutes=31))
    turn = await approvals.handle("c1", "1")
    assert turn.reply.kind is ReplyKind.PASS and turn.reply.expired_ask_id is not None
    assert turn.final_output == "No decision: the question expired after 30 min; the tool did not run"
    assert ops.ran == []


async def test_a_new_process_on_the_same_database_resumes_a_run_parked_by_another(
    gateway: Gateway, reopen: Reopen, store_location: StoreLocation
) -> None:
    first = Ops()
    await approvals_for(gateway, first).run("c1", "deploy prod")
    gateway.close()  # the first process is gone; its agent object with it

    second = Ops()
    later = reopen()
    try:
        turn = await approvals_for(later, second).handle("c1", "1")
        assert turn.final_output == "deployed prod" and second.ran == ["prod"] and first.ran == []
        assert kept_states(store_location) == 0
    finally:
        later.close()


async def test_two_approvals_in_one_turn_are_asked_in_turn_and_resumed_once(gateway: Gateway) -> None:
    ops = Ops("prod", "staging")
    approvals = approvals_for(gateway, ops)
    turn = await approvals.run("c1", "deploy both")
    assert "Run deploy (1 of 2)?" in turn.reply.text and '"prod"' in turn.reply.text
    second = await approvals.handle("c1", "1")
    assert second.reply.kind is ReplyKind.SELECTED and second.result is None and ops.ran == []
    assert second.asked is not None and "Run deploy (2 of 2)?" in second.asked.text and '"staging"' in second.asked.text
    await approvals.handle("c1", "2")
    done = await approvals.handle("c1", "-")
    assert ops.ran == ["prod"] and done.final_output == f"deployed prod | {P.AGENT_REJECTED}"


async def test_a_non_responders_reply_changes_nothing(gateway: Gateway) -> None:
    ops = Ops()
    approvals = approvals_for(gateway, ops, responders=["alice", "bob"], quorum=2)
    await approvals.run("c1", "deploy prod")
    stranger = await approvals.handle("c1", "1", sender="mallory")
    assert stranger.reply.kind is ReplyKind.NOT_YOURS and stranger.result is None and ops.ran == []
    vote = await approvals.handle("c1", "1", sender="alice")
    assert vote.reply.kind is ReplyKind.VOTED and ops.ran == []
    done = await approvals.handle("c1", "1", sender="bob")
    assert done.final_output == "deployed prod" and ops.ran == ["prod"]


@pytest.mark.parametrize("store_location", ["sqlite"], indirect=True)
def test_the_sync_wrappers_run_and_handle(gateway: Gateway) -> None:
    ops = Ops()
    approvals = approvals_for(gateway, ops)
    assert approvals.run_sync("c1", "deploy prod").reply.kind is ReplyKind.ASKED
    assert approvals.handle_sync("c1", "1").final_output == "deployed prod"


async def test_a_run_where_another_ask_is_open_raises_and_keeps_nothing(
    gateway: Gateway, store_location: StoreLocation
) -> None:
    gateway.ask("c1", "Lunch?", ["Yes", "No"])
    ops = Ops()
    with pytest.raises(AskAlreadyOpen):
        await approvals_for(gateway, ops).run("c1", "deploy prod")
    assert kept_states(store_location) == 0 and ops.ran == []


async def test_an_operator_cancel_is_resumed_by_the_watcher_once(
    gateway: Gateway, reopen: Reopen, store_location: StoreLocation
) -> None:
    ops = Ops()
    approvals = approvals_for(gateway, ops)
    turn = await approvals.run("c1", "deploy prod")
    operator = reopen()  # the console's process
    try:
        operator.cancel(turn.reply.ask_id or "")
    finally:
        operator.close()
    watcher = asyncio.create_task(approvals.watch())
    try:
        await eventually(lambda: not pending_follow_ups(store_location), "the watcher resumed the run")
    finally:
        watcher.cancel()
    assert ops.ran == [] and ops.last_outputs == [P.AGENT_CANCELLED] and ops.model.remaining_steps == 4
    assert await approvals.follow_up() == 0


@pytest.mark.parametrize("store_location", ["sqlite"], indirect=True)
@pytest.mark.parametrize(
    ("options", "says"),
    [({"quorum": 2}, "quorum needs responders"), ({"responders": []}, "responders is empty"), ({"ttl": 0}, "ttl")],
)
def test_bad_options_are_refused_before_anything_runs(gateway: Gateway, options: dict[str, Any], says: str) -> None:
    ops = Ops()
    with pytest.raises(InputError, match=says):
        approvals_for(gateway, ops, **options)
    assert ops.model.calls == ()


async def test_a_resume_that_fails_midway_is_never_run_again(
    gateway: Gateway, clock: ManualClock, store_location: StoreLocation
) -> None:
    ops = Ops()
    approvals = approvals_for(gateway, ops)
    await approvals.run("c1", "deploy prod")
    ops.fail_next = True  # the tool runs, then the model call after it fails
    with pytest.raises(RuntimeError, match="the model is down"):
        await approvals.handle("c1", "1")
    assert ops.ran == ["prod"] and kept_states(store_location) == 0
    clock.advance(DEFAULT_LEASE + timedelta(seconds=1))  # the failed resumer's claim runs out
    assert await approvals.follow_up() == 0
    assert ops.ran == ["prod"]  # at most once: the approved tool never runs twice


async def test_a_run_the_watcher_resumes_hands_its_final_output_to_the_hook_and_keeps_it_on_the_run(
    gateway: Gateway, reopen: Reopen
) -> None:
    ops = Ops()
    heard: list[Finished] = []
    approvals = approvals_for(gateway, ops, on_result=heard.append)
    turn = await approvals.run("c1", "deploy prod")
    assert turn.reply.run_id is not None
    chat = reopen()  # the person answers on a surface of its own (a channel, the console's chat)
    try:
        assert chat.handle("c1", "1", sender="alice").kind is ReplyKind.SELECTED
    finally:
        chat.close()
    watcher = asyncio.create_task(approvals.watch())
    try:
        await eventually(lambda: bool(heard), "the watcher resumed the run and told the hook")
    finally:
        watcher.cancel()
    assert ops.ran == ["prod"]
    assert heard == [Finished("c1", turn.reply.run_id, "deployed prod", heard[0].result)]
    assert heard[0].result is not None and heard[0].result.final_output == "deployed prod"
    run = gateway.run(turn.reply.run_id)
    assert run is not None and (run.status.value, run.outcome, run.output) == ("complete", "done", "deployed prod")
    assert run.answers == {"deploy:call-prod": "Approve"}


async def test_a_reject_is_recorded_in_the_runs_answers_and_an_async_hook_is_awaited(gateway: Gateway) -> None:
    ops = Ops()
    heard: list[Any] = []

    async def hook(finished: Finished) -> None:
        await asyncio.sleep(0)
        heard.append(finished.final_output)

    approvals = approvals_for(gateway, ops, on_result=hook, ask_reason=False)
    turn = await approvals.run("c1", "deploy prod")
    done = await approvals.handle("c1", "2")
    assert done.finished and heard == [done.final_output] == [P.AGENT_REJECTED]
    assert turn.reply.run_id is not None
    run = gateway.run(turn.reply.run_id)
    assert run is not None and run.answers == {"deploy:call-prod": "Reject"} and run.output == P.AGENT_REJECTED


async def test_a_cancelled_run_keeps_its_outcome_and_the_output_and_a_failing_hook_is_logged(
    gateway: Gateway, caplog: pytest.LogCaptureFixture
) -> None:
    ops = Ops()

    def hook(finished: Finished) -> None:
        raise RuntimeError("the results queue is down")

    approvals = approvals_for(gateway, ops, on_result=hook)
    turn = await approvals.run("c1", "deploy prod")
    done = await approvals.handle("c1", "cancel")
    assert done.finished and done.final_output == P.AGENT_CANCELLED
    assert turn.reply.run_id is not None
    run = gateway.run(turn.reply.run_id)
    assert run is not None and (run.outcome, run.output, run.answers) == ("cancelled", P.AGENT_CANCELLED, {})
    assert "the result hook failed on run" in caplog.text and "the results queue is down" in caplog.text


class Report(BaseModel):
    service: str
    deployed: bool


async def test_a_structured_final_output_is_kept_on_the_run_as_json(gateway: Gateway) -> None:
    ran: list[str] = []

    @function_tool(needs_approval=True)
    def deploy(env: str) -> str:
        """Deploy the service to ``env``."""
        ran.append(env)
        return f"deployed {env}"

    def respond(call: ModelCall) -> Any:
        if tool_outputs(call.input):
            return [assistant_message('{"service": "api", "deployed": true}')]
        return [function_call("deploy", {"env": "prod"}, call_id="call-prod")]

    model = ScriptedModel([ModelStep.respond(respond) for _ in range(4)])
    agent = Agent(name="ops", model=model, tools=[deploy], output_type=Report)
    approvals = AgentApprovals(gateway, agent, OFFLINE)
    turn = await approvals.run("c1", "deploy api")
    done = await approvals.handle("c1", "1")
    assert done.final_output == Report(service="api", deployed=True) and ran == ["prod"]
    assert turn.reply.run_id is not None
    run = gateway.run(turn.reply.run_id)
    assert run is not None and run.output == {"service": "api", "deployed": True}
