"""``/v1/conversations``: one inbound message, matched against the conversation's parked ask."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import Response

from parkgate.http.dependencies import GatewayDep
from parkgate.http.errors import V1_ERRORS, documented
from parkgate.http.models import MessageIn, ReplyOut
from parkgate.http.responses import reply_response
from parkgate.http.tokens import Scope, needs

router = APIRouter(tags=["conversations"])


@router.post(
    "/v1/conversations/{conversation_id:path}/messages", response_model=ReplyOut, responses=documented(*V1_ERRORS)
)
@needs(Scope.ANSWER)
async def post_message(conversation_id: str, body: MessageIn, gateway: GatewayDep) -> Response:
    """Match one inbound message against the conversation's parked ask."""
    return reply_response(await gateway.handle(conversation_id, body.text, body.message_id))
