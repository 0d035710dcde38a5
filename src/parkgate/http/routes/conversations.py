"""``/v1/conversations``: one inbound message, matched against the conversation's parked
ask, and what is parked there (read now, or waited for).

A message is the hot path: it is answered by a plain Starlette route
(:class:`MessageRoute`), one body read and one validation, no FastAPI request handler or
dependency; the schema describes it through its ``described`` twin.
"""

from __future__ import annotations

import json
from typing import Annotated

from fastapi import APIRouter, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import Response
from fastapi.routing import APIRoute
from pydantic import ValidationError
from starlette.convertors import PathConvertor, register_url_convertor
from starlette.exceptions import HTTPException
from starlette.routing import Route
from starlette.types import Receive, Send
from starlette.types import Scope as ASGIScope

from parkgate.errors import Forbidden
from parkgate.gateway.async_gateway import AsyncGateway
from parkgate.gateway.checks import MAX_WAIT_SECONDS
from parkgate.gateway.offload import offload
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
    ``/messages``: that path is the messages route's, which allows only POST. A line break
    in it matches too, so the id's own check refuses it (422), not the router (404)."""

    regex = "(?s:.*)(?<!/messages)"


class AnyPath(PathConvertor):
    """``:path`` with line breaks in it matched too (its id's check then refuses them)."""

    regex = "(?s:.*)"


register_url_convertor("conversation", ConversationPath())
register_url_convertor("conversation_any", AnyPath())


#: The messages route's path: a conversation id may hold ``/``.
MESSAGES_PATH = "/v1/conversations/{conversation_id:conversation_any}/messages"


async def post_message(conversation_id: str, body: MessageIn) -> Response:
    """Match one inbound message against the conversation's parked ask.

    A token bound to a sender posts every message as that sender: a body naming another
    is refused (403 ``sender_mismatch``) before anything is read or written. A body with
    ``ask_id`` answers that ask of the conversation only; once it has closed the reply is
    ``late`` (how and when it closed) and the message is a ``late`` event in its timeline.
    """
    raise NotImplementedError("describes the route in the schema; MessageRoute serves it")  # pragma: no cover


def message_in(raw: bytes) -> MessageIn:
    """The body, parsed and validated once, refused as FastAPI refuses a body parameter:
    a :class:`RequestValidationError` with the problems under ``body``, or an
    :class:`~starlette.exceptions.HTTPException` 400 for JSON nested past the decoder's depth."""
    if not raw:
        raise RequestValidationError([{"type": "missing", "loc": ("body",), "msg": "Field required", "input": None}])
    try:
        data = json.loads(raw)
    except json.JSONDecodeError as error:
        problem = {"type": "json_invalid", "loc": ("body", error.pos), "msg": "JSON decode error", "input": {}}
        raise RequestValidationError([{**problem, "ctx": {"error": error.msg}}]) from None
    except RecursionError:
        raise HTTPException(400, "There was an error parsing the body") from None
    try:
        return MessageIn.model_validate(data)
    except ValidationError as error:
        problems = error.errors(include_url=False)
        raise RequestValidationError([{**p, "loc": ("body", *p["loc"])} for p in problems]) from None


@needs(Scope.ANSWER)
class MessageEndpoint:
    """The ASGI app that answers a message (a callable object: Starlette runs it as it is,
    with no request object or handler around it). Errors go to the app's handlers."""

    async def __call__(self, scope: ASGIScope, receive: Receive, send: Send) -> None:
        chunks = []
        while True:  # the guard replays the body it read as one message
            message = await receive()
            chunks.append(message.get("body", b""))
            if not message.get("more_body", False):
                break
        body = message_in(b"".join(chunks))
        caller = scope.get("state", {}).get(CALLER_STATE)  # as the guard left it
        bound = caller.sender if isinstance(caller, Caller) else None
        sender = body.sender
        if bound is not None:
            if sender is not None and sender != bound:
                refused = "this token posts as one sender, and the body names another"
                await error_response(Forbidden.http_status, Forbidden.SENDER_MISMATCH, refused)(scope, receive, send)
                return
            sender = bound
        gateway: AsyncGateway = scope["app"].state.async_gateway
        conversation_id: str = scope["path_params"]["conversation_id"]
        # As AsyncGateway.handle answers it, one hop fewer: on SQLite a message that finds
        # nothing parked is decided on this thread (its stored reply, if any, committed in
        # a batch), any other on a worker's. An answer naming its ask (``ask_id``) is
        # ``late`` once that ask closed.
        said = (conversation_id, body.text, body.message_id, sender)
        inline = gateway.sync.answer_inline(*said, ask_id=body.ask_id)
        if inline is not None and (inline.unrecorded is None or await gateway.record_inline(inline)):
            reply = inline.reply
        else:
            reply = await offload(gateway.sync.handle, *said, ask_id=body.ask_id)
        await reply_response(reply)(scope, receive, send)


class MessageRoute(Route):
    """``POST /v1/conversations/{id}/messages`` as a plain Starlette route: the hot path.

    The guard's checks run before it as before every route (host, origin, token, rate,
    scope, media type, size, UTF-8; the guard reads the body, once); the route parses the
    JSON once, validates it once against :class:`MessageIn` and awaits the gateway, with no
    FastAPI request handler or dependency chain in between. ``described`` is the route
    :mod:`parkgate.http.openapi` documents in its place (never served): the same path,
    body, reply model and errors, from :func:`post_message`'s signature.
    """

    def __init__(self) -> None:
        super().__init__(MESSAGES_PATH, endpoint=MessageEndpoint(), methods=["POST"], name="post_message")
        self.described = APIRoute(
            MESSAGES_PATH,
            post_message,
            methods=["POST"],
            name="post_message",
            tags=router.tags,
            response_model=ReplyOut,
            responses=documented(*V1_ERRORS),
        )


router.routes.append(MessageRoute())


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
