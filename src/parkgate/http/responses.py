"""The responses the service answers with: the JSON of the routes, the error handlers and
the guard's refusals (one error shape), the public shapes of replies, asks and runs inside
them, and the headers every response carries (:func:`with_safety_headers`)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from fastapi.responses import JSONResponse, Response
from starlette.types import Message, Send

from parkgate.async_gateway import AsyncGateway
from parkgate.core.model import Ask, CallbackState, CallbackStatus, Reply, Run
from parkgate.gateway import ask_to_dict

#: The policy of every HTML page: nothing but this origin's own files; the page's inline
#: favicon (``data:``) is the one exception.
CONTENT_SECURITY_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "object-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"
)

#: The callback of an ask with a ``callback_url`` that has not closed yet.
UNSENT = CallbackState(CallbackStatus.PENDING)


class SafeJSONResponse(JSONResponse):
    """JSON that always encodes: text a client sent with lone surrogates is escaped, not a 500."""

    def render(self, content: Any) -> bytes:
        text = json.dumps(content, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
        try:
            return text.encode("utf-8")
        except UnicodeEncodeError:
            return json.dumps(content, ensure_ascii=True, allow_nan=False, separators=(",", ":")).encode("ascii")


def error_response(
    status: int, error: str, detail: str, headers: Mapping[str, str] | None = None, **extra: Any
) -> Response:
    """The one error shape: ``{"error": code, "detail": message, ...}``."""
    return SafeJSONResponse({"error": error, "detail": detail, **extra}, status_code=status, headers=headers)


async def send_error(
    send: Send,
    status: int,
    error: str,
    detail: str,
    headers: Mapping[str, str] | None = None,
    extra: Mapping[str, Any] | None = None,
) -> None:
    """Answer on a raw ASGI ``send`` with the one error shape (the guard's refusals, sent
    before the app reads anything)."""
    body = json.dumps({"error": error, "detail": detail, **(extra or {})}).encode()
    raw = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    raw += [(key.lower().encode(), value.encode()) for key, value in (headers or {}).items()]
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": body})


def reply_response(reply: Reply, status: int = 200) -> Response:
    """A :class:`Reply` in its public JSON shape."""
    return SafeJSONResponse(reply.to_dict(), status_code=status)


async def asks_json(gateway: AsyncGateway, asks: list[Ask], now: datetime | None = None) -> list[dict[str, Any]]:
    """Asks in their public JSON shape, each with where its callback stands (if it has one);
    ``now`` adds each one's ``hours_open``."""
    with_callback = [ask.id for ask in asks if ask.callback_url]
    states = await gateway.callback_states(with_callback) if with_callback else {}
    return [ask_to_dict(ask, now, states.get(ask.id, UNSENT) if ask.callback_url else None) for ask in asks]


async def ask_response(gateway: AsyncGateway, ask: Ask) -> Response:
    """One ask in its public JSON shape, with where its callback stands."""
    return SafeJSONResponse((await asks_json(gateway, [ask]))[0])


def run_to_dict(run: Run) -> dict[str, Any]:
    """The public JSON shape of a run."""
    return {
        "run_id": run.id,
        "conversation_id": run.conversation_id,
        "workflow": run.workflow,
        "status": run.status,
        "outcome": run.outcome,
        "pending_ask_id": run.pending_ask_id,
        "answers": dict(run.context),
        "created_at": run.created_at.isoformat(),
        "updated_at": run.updated_at.isoformat(),
        "owner": run.owner,
    }


def with_safety_headers(send: Send, *, v1: bool) -> Send:
    """``send`` that adds ``nosniff`` everywhere, ``no-store`` on ``/v1`` and a CSP on HTML."""

    async def guarded_send(message: Message) -> None:
        if message["type"] == "http.response.start":
            headers = list(message.get("headers", []))
            names = {bytes(name).lower() for name, _ in headers}
            if b"x-content-type-options" not in names:
                headers.append((b"x-content-type-options", b"nosniff"))
            if v1 and b"cache-control" not in names:
                headers.append((b"cache-control", b"no-store"))
            content_type = next((bytes(v) for name, v in headers if bytes(name).lower() == b"content-type"), b"")
            if content_type.startswith(b"text/html") and b"content-security-policy" not in names:
                headers.append((b"content-security-policy", CONTENT_SECURITY_POLICY.encode()))
            message = {**message, "headers": headers}
        await send(message)

    return guarded_send


def without_body(send: Send) -> Send:
    """``send`` for a HEAD request: the response's status and headers, its body dropped."""

    async def head_send(message: Message) -> None:
        if message["type"] == "http.response.body":
            message = {**message, "body": b""}
        await send(message)

    return head_send
