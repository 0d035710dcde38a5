"""``/v1/conversations``: one inbound message, matched against the conversation's parked ask.

The route reads its gateway from the app's state rather than through a dependency: a
message is the hot path, and FastAPI resolves a dependency on every request.
"""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import Response

from parkgate.async_gateway import AsyncGateway
from parkgate.http.errors import V1_ERRORS, documented
from parkgate.http.models import MessageIn, ReplyOut, reply_response
from parkgate.http.tokens import Scope, needs

router = APIRouter(tags=["conversations"])


@router.post(
    "/v1/conversations/{conversation_id:path}/messages", response_model=ReplyOut, responses=documented(*V1_ERRORS)
)
@needs(Scope.ANSWER)
async def post_message(conversation_id: str, body: MessageIn, request: Request) -> Response:
    """Match one inbound message against the conversation's parked ask."""
    gateway: AsyncGateway = request.app.state.async_gateway
    return reply_response(await gateway.handle(conversation_id, body.text, body.message_id))
