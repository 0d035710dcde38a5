"""``/v1/runs``: record a run that ended before it asked, read a run, finish it once
the work after its last answer is done, and keep an agent SDK's state with it."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import Response
from pydantic import BaseModel, ConfigDict

from parkgate.errors import UnknownRun
from parkgate.gateway.async_gateway import AsyncGateway
from parkgate.http.dependencies import CallerDep, GatewayDep
from parkgate.http.errors import V1_ERRORS, documented
from parkgate.http.models import FinishIn, Id, SafeJSONResponse
from parkgate.http.outputs import Out, RunOut
from parkgate.http.responses import run_to_dict
from parkgate.http.tokens import Caller, Scope, needs

router = APIRouter(tags=["runs"])


class RecordIn(BaseModel):
    """A run that ended before it asked anything: its id, conversation and outcome."""

    model_config = ConfigDict(strict=True, extra="forbid")

    run_id: Id
    conversation_id: Id
    outcome: Id


@router.post("/v1/runs", status_code=201, response_model=RunOut, responses=documented(*V1_ERRORS))
@needs(Scope.PARK)
async def record_run(body: RecordIn, gateway: GatewayDep, caller: CallerDep) -> Response:
    """Record a run that ended before it asked anything, as complete with ``outcome`` (a
    caller that names its own runs, such as the LangGraph bridge on a thread whose first
    question could not be asked). Owned by the caller's token; 422 if the run exists."""
    run = await gateway.record_run(body.run_id, body.conversation_id, body.outcome, owner=caller.owner)
    return SafeJSONResponse(run_to_dict(run), status_code=201)


@router.get("/v1/runs/{run_id}", response_model=RunOut, responses=documented(404, *V1_ERRORS))
@needs(Scope.READ)
async def get_run(run_id: str, gateway: GatewayDep) -> Response:
    """One run: its status, outcome, pending ask and (for a workflow) answers so far."""
    run = await gateway.run(run_id)
    if run is None:
        raise UnknownRun(run_id)
    return SafeJSONResponse(run_to_dict(run))


@router.post("/v1/runs/{run_id}/finish", response_model=RunOut, responses=documented(404, 409, *V1_ERRORS))
@needs(Scope.OPERATE)
async def finish_run(run_id: str, gateway: GatewayDep, body: FinishIn | None = None) -> Response:
    """Mark a run complete once the work after its last answer is done (409 while an ask
    is pending), with what it gave (``output``, any JSON value) when given."""
    body = body or FinishIn()
    run = await gateway.finish_run(run_id, body.outcome, output=body.output)
    return SafeJSONResponse(run_to_dict(run))


class AgentStateIn(BaseModel):
    """An agent SDK's serialised state, kept with the run (what resumes the agent)."""

    model_config = ConfigDict(strict=True, extra="forbid")

    state: str


class AgentStateOut(Out):
    """The agent state kept with a run: ``null`` when none is."""

    run_id: str
    state: str | None


class AgentStateKept(Out):
    """Whether an agent state is kept with the run now."""

    run_id: str
    kept: bool


async def _own_run(gateway: AsyncGateway, caller: Caller, run_id: str) -> None:
    """Refuse, as an unknown run, one that another owner started (with named tokens). A
    run not made yet is no one's: its state is kept before its first ask makes it."""
    run = await gateway.run(run_id)
    if run is not None and caller.owner is not None and run.owner != caller.owner:
        raise UnknownRun(run_id)


@router.put("/v1/runs/{run_id}/agent-state", response_model=AgentStateKept, responses=documented(404, *V1_ERRORS))
@needs(Scope.PARK)
async def keep_agent_state(run_id: str, body: AgentStateIn, gateway: GatewayDep, caller: CallerDep) -> Response:
    """Keep an agent SDK's state with the run, replacing what was kept: what the OpenAI
    Agents and Pydantic AI adapters resume their agent from, so that any process resumes
    it. The run need not exist yet; with named tokens, one another token started is a 404."""
    await _own_run(gateway, caller, run_id)
    await gateway.keep_agent_state(run_id, body.state)
    return SafeJSONResponse({"run_id": run_id, "kept": True})


@router.get("/v1/runs/{run_id}/agent-state", response_model=AgentStateOut, responses=documented(404, *V1_ERRORS))
@needs(Scope.PARK)
async def get_agent_state(run_id: str, gateway: GatewayDep, caller: CallerDep) -> Response:
    """The agent state kept with the run (``null`` when none is). It holds the agent's
    transcript: the ``park`` scope reads it, and with named tokens only the run's owner."""
    await _own_run(gateway, caller, run_id)
    return SafeJSONResponse({"run_id": run_id, "state": await gateway.agent_state(run_id)})


@router.delete("/v1/runs/{run_id}/agent-state", response_model=AgentStateKept, responses=documented(404, *V1_ERRORS))
@needs(Scope.PARK)
async def forget_agent_state(run_id: str, gateway: GatewayDep, caller: CallerDep) -> Response:
    """Remove the agent state kept with the run, if any (an adapter does before it resumes
    the agent, so that no other process resumes it again)."""
    await _own_run(gateway, caller, run_id)
    await gateway.forget_agent_state(run_id)
    return SafeJSONResponse({"run_id": run_id, "kept": False})
