"""``/v1/workflows``: the workflows this server can start, and starting one."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import Response

from parkgate.gateway.options import RunFields
from parkgate.http.dependencies import CallerDep, GatewayDep, OpenAskCapDep
from parkgate.http.errors import V1_ERRORS, documented
from parkgate.http.models import StartIn, options_of, reply_response
from parkgate.http.outputs import ReplyOut, WorkflowsOut
from parkgate.http.tokens import Scope, needs

router = APIRouter(tags=["workflows"])


@router.post(
    "/v1/workflows/{name}/start", status_code=201, response_model=ReplyOut, responses=documented(404, 409, *V1_ERRORS)
)
@needs(Scope.PARK)
async def start_workflow(
    name: str, body: StartIn, gateway: GatewayDep, caller: CallerDep, cap: OpenAskCapDep
) -> Response:
    """Start a registered workflow (the demo is ``uml``): its first question is parked."""
    async with cap.room(caller):
        reply = await gateway.start(body.conversation_id, name, owner=caller.owner, **options_of(body, RunFields))
    return reply_response(reply, 201)


@router.get("/v1/workflows", response_model=WorkflowsOut, responses=documented(*V1_ERRORS))
@needs(Scope.READ)
async def list_workflows(gateway: GatewayDep) -> dict[str, list[str]]:
    """The workflows this server can start."""
    return {"workflows": sorted(gateway.sync.workflows)}
