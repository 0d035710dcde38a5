"""The agent SDK approvals on an HTTP client: a real ``parkgate serve`` (in a thread), the
real OpenAI Agents and Pydantic AI SDKs on their offline models, and an agent process that
reaches parkgate only through a :class:`~parkgate.client.Client` or an
:class:`~parkgate.client.AsyncClient`: the agent's state is kept on the server, so a new
process on a new client resumes the run."""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
from agents import Agent, RunConfig, function_tool
from agents.testing import ModelCall, ModelStep, ScriptedModel, assistant_message, function_call
from live_server import Server
from pydantic_ai import Agent as PydanticAgent
from pydantic_ai import DeferredToolRequests, models
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from parkgate import AskStatus, InputError, ReplyKind, RunStatus, UnknownRun
from parkgate.adapters.openai_agents import AgentApprovals
from parkgate.adapters.pydantic_ai import DeferredApprovals
from parkgate.client import AsyncClient, Client
from parkgate.client.errors import Forbidden
from parkgate.core import phrases as P

OFFLINE = RunConfig(tracing_disabled=True)


@pytest.fixture(autouse=True)
def no_model_requests() -> Iterator[None]:
    """Any Pydantic AI model but the function models here would fail the test."""
    before, models.ALLOW_MODEL_REQUESTS = models.ALLOW_MODEL_REQUESTS, False
    yield
    models.ALLOW_MODEL_REQUESTS = before


class Ops:
    """An OpenAI Agents ops agent on the SDK's ``ScriptedModel``: asked to deploy, it calls
    ``deploy`` for ``prod``, then reports the tool's output."""

    def __init__(self) -> None:
        self.ran: list[str] = []
        self.seen: list[str] = []

        @function_tool(needs_approval=True)
        def deploy(env: str) -> str:
            """Deploy the service to ``env``."""
            self.ran.append(env)
            return f"deployed {env}"

        model = ScriptedModel([ModelStep.respond(self.respond) for _ in range(6)])
        self.agent = Agent(name="ops", model=model, tools=[deploy])

    def respond(self, call: ModelCall) -> Any:
        items = call.input if isinstance(call.input, list) else []
        outputs = [str(item["output"]) for item in items if isinstance(item, dict) and "output" in item]
        if outputs:
            self.seen = outputs
            return [assistant_message(" | ".join(outputs))]
        return [function_call("deploy", {"env": "prod"}, call_id="call-prod")]


