"""``/v1/runs``: read a run, and finish it once the work after its last answer is done."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import Response

from parkgate.errors import UnknownRun
from parkgate.http.dependencies import GatewayDep
from parkgate.http.errors import V1_ERRORS, documented
from parkgate.http.models import FinishIn, SafeJSONResponse
from parkgate.http.outputs import RunOut
from parkgate.http.responses import run_to_dict
from parkgate.http.tokens import Scope, needs

router = APIRouter(tags=["runs"])


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
