"""``/v1/conversations``: one inbound message, matched against the conversation's parked ask.

The route reads its gateway from the app's state rather than through a dependency: a
message is the hot path, and FastAPI resolves a dependency on every request.
"""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import Response

from parkgate.async_gateway import AsyncGateway
from parkgate.http import codes
from parkgate.http.errors import V1_ERRORS, documented
from parkgate.http.guard import CALLER_STATE
from parkgate.http.models import MessageIn, ReplyOut, reply_response
from parkgate.http.responses import error_response
from parkgate.http.tokens import Caller, Scope, needs

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
    return reply_response(await gateway.handle(conversation_id, body.text, body.message_id, sender))