class PydanticOps:
    """A Pydantic AI ops agent on a ``FunctionModel``: it calls ``deploy`` for ``prod`` (the
    call requires approval), then reports the tool's return."""

    def __init__(self) -> None:
        self.ran: list[str] = []
        self.seen: list[str] = []
        self.agent: PydanticAgent[None, str | DeferredToolRequests] = PydanticAgent(
            FunctionModel(self.respond), output_type=[str, DeferredToolRequests], name="ops"
        )

        @self.agent.tool_plain(requires_approval=True)
        def deploy(env: str) -> str:
            """Deploy the service to ``env``."""
            self.ran.append(env)
            return f"deployed {env}"

    def respond(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        last = messages[-1]
        parts = last.parts if isinstance(last, ModelRequest) else []
        returns = [str(part.content) for part in parts if isinstance(part, ToolReturnPart)]
        if returns:
            self.seen = returns
            return ModelResponse(parts=[TextPart(" | ".join(returns))])
        return ModelResponse(parts=[ToolCallPart("deploy", {"env": "prod"}, tool_call_id="call-prod")])


@pytest.fixture(params=["Client", "AsyncClient"])
async def client(request: pytest.FixtureRequest, served: Server) -> AsyncIterator[Client | AsyncClient]:
    """Each client in turn, on the module's server."""
    if request.param == "Client":
        with Client(served.url) as sync:
            yield sync
    else:
        async with AsyncClient(served.url) as awaited:
            yield awaited


async def test_an_openai_agents_approval_over_a_client_resumes_with_the_state_kept_on_the_server(
    client: Client | AsyncClient, served: Server, conv: str
) -> None:
    ops = Ops()
    approvals = AgentApprovals(client, ops.agent, OFFLINE)
    turn = await approvals.run(conv, "deploy prod")
    assert turn.reply.kind is ReplyKind.ASKED and "Run deploy?" in turn.reply.text
    run_id = turn.reply.run_id
    assert run_id is not None and ops.ran == []
    with Client(served.url) as reader:  # what the server holds: the ask, and the state beside its run
        parked = reader.parked(conv)
        assert parked is not None and parked.context is not None
        assert parked.context["agent_approval"]["tool"] == "deploy"
        assert reader.agent_state(run_id) is not None

        done = await approvals.handle(conv, "1", sender="alice")
        assert done.reply.kind is ReplyKind.SELECTED and done.finished
        assert done.final_output == "deployed prod" and ops.ran == ["prod"]
        run = reader.run(run_id)
        assert run is not None and run.status is RunStatus.COMPLETE and run.outcome == "done"
        assert reader.agent_state(run_id) is None and reader.parked(conv) is None


async def test_a_pydantic_ai_run_parked_by_one_process_is_resumed_by_another_after_an_operators_cancel(
    served: Server, conv: str
) -> None:
    first = PydanticOps()
    with Client(served.url) as client:
        turn = await DeferredApprovals(client, first.agent).run(conv, "deploy prod")
    assert turn.reply.kind is ReplyKind.ASKED and turn.reply.ask_id is not None
    with Client(served.url) as operator:  # the console's cancel: no agent there
        assert operator.cancel(turn.reply.ask_id).status is AskStatus.CANCELLED

    second = PydanticOps()  # a new process: a new client and agent object
    async with AsyncClient(served.url) as client:
        approvals = DeferredApprovals(client, second.agent)
        assert await approvals.follow_up() == 1
        assert await approvals.follow_up() == 0  # resumed once
    assert second.seen == [P.AGENT_CANCELLED] and first.ran == second.ran == []


async def test_a_redelivered_answer_over_a_client_resumes_the_run_once(served: Server, conv: str) -> None:
    ops = Ops()
    with Client(served.url) as client:
        approvals = AgentApprovals(client, ops.agent, OFFLINE)
        await approvals.run(conv, "deploy prod")
        first = await approvals.handle(conv, "1", message_id="m-1")
        again = await approvals.handle(conv, "1", message_id="m-1")
    assert first.final_output == "deployed prod" and again.final_output is None and not again.finished
    assert again.reply.kind is ReplyKind.SELECTED and ops.ran == ["prod"]


async def test_what_needs_the_database_is_refused_naming_what_to_do(served: Server) -> None:
    ops = Ops()
    with Client(served.url) as client:
        approvals = AgentApprovals(client, ops.agent, OFFLINE)
        with pytest.raises(InputError, match=r"follow_up\(\).*docs/adapters/openai-agents.md"):
            await approvals.watch()
        with pytest.raises(InputError, match="needs a Gateway on the database"):
            approvals.watch_sync(threading.Event())
    async with AsyncClient(served.url) as awaited:
        on_async = DeferredApprovals(awaited, PydanticOps().agent)
        with pytest.raises(InputError, match="give a Client for the _sync methods"):
            on_async.follow_up_sync()
    with pytest.raises(InputError, match="a Gateway, an AsyncGateway, a Client or an AsyncClient, not str"):
        AgentApprovals("http://127.0.0.1:8080", ops.agent)  # type: ignore[arg-type]
    assert ops.ran == []


def test_an_agent_state_is_its_runs_owners_alone(guarded: Any, conv: str) -> None:
    tokens = guarded.tokens
    with (
        Client(guarded.url, tokens["everything"]) as owner,
        Client(guarded.url, tokens["agent"]) as other,
        Client(guarded.url, tokens["auditor"]) as auditor,
    ):
        asked = owner.ask(conv, "Deploy?", ["Approve", "Reject"])
        run_id = asked.run_id or ""
        owner.keep_agent_state(run_id, '{"transcript": "secret"}')
        assert owner.agent_state(run_id) == '{"transcript": "secret"}'
        with pytest.raises(UnknownRun):
            other.agent_state(run_id)
        with pytest.raises(UnknownRun):
            other.forget_agent_state(run_id)
        with pytest.raises(Forbidden):  # the read scope reads runs, not transcripts
            auditor.agent_state(run_id)
        assert owner.agent_state(run_id) == '{"transcript": "secret"}'
        owner.forget_agent_state(run_id)
        assert owner.agent_state(run_id) is None


async def test_a_follow_up_over_a_client_hands_the_output_to_the_hook_and_the_server_keeps_it(
    served: Server, conv: str
) -> None:
    ops = PydanticOps()
    heard: list[tuple[str, Any]] = []
    with Client(served.url) as client:
        approvals = DeferredApprovals(
            client, ops.agent, on_result=lambda done: heard.append((done.run_id, done.final_output))
        )
        turn = await approvals.run(conv, "deploy prod")
        run_id = turn.reply.run_id or ""
        assert client.handle(conv, "Approve", sender="alice").kind is ReplyKind.SELECTED  # a surface of its own
        assert heard == [] and ops.ran == []
        assert await approvals.follow_up() == 1
        assert heard == [(run_id, "deployed prod")] and ops.ran == ["prod"]
        run = client.run(run_id)
        assert run is not None and (run.status, run.outcome, run.output) == (
            RunStatus.COMPLETE,
            "done",
            "deployed prod",
        )
        assert run.answers == {"deploy:call-prod": "Approve"}


def test_finish_run_keeps_a_json_output_on_the_run_and_refuses_what_json_cannot_hold(served: Server, conv: str) -> None:
    with Client(served.url) as client:
        run_id = client.ask(conv, "Ship it?", ["Yes", "No"]).run_id or ""
        assert client.handle(conv, "Yes").kind is ReplyKind.SELECTED
        with pytest.raises(InputError, match="cannot be sent as JSON"):
            client.finish_run(run_id, output={"ratio": float("nan")})
        with pytest.raises(InputError, match=r"output \(as JSON\) is 300002 characters; the limit is 256000"):
            client.finish_run(run_id, output="x" * 300_000)  # the server's refusal
        unchanged = client.run(run_id)
        assert unchanged is not None and unchanged.status is RunStatus.RUNNING and unchanged.output is None
        finished = client.finish_run(run_id, output={"shipped": ["api", "web"], "minutes": 4})
        assert finished.output == {"shipped": ["api", "web"], "minutes": 4}
        again = client.run(run_id)
        assert again is not None and again.output == finished.output and again.answers == {}


async def test_a_reject_on_another_surface_asks_why_over_http_and_the_model_reads_the_typed_reason(
    served: Server, conv: str
) -> None:
    ops = Ops()
    heard: list[Any] = []
    with Client(served.url) as client, Client(served.url) as chat:  # the agent's client, and a chat surface's
        approvals = AgentApprovals(client, ops.agent, OFFLINE, on_result=lambda done: heard.append(done.final_output))
        run_id = (await approvals.run(conv, "deploy prod")).reply.run_id or ""
        assert chat.handle(conv, "Reject", sender="bob").kind is ReplyKind.SELECTED
        assert await approvals.follow_up() == 1  # parks the reason question
        why = chat.parked(conv)
        assert why is not None and why.prompt.startswith("Why not run deploy?") and why.run_id == run_id
        reply = chat.handle(conv, "wrong version, use 1.4.3", sender="bob")
        assert reply.kind is ReplyKind.ANSWERED and heard == []
        assert await approvals.follow_up() == 1
        assert heard == ["Rejected: wrong version, use 1.4.3"] == ops.seen and ops.ran == []
        run = client.run(run_id)
        assert run is not None and run.answers == {
            "deploy:call-prod": "Reject",
            "deploy:call-prod:reason": "wrong version, use 1.4.3",
        }


async def test_a_reason_field_over_an_async_client_rejects_with_it_in_one_call(served: Server, conv: str) -> None:
    ops = PydanticOps()
    async with AsyncClient(served.url) as client:
        approvals = DeferredApprovals(client, ops.agent)
        await approvals.run(conv, "deploy prod")
        turn = await approvals.handle(conv, "2", reason="wrong version, use 1.4.3")
        assert turn.finished and turn.final_output == "Rejected: wrong version, use 1.4.3" == ops.seen[0]
        assert await client.parked(conv) is None and ops.ran == []
