"""``/v1/follow-ups`` and ``/v1/asks/{ask_id}/follow-up``: list closed asks whose
follow-up is pending, claim one and say it is done, over HTTP.

An ask parked with ``follow_up`` is acted on by one waiter once it closes (a LangGraph
bridge resumes its thread): the waiter claims the follow-up for a lease, acts, then says
it is done, so that no two waiters, in any process, act on one close.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query
from fastapi.responses import Response
from pydantic import BaseModel, ConfigDict, Field

from parkgate.errors import UnknownAsk
from parkgate.gateway.async_gateway import AsyncGateway
from parkgate.gateway.checks import MAX_ID_CHARS
from parkgate.http.dependencies import CallerDep, GatewayDep
from parkgate.http.errors import V1_ERRORS, documented
from parkgate.http.models import MAX_TTL_SECONDS, SafeJSONResponse
from parkgate.http.outputs import AskListOut, AskOut, Out
from parkgate.http.paging import DEFAULT_PAGE_ASKS, MAX_PAGE_ASKS
from parkgate.http.responses import ask_response, asks_json
from parkgate.http.tokens import Caller, Scope, needs

router = APIRouter(tags=["asks"])
WATCHER = "Only the asks parked with follow_up naming this watcher."
AFTER = "Only the asks listed after this ask: the last of the page before."


class ClaimIn(BaseModel):
    """Take an ask's follow-up: how long the claim holds before another caller may take it."""

    model_config = ConfigDict(strict=True, extra="forbid")

    lease_seconds: Annotated[float, Field(gt=0, le=MAX_TTL_SECONDS, allow_inf_nan=False)]


class ClaimOut(Out):
    """Whether this caller took the follow-up (false for every other caller)."""

    claimed: bool


async def _reachable(gateway: AsyncGateway, caller: Caller, ask_id: str) -> None:
    """Refuse, as an unknown ask, one that another owner parked (with named tokens)."""
    ask = await gateway.get(ask_id)
    if caller.owner is not None and ask.owner != caller.owner:
        raise UnknownAsk(ask_id)


@router.get("/v1/follow-ups", response_model=AskListOut, responses=documented(404, *V1_ERRORS))
@needs(Scope.PARK)
async def list_follow_ups(
    gateway: GatewayDep,
    caller: CallerDep,
    limit: Annotated[int, Query(ge=1, le=MAX_PAGE_ASKS)] = DEFAULT_PAGE_ASKS,
    watcher: Annotated[str | None, Query(min_length=1, max_length=MAX_ID_CHARS, description=WATCHER)] = None,
    after: Annotated[str | None, Query(min_length=1, max_length=MAX_ID_CHARS, description=AFTER)] = None,
) -> Response:
    """Closed asks parked with ``follow_up`` whose follow-up is not done, earliest close
    first (a claimed one only once its claim ran out): what a waiter acts on next. With
    named tokens, only the caller's own asks; with ``watcher``, only those parked with
    ``follow_up`` naming it; with ``after``, those listed after that ask (the next page)."""
    if after is not None:
        await _reachable(gateway, caller, after)
    asks = await gateway.closed_follow_ups(limit, owner=caller.owner, watcher=watcher, after=after)
    return SafeJSONResponse({"asks": await asks_json(gateway, asks), "next": None})


@router.post("/v1/asks/{ask_id}/follow-up/claim", response_model=ClaimOut, responses=documented(404, *V1_ERRORS))
@needs(Scope.PARK)
async def claim_follow_up(ask_id: str, body: ClaimIn, gateway: GatewayDep, caller: CallerDep) -> Response:
    """Take the ask's follow-up for ``lease_seconds``: ``claimed`` is true for one caller.

    The claim holds until the follow-up is done or the lease runs out (the claimer died).
    An ask parked without ``follow_up``, or whose follow-up is done, is never claimed. The
    ask may still be open: a caller about to close it claims first. With named tokens a
    caller reaches only the asks it parked (any other is a 404 ``unknown_ask``).
    """
    await _reachable(gateway, caller, ask_id)
    claimed = await gateway.claim_follow_up(ask_id, body.lease_seconds)
    return SafeJSONResponse({"claimed": claimed})


@router.post("/v1/asks/{ask_id}/follow-up/done", response_model=AskOut, responses=documented(404, *V1_ERRORS))
@needs(Scope.PARK)
async def follow_up_done(ask_id: str, gateway: GatewayDep, caller: CallerDep) -> Response:
    """Mark the ask's follow-up done: it is never listed or claimed again. Returns the ask."""
    await _reachable(gateway, caller, ask_id)
    await gateway.follow_up_done(ask_id)
    return await ask_response(gateway, await gateway.get(ask_id))
