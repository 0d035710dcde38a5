"""``/v1/runs``: record a run that ended before it asked, read a run, and finish it once
the work after its last answer is done."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import Response
from pydantic import BaseModel, ConfigDict

from parkgate.errors import UnknownRun
from parkgate.http.dependencies import CallerDep, GatewayDep
from parkgate.http.errors import V1_ERRORS, documented
from parkgate.http.models import FinishIn, Id, SafeJSONResponse
from parkgate.http.outputs import RunOut
from parkgate.http.responses import run_to_dict
from parkgate.http.tokens import Scope, needs

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
    """Mark a run complete once the work after its last answer is done (409 while an ask is pending)."""
    run = await gateway.finish_run(run_id, (body or FinishIn()).outcome)
    return SafeJSONResponse(run_to_dict(run))
