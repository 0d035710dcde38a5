"""The event log over HTTP: ``GET /v1/asks/{ask_id}/events``, an ask's timeline.

Reads are scoped as the history is (:attr:`parkgate.http.tokens.Caller.tenant`): a named
token without the ``operate`` scope reads only the asks it parked, and another owner's
ask is a 404 ``unknown_ask``, the answer for an id no ask has.
"""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import Response

from parkgate.errors import UnknownAsk
from parkgate.http.dependencies import CallerDep, GatewayDep
from parkgate.http.errors import V1_ERRORS, documented
from parkgate.http.models import SafeJSONResponse
from parkgate.http.outputs import EventsOut
from parkgate.http.tokens import Scope, needs

router = APIRouter(tags=["events"])


@router.get("/v1/asks/{ask_id}/events", response_model=EventsOut, responses=documented(404, *V1_ERRORS))
@needs(Scope.READ, or_owner=True)
async def ask_events(ask_id: str, gateway: GatewayDep, caller: CallerDep) -> Response:
    """The ask's timeline: every event, in order (``seq`` 1 first), each
    ``{"seq", "at", "type", "ask_id", "sender", "data"}``.

    Reading it is a read of the ask: one past its TTL closes as ``expired`` first, and its
    timeline ends with that close.
    """
    ask = await gateway.get(ask_id)
    if not caller.sees(ask):
        raise UnknownAsk(ask_id)
    events = await gateway.events(ask_id)
    return SafeJSONResponse({"ask_id": ask_id, "events": [event.to_json() for event in events]})
