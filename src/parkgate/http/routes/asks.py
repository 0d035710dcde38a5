"""``/v1/asks``: park a question, read, list, cancel and wait on asks, and their callbacks."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from fastapi.responses import Response

from parkgate.core.fence import check_callback_url
from parkgate.core.history import MAX_SEARCH_CHARS, HistoryQuery, HistoryStatus, listing_of
from parkgate.core.model import Reply
from parkgate.errors import Forbidden, InputError, UnknownAsk
from parkgate.gateway.async_gateway import AsyncGateway, wait_for_close
from parkgate.gateway.checks import MAX_ID_CHARS, MAX_WAIT_SECONDS
from parkgate.gateway.options import ParkFields, PromptFields
from parkgate.http.channel_targets import channel_refusal, channel_target_of
from parkgate.http.dependencies import CallerDep, GatewayDep, LongPollsDep, OpenAskCapDep, SettingsDep
from parkgate.http.errors import V1_ERRORS, documented
from parkgate.http.models import (
    AskIn,
    CancelIn,
    HistoryStatusName,
    SafeJSONResponse,
    options_of,
    reply_response,
)
from parkgate.http.outputs import AskListOut, AskOut, ReplyOut
from parkgate.http.paging import DEFAULT_PAGE_ASKS, MAX_CURSOR_CHARS, MAX_PAGE_ASKS
from parkgate.http.responses import ask_response, asks_json, error_response
from parkgate.http.tokens import Scope, needs

router = APIRouter(tags=["asks"])

PageSize = Annotated[int, Query(ge=1, le=MAX_PAGE_ASKS)]


def IdQuery(description: str) -> Any:
    """An id-like query parameter: 1 to :data:`MAX_ID_CHARS` characters."""
    return Query(min_length=1, max_length=MAX_ID_CHARS, description=description)


@router.post(
    "/v1/asks",
    status_code=201,
    response_model=ReplyOut,
    responses=documented(
        409,
        *V1_ERRORS,
        extra={
            200: {
                "model": ReplyOut,
                "description": "nothing parked: skill_output held no marker (pass), or the key's ask has closed",
            }
        },
    ),
)
@needs(Scope.PARK)
async def park_ask(
    body: AskIn, gateway: GatewayDep, caller: CallerDep, cap: OpenAskCapDep, settings: SettingsDep
) -> Response:
    """Park a question in a conversation; 409 if one is open there (unless ``replace``).

    With a ``key`` this token parked before, nothing is parked: the answer is that ask's
    reply, 201 while it is open and 200 once it has closed (``parked`` false).

    With named tokens a caller reaches only its own asks and runs: another owner's open
    ask in the conversation is a 409 ``conversation_busy`` (without its id, ``replace`` or
    not), and a ``run_id`` of another owner's run, like one of a complete run, a 409
    ``run_closed``.

    A ``callback_url`` must parse and may not reach an internal address the server
    does not allow (422); a token at its ``max_open_asks`` gets 429. A named token posts
    only to the channel targets its tokens-file ``channels`` allows (else 403
    ``channel_not_allowed``, naming the token and the target).
    """
    refusal = channel_refusal(caller, channel_target_of(body))
    if refusal is not None:
        return error_response(Forbidden.http_status, Forbidden.CHANNEL_NOT_ALLOWED, refusal)
    callback_url = options_of(body, ParkFields).get("callback_url")
    if callback_url is not None:
        check_callback_url(callback_url, settings.callback_allow)
    async with cap.room(caller):
        reply = await _park(gateway, body, caller.owner)
    return reply_response(reply, 201 if reply.parked else 200)


async def _park(gateway: AsyncGateway, body: AskIn, owner: str | None) -> Reply:
    """The park ``body`` asks for: a skill's marked output, or a prompt with its options."""
    if body.skill_output is not None:
        parked = options_of(body, ParkFields)
        return await gateway.ask_from_text(body.conversation_id, body.skill_output, owner=owner, **parked)
    assert body.prompt is not None  # AskIn takes a prompt or a skill_output
    fields = options_of(body, PromptFields)
    post_to = channel_target_of(body)
    if post_to is not None and post_to.channel not in gateway.sync.channels:
        raise InputError(f"{post_to.channel} is not served here: the server's settings do not switch it on")
    return await gateway.ask(
        body.conversation_id, body.prompt, body.options, body.kind, owner=owner, post_to=post_to, **fields
    )


