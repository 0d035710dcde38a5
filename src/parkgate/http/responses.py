"""The JSON responses the routes and error handlers answer with, and the public shapes of
replies, asks and runs inside them."""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from fastapi.responses import JSONResponse, Response

from parkgate.async_gateway import AsyncGateway
from parkgate.core.model import Ask, CallbackState, CallbackStatus, Run
from parkgate.gateway import ask_to_dict
from parkgate.reply import Reply

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
