"""The JSON the routes, the error handlers and the guard answer with: the one error shape
(:func:`error_response`, and :class:`Refusal` for the guard, sent before the app reads
anything), and the public shapes of asks (with where their callbacks stand) and runs.
A reply's JSON is in :mod:`parkgate.http.models`; the headers every response carries are
the guard's (:mod:`parkgate.http.guard`)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from fastapi.responses import Response
from starlette.types import Send

from parkgate.core.model import Ask, CallbackState, CallbackStatus, Run
from parkgate.core.shape import to_json
from parkgate.errors import BodyTooLarge
from parkgate.gateway import ask_to_dict
from parkgate.gateway.async_gateway import AsyncGateway
from parkgate.http.models import SafeJSONResponse

#: The callback of an ask with a ``callback_url`` that has not closed yet.
UNSENT = CallbackState(CallbackStatus.PENDING)


def error_response(
    status: int, error: str, detail: str, headers: Mapping[str, str] | None = None, **extra: Any
) -> Response:
    """The one error shape: ``{"error": code, "detail": message, ...}``."""
    return SafeJSONResponse({"error": error, "detail": detail, **extra}, status_code=status, headers=headers)


@dataclass(frozen=True)
class Refusal:
    """A check's answer, in the one error shape ``{"error": code, "detail": message, ...}``:
    ``headers`` go on the response, ``extra`` into its body."""

    status: int
    error: str
    detail: str
    headers: Mapping[str, str] = field(default_factory=dict)
    extra: Mapping[str, Any] = field(default_factory=dict)

    async def send(self, send: Send) -> None:
        """Answer the request with this refusal, on the raw ASGI ``send`` (nothing was read)."""
        body = json.dumps({"error": self.error, "detail": self.detail, **self.extra}).encode()
        raw = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
        raw += [(key.lower().encode(), value.encode()) for key, value in self.headers.items()]
        await send({"type": "http.response.start", "status": self.status, "headers": raw})
        await send({"type": "http.response.body", "body": body})


def body_too_large(what: str, limit: int) -> Refusal:
    """The guard's 413 for a body over ``limit`` bytes; the connection is closed after it."""
    return Refusal(
        BodyTooLarge.http_status, BodyTooLarge.wire_code, f"{what}; the limit is {limit} bytes", {"Connection": "close"}
    )


async def asks_json(gateway: AsyncGateway, asks: list[Ask], now: datetime | None = None) -> list[dict[str, Any]]:
    """Asks in their public JSON shape, each with where its callback stands (if it has one)
    and where it is posted on a channel (``"slack": {"channel", "ts"}``); ``now`` adds each
    one's ``hours_open``."""
    with_callback = [ask.id for ask in asks if ask.callback_url]
    states = await gateway.callback_states(with_callback) if with_callback else {}
    shapes = [ask_to_dict(ask, now, states.get(ask.id, UNSENT) if ask.callback_url else None) for ask in asks]
    if gateway.sync.channels:  # where the asks are posted: only a server that serves a channel posts any
        for shape, post in zip(shapes, await gateway.channel_posts([ask.id for ask in asks]), strict=True):
            if post is not None and post.location is not None:
                shape[post.channel] = json.loads(post.location)
    return shapes


async def ask_response(gateway: AsyncGateway, ask: Ask) -> Response:
    """One ask in its public JSON shape, with where its callback stands."""
    return SafeJSONResponse((await asks_json(gateway, [ask]))[0])


def run_to_dict(run: Run) -> dict[str, Any]:
    """The public JSON shape of a run: its declared fields (:class:`~parkgate.core.model.Run`)."""
    return to_json(run)
