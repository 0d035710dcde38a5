"""A channel that lives only in the tests: "pager", a made-up platform (its stand-in is
:mod:`pager_platform`). Nothing under ``src/`` names it: a server serves it once this
module is named in ``PARKGATE_CHANNELS`` (importing it registers it) and its switch,
``PARKGATE_PAGER_URL``, is set.

What a channel's package holds, in one module: its declaration (:data:`SPEC`), the
models of its target and of where a post lives, its outbound side (:class:`PagerChannel`,
the platform's HTTP API), its inbound route (a reply typed to a posted message, signed
with a shared secret), and ``serve``/``sending``.
"""

from __future__ import annotations

import hmac
from collections.abc import Mapping
from typing import Any

import anyio
import httpx
from pydantic import BaseModel, Field
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from parkgate.channels import ChannelReply, Posted
from parkgate.channels.lines import closed_line
from parkgate.channels.registry import ChannelSpec, register
from parkgate.channels.serving import ServedChannel
from parkgate.core.machine import render_question
from parkgate.core.model import Ask
from parkgate.errors import SettingsError
from parkgate.gateway import Gateway

NAME = "pager"
ENV_URL = "PARKGATE_PAGER_URL"
ENV_SECRET = "PARKGATE_PAGER_SECRET"
INBOUND_PATH = "/pager/inbound"
SECRET_HEADER = "X-Pager-Secret"


class PagerTarget(BaseModel):
    """Where an ask is paged: a room."""

    room: str = Field(min_length=1, max_length=40, description="The room to page.")


class PagerPost(BaseModel):
    """Where a paged ask's message is: its room and message id."""

    room: str
    message: str


def thread_key(room: str, message: str) -> str:
    """The thread of a posted ask: a reply to its message."""
    return f"{room}/{message}"


class PagerChannel:
    """Posts an ask as a message, edits it on close, and replies to it, through the platform's API."""

    name = NAME

    def __init__(self, url: str) -> None:
        self.http = httpx.Client(base_url=url, timeout=10)

    def post(self, ask: Ask, target: Mapping[str, Any]) -> Posted:
        answer = self.http.post("/messages", json={"room": target["room"], "text": render_question(ask)})
        answer.raise_for_status()
        message = str(answer.json()["message"])
        return Posted({"room": target["room"], "message": message}, thread_key(target["room"], message))

    def closed(self, ask: Ask, location: Mapping[str, Any]) -> None:
        text = closed_line(ask, mention=lambda sender: f"@{sender}")
        self.http.post(f"/messages/{location['message']}/edit", json={"text": text}).raise_for_status()

    def reply(self, ask: Ask, location: Mapping[str, Any], reply: ChannelReply) -> None:
        body = {"kind": reply.kind.value, "text": reply.text, "to": reply.to}
        self.http.post(f"/messages/{location['message']}/replies", json=body).raise_for_status()


class PagerInbound:
    """``POST /pager/inbound``: a reply typed to a posted message, ``{room, message, event, sender, text}``."""

    def __init__(self, gateway: Gateway, secret: str) -> None:
        self.gateway = gateway
        self.secret = secret.encode()

    async def receive(self, request: Request) -> Response:
        if not hmac.compare_digest(request.headers.get(SECRET_HEADER, "").encode(), self.secret):
            return JSONResponse({"error": "unauthorized", "detail": "not signed by the pager"}, status_code=401)
        event = await request.json()
        return JSONResponse(await anyio.to_thread.run_sync(self._handle, event))

    def _handle(self, event: dict[str, Any]) -> dict[str, Any]:
        found = self.gateway.ask_in_thread(NAME, thread_key(event["room"], event["message"]))
        if found is None:
            return {"kind": None}
        _, conversation_id = found
        reply = self.gateway.handle_in_channel(conversation_id, event["text"], event["event"], event["sender"])
        return {"kind": reply.kind.value}


def sending(environ: Mapping[str, str]) -> PagerChannel:
    url = environ.get(ENV_URL, "").strip()
    if not url:
        raise SettingsError(f"the pager needs {ENV_URL}")
    return PagerChannel(url)


def serve(gateway: Gateway, environ: Mapping[str, str]) -> ServedChannel:
    secret = environ.get(ENV_SECRET, "").strip()
    if not secret:
        raise SettingsError(f"the pager's inbound route needs {ENV_SECRET}")
    route = Route(INBOUND_PATH, PagerInbound(gateway, secret).receive, methods=["POST"])
    return ServedChannel(sending(environ), [route], frozenset({INBOUND_PATH}))


SPEC = register(
    ChannelSpec(
        name=NAME,
        title="Pager",
        settings={ENV_URL: "the pager's API (set, the server serves the pager)", ENV_SECRET: "what it signs with"},
        switch=ENV_URL,
        target=f"{__name__}:PagerTarget",
        target_id="room",
        location=f"{__name__}:PagerPost",
        serve=f"{__name__}:serve",
        sending=f"{__name__}:sending",
        package=__name__,
    )
)
