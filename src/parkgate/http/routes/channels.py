"""``/v1/channels``: the channel jobs an operator looks at (:mod:`parkgate.channels`)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query
from fastapi.responses import Response
from pydantic import Field

from parkgate.http.dependencies import GatewayDep
from parkgate.http.errors import V1_ERRORS, documented
from parkgate.http.models import SafeJSONResponse
from parkgate.http.outputs import Out
from parkgate.http.paging import DEFAULT_PAGE_ASKS, MAX_PAGE_ASKS
from parkgate.http.tokens import Scope, needs

router = APIRouter(tags=["channels"])


class ChannelJobOut(Out):
    """A channel job given up on: a post, an update on close, or a reply in the thread."""

    id: int
    ask_id: str
    channel: str = Field(description="The channel's name (its key in POST /v1/asks).")
    job: str = Field(description="post, closed or reply.")
    attempts: int
    last_error: str | None = Field(default=None, description="Why the last attempt failed, as the platform said.")


class ChannelJobsOut(Out):
    """Channel jobs given up on, the latest first."""

    jobs: list[ChannelJobOut]


@router.get("/v1/channels/failed", response_model=ChannelJobsOut, responses=documented(*V1_ERRORS))
@needs(Scope.READ)
async def list_failed_channel_jobs(
    gateway: GatewayDep, limit: Annotated[int, Query(ge=1, le=MAX_PAGE_ASKS)] = DEFAULT_PAGE_ASKS
) -> Response:
    """Channel jobs given up on (the platform refused them, or stayed away past every retry),
    the latest first, each with its last error."""
    failed = await gateway.failed_channel_jobs(limit)
    jobs = [
        {
            "id": job.id,
            "ask_id": job.ask_id,
            "channel": job.channel,
            "job": job.job,
            "attempts": job.attempts,
            "last_error": error,
        }
        for job, error in failed
    ]
    return SafeJSONResponse({"jobs": jobs})
