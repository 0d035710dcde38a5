"""The Pydantic AI adapter through the real SDK: a ``FunctionModel`` agent whose ``deploy``
tool requires approval, on SQLite and PostgreSQL, with model requests refused."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import timedelta
from typing import TYPE_CHECKING, Any

import pytest
from pydantic_ai import Agent, DeferredToolRequests, models
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from parkgate import Gateway, ManualClock, ReplyKind
from parkgate.adapters.pydantic_ai import DeferredApprovals
from parkgate.core import phrases as P

if TYPE_CHECKING:
    from conftest import Reopen, StoreLocation


@pytest.fixture(autouse=True)
def no_model_requests() -> Iterator[None]:
    """Any model but the function models here would fail the test: no network, no key."""
    before, models.ALLOW_MODEL_REQUESTS = models.ALLOW_MODEL_REQUESTS, False
    yield
    models.ALLOW_MODEL_REQUESTS = before


class Ops:
    """A function-model ops agent: asked to deploy, it calls ``deploy`` for each named
    target (in one response), then reports every tool return it was given."""

    def __init__(self, *targets: str, arguments: dict[str, Any] | None = None) -> None:
        self.targets = targets or ("prod",)
        self.ran: list[str] = []
        self.seen: list[str] = []
        self.agent: Agent[None, str | DeferredToolRequests] = Agent(
            FunctionModel(self.respond), output_type=[str, DeferredToolRequests], name="ops"
        )

        @self.agent.tool_plain(requires_approval=True)
        def deploy(env: str, note: str = "") -> str:
            """Deploy the service to ``env``."""
            self.ran.append(env)
            return f"deployed {env}"

    def respond(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        last = messages[-1]
        returns = (
            [part for part in last.parts if isinstance(part, ToolReturnPart)] if isinstance(last, ModelRequest) else []
        )
        if returns:
            self.seen = [str(part.content) for part in returns]
            return ModelResponse(parts=[TextPart(" | ".join(self.seen))])
        return ModelResponse(
            parts=[ToolCallPart("deploy", {"env": env}, tool_call_id=f"call-{env}") for env in self.targets]
        )


def kept_states(location: StoreLocation) -> int:
    return int(location.raw_query("SELECT count(*) FROM agent_states")[0][0])


async def test_an_approval_parks_an_ask_and_1_runs_the_tool_and_returns_the_final_output(
    gateway: Gateway, store_location: StoreLocation
) -> None:
    ops = Ops()
    approvals = DeferredApprovals(gateway, ops.agent)
    turn = await approvals.run("c1", "deploy prod")
    assert turn.reply.kind is ReplyKind.ASKED and isinstance(turn.result.output, DeferredToolRequests)
    assert "Run deploy?" in turn.reply.text and 'Arguments: {"env": "prod"}' in turn.reply.text
    assert ops.ran == [] and kept_states(store_location) == 1
    done = await approvals.handle("c1", "1", sender="alice")
    assert done.reply.kind is ReplyKind.SELECTED and done.final_output == "deployed prod" and ops.ran == ["prod"]
    assert done.reply.ask_id is not None and gateway.get(done.reply.ask_id).answered_by == "alice"
    assert kept_states(store_location) == 0 and gateway.parked("c1") is None


async def test_four_misses_then_cancel_denies_and_the_model_hears_why(gateway: Gateway) -> None:
    ops = Ops()
    approvals = DeferredApprovals(gateway, ops.agent)
    await approvals.run("c1", "deploy prod")
    kinds = [(await approvals.handle("c1", word)).reply.kind for word in ("maybe", "yes please", "9", "hm")]
    assert kinds[-1] is ReplyKind.ESCALATED and ops.ran == []
    turn = await approvals.handle("c1", "cancel")
    assert turn.reply.kind is ReplyKind.CANCELLED and turn.final_output == P.AGENT_CANCELLED
    assert ops.ran == [] and ops.seen == [P.AGENT_CANCELLED]


async def test_reject_asks_why_and_denies_the_call_with_the_reason(gateway: Gateway) -> None:
    ops = Ops()
    approvals = DeferredApprovals(gateway, ops.agent)
    await approvals.run("c1", "deploy prod")
    rejected = await approvals.handle("c1", "2", sender="alice")
    assert rejected.reply.kind is ReplyKind.SELECTED and rejected.parked and not rejected.finished
    assert (
        rejected.asked is not None and "Why not run deploy?" in rejected.asked.text and "type -" in rejected.asked.text
    )
    turn = await approvals.handle("c1", "wrong version, use 1.4.3", sender="alice")
    assert turn.reply.kind is ReplyKind.ANSWERED and turn.finished
    assert turn.final_output == "Rejected: wrong version, use 1.4.3" == ops.seen[0] and ops.ran == []


async def test_a_reason_given_with_the_reject_is_the_denials_and_asks_nothing(gateway: Gateway) -> None:
    ops = Ops()
    approvals = DeferredApprovals(gateway, ops.agent)
    await approvals.run("c1", "deploy prod")
    turn = await approvals.handle("c1", "Reject", reason="  the freeze starts at noon ")
    assert turn.finished and turn.asked is None and gateway.parked("c1") is None
    assert ops.seen == ["Rejected: the freeze starts at noon"] and ops.ran == []


async def test_an_expiry_nobody_reads_resumes_the_run_with_the_rejection(
    gateway: Gateway, clock: ManualClock, store_location: StoreLocation
) -> None:
    ops = Ops()
    approvals = DeferredApprovals(gateway, ops.agent, ttl=timedelta(hours=2))
    await approvals.run("c1", "deploy prod")
    clock.advance(timedelta(hours=2, seconds=1))
    assert gateway.read_due() == 1
    assert await approvals.follow_up() == 1
    assert ops.ran == [] and ops.seen == ["No decision: the question expired after 2 h; the tool did not run"]
    assert kept_states(store_location) == 0 and await approvals.follow_up() == 0


async def test_a_new_process_on_the_same_database_resumes_a_run_parked_by_another(
    gateway: Gateway, reopen: Reopen
) -> None:
    first = Ops()
    await DeferredApprovals(gateway, first.agent).run("c1", "deploy prod")
    gateway.close()
    second = Ops()
    later = reopen()
    try:
        turn = await DeferredApprovals(later, second.agent).handle("c1", "1")
        assert turn.final_output == "deployed prod" and second.ran == ["prod"] and first.ran == []
    finally:
        later.close()


async def test_two_approvals_in_one_turn_are_asked_in_turn_and_resumed_once(gateway: Gateway) -> None:
    ops = Ops("prod", "staging")
    approvals = DeferredApprovals(gateway, ops.agent)
    turn = await approvals.run("c1", "deploy both")
    assert "Run deploy (1 of 2)?" in turn.reply.text
    why = await approvals.handle("c1", "2")
    assert why.asked is not None and "Why not run deploy?" in why.asked.text
    second = await approvals.handle("c1", P.HITL_NO_REASON)  # "-": no reason
    assert second.asked is not None and "Run deploy (2 of 2)?" in second.asked.text and second.result is None
    done = await approvals.handle("c1", "1")
    assert ops.ran == ["staging"] and done.final_output == f"{P.AGENT_REJECTED} | deployed staging"


async def test_a_non_responders_reply_changes_nothing(gateway: Gateway) -> None:
    ops = Ops()
    approvals = DeferredApprovals(gateway, ops.agent, responders=["alice"])
    await approvals.run("c1", "deploy prod")
    stranger = await approvals.handle("c1", "1", sender="mallory")
    assert stranger.reply.kind is ReplyKind.NOT_YOURS and ops.ran == [] and gateway.parked("c1") is not None
    done = await approvals.handle("c1", "1", sender="alice")
    assert done.final_output == "deployed prod"


async def test_an_approval_holds_only_for_the_arguments_shown(gateway: Gateway, store_location: StoreLocation) -> None:
    ops = Ops()
    approvals = DeferredApprovals(gateway, ops.agent)
    await approvals.run("c1", "deploy prod")
    # The kept history's call is changed behind the person's back (prod -> everything).
    (state,) = store_location.raw_query("SELECT state FROM agent_states")[0]
    changed = json.loads(state)
    changed["state"] = changed["state"].replace('{\\"env\\":\\"prod\\"}', '{\\"env\\":\\"everything\\"}')
    changed["state"] = changed["state"].replace('"args":{"env":"prod"}', '"args":{"env":"everything"}')
    assert changed["state"] != json.loads(state)["state"]
    store_location.raw_query("UPDATE agent_states SET state = ?", (json.dumps(changed),))
    turn = await approvals.handle("c1", "1")
    assert ops.ran == [] and turn.result is None
    assert turn.asked is not None and '"everything"' in turn.asked.text  # asked again, as it now is


async def test_arguments_are_shown_escaped_and_bounded(gateway: Gateway) -> None:
    ops = Ops()
    long_note = "x" * 5000
    ops.targets = ("pro\u202ed",)
    approvals = DeferredApprovals(gateway, ops.agent)

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        return ModelResponse(parts=[ToolCallPart("deploy", {"env": "pro\u202ed", "note": long_note}, tool_call_id="c")])

    with ops.agent.override(model=FunctionModel(respond)):
        turn = await approvals.run("c1", "deploy")
    assert "\u202e" not in turn.reply.text and "pro\\u202ed" in turn.reply.text
    assert long_note not in turn.reply.text and "…" in turn.reply.text
    ask = gateway.parked("c1")
    assert ask is not None and ask.context is not None
    assert len(ask.context["agent_approval"]["arguments"]) < 1600


@pytest.mark.parametrize("store_location", ["sqlite"], indirect=True)
def test_the_sync_wrappers_run_and_handle(gateway: Gateway) -> None:
    ops = Ops()
    approvals = DeferredApprovals(gateway, ops.agent)
    assert approvals.run_sync("c1", "deploy prod").reply.kind is ReplyKind.ASKED
    assert approvals.handle_sync("c1", "1").final_output == "deployed prod"
