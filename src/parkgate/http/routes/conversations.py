"""``/v1/conversations``: one inbound message, matched against the conversation's parked
ask, and what is parked there (read now, or waited for).

The route reads its gateway from the app's state rather than through a dependency: a
message is the hot path, and FastAPI resolves a dependency on every request.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Request
from fastapi.responses import Response
from starlette.convertors import PathConvertor, register_url_convertor

from parkgate.gateway.async_gateway import AsyncGateway
from parkgate.gateway.checks import MAX_WAIT_SECONDS
from parkgate.gateway.offload import offload
from parkgate.http import codes
from parkgate.http.dependencies import GatewayDep, LongPollsDep
from parkgate.http.errors import V1_ERRORS, documented
from parkgate.http.guard import CALLER_STATE
from parkgate.http.models import MessageIn, SafeJSONResponse, reply_response
from parkgate.http.outputs import ConversationOut, ReplyOut
from parkgate.http.parked import parked_now, wait_for_parked
from parkgate.http.responses import asks_json, error_response
from parkgate.http.tokens import Caller, Scope, needs

router = APIRouter(tags=["conversations"])


class ConversationPath(PathConvertor):
    """A conversation id that may hold ``/`` (as ``:path`` does), but not one ending in
    ``/messages``: that path is the messages route's, which allows only POST."""

    regex = ".*(?<!/messages)"


register_url_convertor("conversation", ConversationPath())


@router.post(
    "/v1/conversations/{conversation_id:path}/messages", response_model=ReplyOut, responses=documented(*V1_ERRORS)
)
@needs(Scope.ANSWER)
async def post_message(conversation_id: str, body: MessageIn, request: Request) -> Response:
    """Match one inbound message against the conversation's parked ask.

    A token bound to a sender posts every message as that sender: a body naming another
    is refused (403 ``sender_mismatch``) before anything is read or written.
    """
    gateway: AsyncGateway = request.app.state.async_gateway
    # The caller as the guard left it (read here, not through a dependency: the hot path).
    caller = getattr(request.state, CALLER_STATE, None)
    bound = caller.sender if isinstance(caller, Caller) else None
    sender = body.sender
    if bound is not None:
        if sender is not None and sender != bound:
            return error_response(
                403, codes.SENDER_MISMATCH, "this token posts as one sender, and the body names another"
            )
        sender = bound
    # The sync gateway's call on a worker thread, as AsyncGateway.handle makes it, one hop fewer.
    return reply_response(await offload(gateway.sync.handle, conversation_id, body.text, body.message_id, sender))


@router.get(
    "/v1/conversations/{conversation_id:conversation}", response_model=ConversationOut, responses=documented(*V1_ERRORS)
)
@needs(Scope.READ)
async def get_conversation(
    request: Request,
    conversation_id: str,
    gateway: GatewayDep,
    polls: LongPollsDep,
    wait: Annotated[float, Query(ge=0, le=MAX_WAIT_SECONDS, allow_inf_nan=False)] = 0,
) -> Response:
    """The conversation's open ask (``ask``; ``null`` when nothing is parked there).

    ``?wait=S`` (S <= 60) holds the request while nothing is parked, until an ask is or S
    pass: a surface learns of a question as it is parked. The read is the conversation's
    own (on its index), never a scan of the open asks; an ask found past its TTL is closed
    by it and not shown. A wait counts as a long-poll (429 ``too_many_long_polls`` past
    the server's cap).
    """
    if not wait:
        ask = await parked_now(gateway, conversation_id)
    else:
        async with polls.admit() as turns:
            ask = await wait_for_parked(gateway, conversation_id, wait, give_up=request.is_disconnected, turns=turns)
    shown = None if ask is None else (await asks_json(gateway, [ask]))[0]
    return SafeJSONResponse({"conversation_id": conversation_id, "ask": shown})