@router.get("/v1/asks", response_model=AskListOut, responses=documented(*V1_ERRORS))
@needs(Scope.READ)
async def list_asks(
    gateway: GatewayDep,
    caller: CallerDep,
    status: Annotated[
        HistoryStatusName,
        Query(description="open (the default), answered, cancelled, expired, closed (any closed status) or all."),
    ] = "open",
    limit: PageSize = DEFAULT_PAGE_ASKS,
    cursor: Annotated[
        str | None, Query(max_length=MAX_CURSOR_CHARS, description="The 'next' of the page before.")
    ] = None,
    conversation_id: Annotated[str | None, IdQuery("Only this conversation's asks.")] = None,
    owner: Annotated[str | None, IdQuery("Only the asks this token name parked.")] = None,
    since: Annotated[
        datetime | None,
        Query(description="Only asks at or after this moment: asked_at, or closed_at for a closed status."),
    ] = None,
    until: Annotated[datetime | None, Query(description="Only asks before this moment (the same time).")] = None,
    responder: Annotated[
        str | None, IdQuery("Only asks this sender may answer, was escalated to, answered or voted on.")
    ] = None,
    channel: Annotated[
        str | None, IdQuery("Only asks posted to this channel (its name) or channel target (name:where, as parked).")
    ] = None,
    outcome: Annotated[str | None, IdQuery("Only asks closed with this outcome (selected, expired, ...).")] = None,
    q: Annotated[
        str | None,
        Query(min_length=1, max_length=MAX_SEARCH_CHARS, description="Only asks whose prompt holds this text."),
    ] = None,
) -> Response:
    """Asks of any status, one page at a time: ``{asks, next}``, ``next`` the ``cursor`` of
    the following page (``null`` on the last); ``limit`` a page (default 100, at most 1,000).

    ``status=open`` (the default) lists open asks oldest first, each with ``hours_open``;
    ``all`` lists every ask by ``asked_at``, the newest first; a closed status
    (``answered``, ``cancelled``, ``expired``, ``closed``) by ``closed_at``, the latest
    close first. ``since`` and ``until`` bound that same time. A listing is a read: an open
    ask it finds past its TTL is closed as expired (at its due time) and listed so.

    Scoped like every read (:attr:`~parkgate.http.tokens.Caller.tenant`): a named token that parks asks and has no
    ``operate`` scope lists only the asks it parked; an ``operate`` token, a read-only
    token (an auditor's), the single token or a server without tokens lists every owner's,
    and ``owner`` keeps one's. Send the filters again with each ``cursor``.
    """
    scoped = caller.tenant
    if scoped is not None and owner not in (None, scoped):
        return SafeJSONResponse({"asks": [], "next": None})
    query = HistoryQuery(
        status=status,
        since=since,
        until=until,
        conversation_id=conversation_id,
        responder=responder,
        channel=channel,
        outcome=outcome,
        owner=scoped or owner,
        q=q,
        limit=limit,
        cursor=cursor,
    )
    page = await gateway.history(query)
    now = gateway.sync.clock.now() if listing_of(query) is HistoryStatus.OPEN else None
    return SafeJSONResponse({"asks": await asks_json(gateway, page.asks, now), "next": page.next_cursor})


@router.get("/v1/asks/{ask_id}", response_model=AskOut, responses=documented(404, *V1_ERRORS))
@needs(Scope.READ, or_owner=True)
async def get_ask(
    request: Request,
    ask_id: str,
    gateway: GatewayDep,
    caller: CallerDep,
    polls: LongPollsDep,
    wait: Annotated[float, Query(ge=0, le=MAX_WAIT_SECONDS, allow_inf_nan=False)] = 0,
) -> Response:
    """One ask. ``?wait=S`` (S <= 60) holds the request until it closes or S pass.

    A token with the ``park`` scope but not ``read`` reads only the asks it parked: any
    other id is a 404 ``unknown_ask``, the answer for an id no ask has, so such a token
    cannot tell another owner's ask from none. A wait past the server's cap on
    long-polls gets 429 ``too_many_long_polls`` (:mod:`parkgate.http.longpolls`).
    """
    if not caller.may(Scope.READ):
        mine = await gateway.get(ask_id)
        if caller.owner is None or mine.owner != caller.owner:
            raise UnknownAsk(ask_id)
    if not wait:
        return await ask_response(gateway, await gateway.get(ask_id))
    async with polls.admit() as turns:
        ask = await wait_for_close(gateway.sync, ask_id, wait, give_up=request.is_disconnected, turns=turns)
        async with turns:
            return await ask_response(gateway, ask)


@router.post("/v1/asks/{ask_id}/cancel", response_model=AskOut, responses=documented(404, *V1_ERRORS))
@needs(Scope.OPERATE)
async def cancel_ask(ask_id: str, gateway: GatewayDep, body: CancelIn | None = None) -> Response:
    """An operator's cancel: the ask closes as ``cancelled`` (a closed one is returned as it is).

    The body's ``outcome`` (``cancelled`` when there is no body) is recorded on the ask and
    its run: say ``abandoned`` when whoever waited for the answer is gone. Its ``reason``
    (words) is kept with the close in the ask's event log.
    """
    given = body if body is not None else CancelIn()
    return await ask_response(gateway, await gateway.cancel(ask_id, outcome=given.outcome, reason=given.reason))


@router.get("/v1/callbacks/failed", response_model=AskListOut, responses=documented(*V1_ERRORS))
@needs(Scope.READ)
async def list_failed_callbacks(gateway: GatewayDep, limit: PageSize = DEFAULT_PAGE_ASKS) -> Response:
    """Asks whose callback was given up on, the latest first, each with its last error."""
    failed = await gateway.failed_callbacks(limit)
    return SafeJSONResponse({"asks": await asks_json(gateway, failed), "next": None})


@router.post("/v1/asks/{ask_id}/callback/retry", response_model=AskOut, responses=documented(404, 409, *V1_ERRORS))
@needs(Scope.OPERATE)
async def retry_callback(ask_id: str, gateway: GatewayDep) -> Response:
    """Re-arm a failed callback: due now, attempts counted from 0 (409 unless it failed)."""
    await gateway.retry_callback(ask_id)
    return await ask_response(gateway, await gateway.get(ask_id))
