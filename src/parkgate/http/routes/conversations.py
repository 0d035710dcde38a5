"""``/v1/conversations``: one inbound message, matched against the conversation's parked ask.

The route reads its gateway from the app's state rather than through a dependency: a
message is the hot path, and FastAPI resolves a dependency on every request.
"""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import Response

from parkgate.async_gateway import AsyncGateway
from parkgate.http import codes
from parkgate.http.dependencies import caller_of
from parkgate.http.errors import V1_ERRORS, documented
from parkgate.http.models import MessageIn, ReplyOut, reply_response
from parkgate.http.responses import error_response
from parkgate.http.tokens import Scope, needs

router = APIRouter(tags=["conversations"])


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
    caller = await caller_of(request)
    sender = body.sender
    if caller.sender is not None:
        if sender is not None and sender != caller.sender:
            return error_response(
                403, codes.SENDER_MISMATCH, "this token posts as one sender, and the body names another"
            )
        sender = caller.sender
    return reply_response(await gateway.handle(conversation_id, body.text, body.message_id, sender))
