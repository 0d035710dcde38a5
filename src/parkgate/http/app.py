"""The HTTP service: the gateway as a small JSON API, a web console, metrics and health.

Routes (the public contract; paths and field names are kept stable):

- ``POST /v1/asks``: park a question (``prompt`` + ``kind``/``options``, or a skill's
  ``skill_output`` holding a ``[[ask]]`` marker); 201 with the ``asked`` reply.
- ``POST /v1/conversations/{conversation_id}/messages``: one inbound message; the reply
  always carries a ``kind``.
- ``GET /v1/asks/{ask_id}`` (``?wait=S`` long-polls up to 60 s until it closes),
  ``GET /v1/asks?status=open`` (oldest first, with ``hours_open``),
  ``POST /v1/asks/{ask_id}/cancel``.
- ``POST /v1/workflows/{name}/start``: start a registered workflow (the demo ``uml``).
- ``/healthz``, ``/metrics`` (Prometheus), ``/openapi.json``, and the console at ``/``.

When a token is configured every ``/v1`` route needs ``Authorization: Bearer <token>``.
Every error is JSON ``{"error": code, "detail": message}`` with a 4xx (or 503 while the
store is out of reach); bodies over :data:`MAX_BODY_BYTES` (:data:`MAX_ASK_BODY_BYTES`
for ``POST /v1/asks``) are refused with 413 before they are read. A body that is not
UTF-8 is a 422 and a path whose ``%``-escapes are not UTF-8 a 400, both before anything
is read or written. Every GET route answers HEAD too.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import hmac
import json
import logging
import os
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, MutableMapping
from pathlib import Path
from typing import Annotated, Any, Literal
from urllib.parse import unquote_to_bytes

from fastapi import FastAPI, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.openapi.utils import get_openapi
from fastapi.responses import HTMLResponse, JSONResponse, Response
from fastapi.routing import APIRoute
from prometheus_client import CONTENT_TYPE_LATEST
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, model_validator
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Match
from starlette.staticfiles import StaticFiles

from parkgate.async_gateway import wait_for_close
from parkgate.checks import MAX_ID_CHARS, MAX_MESSAGE_CHARS, MAX_SKILL_OUTPUT_CHARS
from parkgate.core.expect import FORMS as EXPECT_FORMS
from parkgate.core.phrases import EXPIRED_NOTICE, STAND_IN_MODEL
from parkgate.core.stopping_point import MAX_LABEL_CHARS, MAX_OPTIONS, MAX_PROMPT_CHARS, StoppingPointError
from parkgate.demo import WORKFLOWS
from parkgate.errors import AskAlreadyOpen, InputError, RunStillAsking, UnknownAsk, UnknownRun, UnknownWorkflow
from parkgate.gateway import Gateway, ask_to_dict
from parkgate.http.logs import ensure_stderr_logging
from parkgate.http.outbox import OutboxDeliverer
from parkgate.reply import Reply
from parkgate.store import (
    DEFAULT_URL,
    ENV_PG_SCHEMA,
    Run,
    Store,
    StoreError,
    StoreUnavailable,
    is_postgres_url,
    open_store,
)

log = logging.getLogger("parkgate.http")

#: Largest request body accepted; larger ones get 413 before they are read.
MAX_BODY_BYTES = 1024 * 1024
#: Largest body ``POST /v1/asks`` accepts: room for a ``skill_output`` of the library's
#: :data:`~parkgate.checks.MAX_SKILL_OUTPUT_CHARS` (256,000) characters even when a
#: client escapes every one of them as a JSON surrogate pair (12 bytes a character).
MAX_ASK_BODY_BYTES = 4 * 1024 * 1024
#: Longest ``?wait=`` a long-poll may ask for, in seconds.
MAX_WAIT_SECONDS = 60.0
#: Longest TTL an ask may be parked with over HTTP (ten years), in seconds.
MAX_TTL_SECONDS = 10 * 365 * 24 * 3600.0
#: ``/healthz`` answers 503 when the store has not answered a read within this many seconds.
HEALTH_TIMEOUT_SECONDS = 3.0
ENV_DB = "PARKGATE_DB"
ENV_TOKEN = "PARKGATE_TOKEN"
ENV_PG_TIMEOUT = "PARKGATE_PG_TIMEOUT"
#: How long the server waits for a PostgreSQL connection, in seconds, before a request gets
#: its 503 (the library's :class:`~parkgate.store.postgres.PostgresStore` waits 10 s).
SERVER_PG_TIMEOUT_SECONDS = 3.0
#: The longest acquisition timeout the server accepts, in seconds.
MAX_PG_TIMEOUT_SECONDS = 600.0
CONSOLE_DIR = Path(__file__).parent / "console"

ASGIApp = Callable[
    [MutableMapping[str, Any], Callable[[], Awaitable[MutableMapping[str, Any]]], Callable[..., Awaitable[None]]],
    Awaitable[None],
]
Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]


# -- JSON -------------------------------------------------------------------------------


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


async def _send_error(send: Send, status: int, error: str, detail: str, headers: dict[str, str] | None = None) -> None:
    body = json.dumps({"error": error, "detail": detail}).encode()
    raw = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    for key, value in (headers or {}).items():
        raw.append((key.lower().encode(), value.encode()))
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": body})


# -- request and response models -------------------------------------------------------


def _text_problem(value: str) -> str | None:
    if "\x00" in value:
        return "contains a NUL character"
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return "is not valid Unicode (it holds a lone surrogate)"
    return None


class _Body(BaseModel):
    """A JSON body: strict types, no unknown fields, and only text that can be stored."""

    model_config = ConfigDict(strict=True, extra="forbid")

    @model_validator(mode="after")
    def _storable_text(self) -> _Body:
        for name in type(self).model_fields:
            value = getattr(self, name)
            values = value if isinstance(value, list) else [value]
            for position, item in enumerate(values, start=1):
                if isinstance(item, str) and (problem := _text_problem(item)):
                    where = f"{name} item {position}" if isinstance(value, list) else name
                    raise ValueError(f"{where} {problem}")
        return self


Id = Annotated[str, Field(min_length=1, max_length=MAX_ID_CHARS)]
Label = Annotated[str, Field(min_length=1, max_length=MAX_LABEL_CHARS)]
#: A yes/no field that defaults to no; ``null`` means the default, as it does for every
#: other optional field.
Flag = Annotated[bool, BeforeValidator(lambda value: False if value is None else value)]


class ExpectJSON(_Body):
    """The form a text ask's answer must take (``parkgate.core.expect``): any other answer is a miss."""

    form: Literal[EXPECT_FORMS]  # type: ignore[valid-type]
    minimum: int | Annotated[float, Field(allow_inf_nan=False)] | None = Field(
        default=None, description="Inclusive lower bound (number and integer forms)."
    )
    maximum: int | Annotated[float, Field(allow_inf_nan=False)] | None = Field(
        default=None, description="Inclusive upper bound (number and integer forms)."
    )
    min_length: Annotated[int, Field(ge=0)] | None = Field(default=None, description="Fewest characters (text forms).")
    max_length: Annotated[int, Field(ge=0)] | None = Field(default=None, description="Most characters (text forms).")


class AskIn(_Body):
    """Park a question: ``prompt`` (+ ``kind``/``options``), or ``skill_output`` with a marker.

    ``kind`` defaults to ``choice`` when ``options`` are given, else ``text``.
    """

    conversation_id: Id
    run_id: Id | None = None
    kind: Literal["choice", "text"] | None = None
    prompt: Annotated[str, Field(min_length=1, max_length=MAX_PROMPT_CHARS)] | None = None
    options: Annotated[list[Label], Field(max_length=MAX_OPTIONS)] | None = None
    ttl_seconds: Annotated[float, Field(gt=0, le=MAX_TTL_SECONDS, allow_inf_nan=False)] | None = None
    replace: Flag = False
    callback_url: Annotated[str, Field(min_length=1, max_length=2048)] | None = None
    default: str | None = Field(default=None, description="Recorded as the answer if the ask expires.")
    expect: ExpectJSON | None = Field(default=None, description="A text ask's answer form, such as an integer.")
    skill_output: Annotated[str, Field(max_length=MAX_SKILL_OUTPUT_CHARS)] | None = Field(
        default=None, description="Free text holding one [[ask]] ... [[/ask]] marker."
    )

    @model_validator(mode="after")
    def _one_form(self) -> AskIn:
        if self.skill_output is not None:
            fields = ("prompt", "kind", "options", "default", "expect")
            given = [name for name in fields if getattr(self, name) is not None]
            if given:
                raise ValueError(f"give either skill_output or prompt/kind/options, not both (also got {given})")
        elif self.prompt is None:
            raise ValueError("give a prompt (with kind and options) or a skill_output holding a stopping point")
        return self


class MessageIn(_Body):
    """One inbound message for a conversation."""

    text: Annotated[str, Field(max_length=MAX_MESSAGE_CHARS)]
    message_id: Id | None = Field(default=None, description="Redelivering the same id returns the first reply.")


class StartIn(_Body):
    """Start a workflow in a conversation."""

    conversation_id: Id
    run_id: Id | None = None
    replace: Flag = False


class FinishIn(_Body):
    """Finish a run: the outcome recorded on it."""

    outcome: Id = "done"


class ReplyOut(BaseModel):
    """What the gateway did with a message (branch on ``kind``, never on ``text``)."""

    kind: Literal["pass", "asked", "selected", "answered", "retry", "escalated", "reshown", "cancelled"]
    text: str
    parked: bool
    ask_id: str | None = None
    expired_ask_id: str | None = None
    answer: str | None = None
    option_index: int | None = None
    run_id: str | None = None
    followup: ReplyOut | None = None


class AskOut(BaseModel):
    """An ask as stored (``status`` open, answered, cancelled or expired)."""

    ask_id: str
    conversation_id: str
    run_id: str
    kind: Literal["choice", "text"]
    prompt: str
    options: list[str]
    status: Literal["open", "answered", "cancelled", "expired"]
    outcome: str | None = None
    answer: str | None = None
    option_index: int | None = None
    mismatches: int
    phase: str | None = None
    ttl_seconds: float
    expect: ExpectJSON | None = None
    asked_at: str
    last_touched: str
    answered_at: str | None = None
    hours_open: float | None = None


class RunOut(BaseModel):
    """A run: ``running`` while its caller works or an ask is pending, then ``complete``."""

    run_id: str
    conversation_id: str
    workflow: str | None = None
    status: Literal["running", "complete"]
    outcome: str | None = None
    pending_ask_id: str | None = None
    answers: dict[str, str] = Field(description="A workflow run's answers by phase; empty for a plain ask's run.")
    created_at: str
    updated_at: str


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
    }


class AskListOut(BaseModel):
    """Open asks, oldest first, each with ``hours_open``."""

    asks: list[AskOut]


class ErrorOut(BaseModel):
    """Every error: a short code and a sentence naming what is wrong."""

    error: str
    detail: str


class HealthOut(BaseModel):
    """The service answers and its store is reachable."""

    status: Literal["ok"]
    store: str
    schema_version: int


def _errors(*statuses: int) -> dict[int | str, dict[str, Any]]:
    described = {
        400: "Bad request",
        401: "Missing or wrong bearer token",
        404: "Unknown id or path",
        409: "The conversation already has an open ask",
        413: "Body too large",
        422: "Malformed JSON, wrong types, or unusable input",
        503: "The store is out of reach; try again",
    }
    return {status: {"model": ErrorOut, "description": described[status]} for status in statuses}


def _responses(extra: dict[int | str, dict[str, Any]], *statuses: int) -> dict[int | str, dict[str, Any]]:
    return {**extra, **_errors(*statuses)}


_V1_ERRORS = (400, 401, 413, 422, 503)
#: The library's errors and what the API answers for each: status and ``error`` code.
_ANSWERED_ERRORS: tuple[tuple[type[Exception], int, str], ...] = (
    (InputError, 422, "invalid_input"),
    (StoppingPointError, 422, "malformed_stopping_point"),
    (AskAlreadyOpen, 409, "ask_already_open"),
    (RunStillAsking, 409, "run_still_asking"),
    (UnknownAsk, 404, "unknown_ask"),
    (UnknownRun, 404, "unknown_run"),
    (UnknownWorkflow, 404, "unknown_workflow"),
)
#: A long poll (``GET /v1/asks/{id}?wait=S``) reads the ask again after these pauses,
#: growing from the first to the most, for closes made by other workers; a close made by
#: this worker wakes it at once.
LONG_POLL_FIRST_PAUSE = 0.05
LONG_POLL_MAX_PAUSE = 0.5


# -- middleware: auth and body size, before anything is read ---------------------------


def _path_problem(scope: Scope) -> str | None:
    """Why the request's path is not text, or ``None``.

    The server decodes ``%``-escapes leniently (``x%FE`` becomes ``x`` + U+FFFD, the path
    of another conversation), so the raw bytes are decoded again here, strictly.
    """
    raw = scope.get("raw_path")
    if raw is None:
        return None
    raw_path = bytes(raw).split(b"?", 1)[0]
    try:
        unquote_to_bytes(raw_path).decode("utf-8")
    except UnicodeDecodeError as error:
        return (
            f"the URL path is not valid UTF-8 once its %-escapes are decoded (a byte 0x{error.object[error.start]:02x} "
            "cannot start or continue a character there): percent-encode ids as UTF-8"
        )
    return None


def _body_problem(body: bytes) -> str | None:
    """Why ``body`` is not UTF-8 text (JSON is UTF-8: RFC 8259), or ``None``."""
    try:
        body.decode("utf-8")
    except UnicodeDecodeError as error:
        return (
            f"the body is not valid UTF-8 (byte 0x{body[error.start]:02x} at offset {error.start}): "
            "send the JSON encoded as UTF-8"
        )
    return None


class GuardMiddleware:
    """Before anything is read or written: the bearer token on ``/v1``, a path that is text,
    the body-size cap, and a body that is UTF-8.

    A declared ``Content-Length`` over the cap is refused at once; a body is read up to
    the cap (refused as soon as it passes it), checked, and replayed to the app. A HEAD
    request gets the GET response's status and headers, without its body.
    """

    def __init__(
        self,
        app: ASGIApp,
        token: str | None,
        max_body: int = MAX_BODY_BYTES,
        limits: Mapping[tuple[str, str], int] | None = None,
    ) -> None:
        self.app = app
        self.token = token.encode() if token else None
        self.max_body = max_body
        #: (method, path) -> a cap of its own, instead of ``max_body``.
        self.limits = dict(limits or {})

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if scope.get("method") == "HEAD":
            send = _without_body(send)
        path: str = scope.get("path", "")
        headers: dict[bytes, bytes] = {}
        for key, value in scope.get("headers", []):
            headers.setdefault(bytes(key).lower(), bytes(value))
        if self.token is not None and (path == "/v1" or path.startswith("/v1/")) and not self._authorised(headers):
            await _send_error(
                send,
                401,
                "unauthorized",
                "this route needs the header Authorization: Bearer <token>",
                {"WWW-Authenticate": "Bearer"},
            )
            return
        if problem := _path_problem(scope):
            await _send_error(send, 400, "bad_request", problem)
            return
        method = scope.get("method", "")
        limit = self.limits.get((method, path.rstrip("/") or "/"), self.max_body)
        declared = headers.get(b"content-length")
        size = None
        if declared is not None:
            try:
                size = int(declared)
            except ValueError:
                await _send_error(send, 400, "bad_request", "Content-Length is not a number")
                return
            if size > limit:
                await self._too_large(send, f"the body is {size} bytes", limit)
                return
        if size or b"transfer-encoding" in headers or (size is None and method in ("POST", "PUT", "PATCH")):
            await self._buffered(scope, receive, send, limit)
            return
        await self.app(scope, receive, send)

    def _authorised(self, headers: dict[bytes, bytes]) -> bool:
        assert self.token is not None
        scheme, _, credentials = headers.get(b"authorization", b"").partition(b" ")
        if scheme.lower() != b"bearer":
            return False
        return hmac.compare_digest(credentials.strip(), self.token)

    async def _too_large(self, send: Send, what: str, limit: int) -> None:
        await _send_error(send, 413, "body_too_large", f"{what}; the limit is {limit} bytes", {"Connection": "close"})

    async def _buffered(self, scope: Scope, receive: Receive, send: Send, limit: int) -> None:
        """Read the body up to the cap, check that it is UTF-8, then replay it to the app."""
        chunks: list[bytes] = []
        total = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            chunk = message.get("body", b"")
            total += len(chunk)
            if total > limit:
                await self._too_large(send, f"the streamed body passed {limit} bytes", limit)
                return
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        if problem := _body_problem(body):
            await _send_error(send, 422, "malformed_json", problem)
            return
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)


def _without_body(send: Send) -> Send:
    """``send`` for a HEAD request: the response's status and headers, its body dropped."""

    async def head_send(message: Message) -> None:
        if message["type"] == "http.response.body":
            message = {**message, "body": b""}
        await send(message)

    return head_send


# -- the app ---------------------------------------------------------------------------


def _validation_detail(error: RequestValidationError) -> tuple[str, str]:
    problems = error.errors()
    if any(problem.get("type") == "json_invalid" for problem in problems):
        first = next(problem for problem in problems if problem.get("type") == "json_invalid")
        reason = (first.get("ctx") or {}).get("error")
        return "malformed_json", f"the body is not valid JSON{f' ({reason})' if reason else ''}"
    parts = []
    for problem in problems[:10]:
        where = ".".join(str(step) for step in problem.get("loc", ()) if step != "body") or "body"
        message = str(problem.get("msg", "invalid")).removeprefix("Value error, ")
        if tuple(problem.get("loc", ())) == ("body",):
            kind = problem.get("type")
            if kind == "missing":
                message = "a JSON object is required"
            elif kind in ("model_attributes_type", "model_type", "dict_type"):
                message = "the body must be a JSON object"
                if isinstance(problem.get("input"), (bytes, bytearray)):
                    message += " sent as Content-Type: application/json"
        parts.append(f"{where}: {message}")
    return "invalid_request", "; ".join(parts) or "the request is not valid"


_CONSOLE_HEADERS = {
    # img-src allows the page's inline favicon (data:), so no browser asks for /favicon.ico.
    "Content-Security-Policy": "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "object-src 'none'; frame-ancestors 'none'; base-uri 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}


class ConsoleFiles(StaticFiles):
    """The console's static files; its page template is only ever served rendered.

    However a path reaches ``index.html`` (``/console/index.html``, ``/console//index.html``,
    ``/console/x/../index.html``), the answer is the page ``/`` serves, never the raw
    template with its placeholder.
    """

    def file_response(
        self, full_path: Any, stat_result: os.stat_result, scope: Scope, status_code: int = 200
    ) -> Response:
        if Path(full_path).resolve() == (CONSOLE_DIR / "index.html").resolve():
            return HTMLResponse(_console_page(), headers=_CONSOLE_HEADERS)
        return super().file_response(full_path, stat_result, scope, status_code)


@functools.cache
def _console_page() -> str:
    """index.html with the phrases the console shows (one definition, in core.phrases)."""
    phrases = json.dumps({"stand_in": STAND_IN_MODEL, "expired": EXPIRED_NOTICE}).replace("<", "\\u003c")
    return (CONSOLE_DIR / "index.html").read_text(encoding="utf-8").replace("__PARKGATE_PHRASES__", phrases)


def _allowed_methods(app: FastAPI, request: Request) -> list[str]:
    """Every method some route serves on this path (Starlette names only the first route's)."""
    methods: set[str] = set()
    for route in app.router.routes:
        match, _ = route.matches({**request.scope, "method": ""})
        if match is not Match.NONE:
            methods.update(getattr(route, "methods", None) or ())
    return sorted(methods)


def _answer_head(app: FastAPI) -> None:
    """Every GET route answers HEAD as well (Starlette's plain routes do; FastAPI's do not).

    Each gets a twin route for HEAD, left out of the OpenAPI schema: the same handler,
    so the same status and headers (the middleware drops the body).
    """
    for route in list(app.router.routes):
        if isinstance(route, APIRoute) and {"GET"} <= (methods := route.methods or set()) and "HEAD" not in methods:
            app.router.add_api_route(
                route.path,
                route.endpoint,
                methods=["HEAD"],
                name=f"{route.name}_head",
                include_in_schema=False,
                response_model=route.response_model,
                status_code=route.status_code,
                response_class=route.response_class,
                dependencies=route.dependencies,
            )


def _reply_json(reply: Reply, status: int = 200) -> Response:
    return SafeJSONResponse(reply.to_dict(), status_code=status)


def create_app(
    gateway: Gateway | None = None,
    *,
    db_url: str | None = None,
    token: str | None = None,
    deliver_callbacks: bool = True,
) -> FastAPI:
    """The ASGI app serving ``gateway`` (or a new one on ``db_url`` with the demo workflow).

    ``token`` switches bearer auth on for ``/v1``. ``deliver_callbacks`` runs the outbox
    deliverer as a background task while the app is up (in its lifespan). A gateway
    made here is closed on shutdown; one passed in belongs to the caller.
    """
    owned = gateway is None
    if gateway is None:
        gateway = Gateway(store=open_server_store(db_url), workflows=WORKFLOWS.values(), surface="http")
    gw: Gateway = gateway
    for flow in WORKFLOWS.values():
        gw.workflows.setdefault(flow.name, flow)
    token = token or None
    deliverer = OutboxDeliverer(gw.store, gw.clock) if deliver_callbacks else None

    @contextlib.asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        task = asyncio.create_task(deliverer.run(), name="parkgate-outbox") if deliverer else None
        try:
            yield
        finally:
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
            if app.state.owns_gateway:
                gw.close()

    app = FastAPI(
        title="parkgate",
        summary="Parked human-in-the-loop asks that always close.",
        version="1",
        lifespan=lifespan,
        docs_url="/docs",
        redoc_url=None,
        # A JSON body sent without a Content-Type is still read as JSON.
        strict_content_type=False,
        # "/v1/asks/" is not a route: a JSON 404, not a bare 307 a POST client may not follow.
        redirect_slashes=False,
    )
    app.state.gateway = gw
    app.state.owns_gateway = owned
    app.state.deliverer = deliverer
    app.add_middleware(GuardMiddleware, token=token, limits={("POST", "/v1/asks"): MAX_ASK_BODY_BYTES})

    def nudge() -> None:
        if deliverer is not None:
            deliverer.nudge()

    # -- errors ------------------------------------------------------------------------
    @app.exception_handler(RequestValidationError)
    async def _invalid(_: Request, error: RequestValidationError) -> Response:
        code, detail = _validation_detail(error)
        return error_response(422, code, detail)

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(request: Request, error: StarletteHTTPException) -> Response:
        if error.status_code == 404:
            return error_response(404, "not_found", "no such route")
        if error.status_code == 405:
            allowed = _allowed_methods(app, request)
            detail = f"{request.method} is not allowed here; use {', '.join(allowed)}"
            return error_response(405, "method_not_allowed", detail, {"Allow": ", ".join(allowed)})
        if error.status_code == 400:
            # No route raises a 400 (GuardMiddleware answers its own 400s before routing):
            # this is FastAPI failing to parse a body the JSON decoder gave up on in some
            # other way than a syntax error (nesting too deep for it). To the client that is
            # malformed JSON, like any other.
            return error_response(422, "malformed_json", "the body could not be read as JSON (nested too deeply?)")
        return error_response(error.status_code, "http_error", str(error.detail), error.headers)

    def answer(status: int, code: str) -> Callable[[Request, Exception], Awaitable[Response]]:
        async def handler(_: Request, error: Exception) -> Response:
            # The errors about an open ask name it, so a client can read or cancel it.
            extra: dict[str, Any] = {}
            if isinstance(error, (AskAlreadyOpen, RunStillAsking)):
                extra["open_ask_id"] = error.ask_id
            return error_response(status, code, str(error), **extra)

        return handler

    for error_class, status, code in _ANSWERED_ERRORS:
        app.add_exception_handler(error_class, answer(status, code))

    @app.exception_handler(StoreError)
    async def _store(_: Request, error: StoreError) -> Response:
        code = "store_unavailable" if isinstance(error, StoreUnavailable) else "store_error"
        log.warning("store error answered with 503: %s", error)
        return error_response(503, code, str(error), {"Retry-After": "1"})

    @app.exception_handler(Exception)
    async def _unexpected(_: Request, error: Exception) -> Response:
        log.exception("unexpected error", exc_info=error)
        return error_response(500, "internal_error", "an unexpected error; the server log has the details")

    # -- /v1 ---------------------------------------------------------------------------
    @app.post(
        "/v1/asks",
        status_code=201,
        response_model=ReplyOut,
        responses=_responses(
            {200: {"model": ReplyOut, "description": "skill_output held no marker: nothing parked (pass)"}},
            409,
            *_V1_ERRORS,
        ),
        tags=["asks"],
    )
    def park_ask(body: AskIn) -> Response:
        """Park a question in a conversation; 409 if one is open there (unless ``replace``)."""
        if body.skill_output is not None:
            reply = gw.ask_from_text(
                body.conversation_id,
                body.skill_output,
                run_id=body.run_id,
                ttl=body.ttl_seconds,
                replace=body.replace,
                callback_url=body.callback_url,
            )
        else:
            assert body.prompt is not None
            reply = gw.ask(
                body.conversation_id,
                body.prompt,
                body.options,
                kind=body.kind,
                run_id=body.run_id,
                ttl=body.ttl_seconds,
                replace=body.replace,
                default=body.default,
                callback_url=body.callback_url,
                expect=body.expect.model_dump(exclude_none=True) if body.expect is not None else None,
            )
        if body.replace:
            nudge()
        return _reply_json(reply, 201 if reply.parked else 200)

    @app.post(
        "/v1/conversations/{conversation_id:path}/messages",
        response_model=ReplyOut,
        responses=_errors(*_V1_ERRORS),
        tags=["conversations"],
    )
    def post_message(conversation_id: str, body: MessageIn) -> Response:
        """Match one inbound message against the conversation's parked ask."""
        reply = gw.handle(conversation_id, body.text, body.message_id)
        if not reply.parked or reply.expired_ask_id:
            nudge()
        return _reply_json(reply)

    @app.get("/v1/asks", response_model=AskListOut, responses=_errors(*_V1_ERRORS), tags=["asks"])
    def list_asks(
        status: Annotated[Literal["open"], Query(description="Only open asks are listed.")] = "open",
        limit: Annotated[int | None, Query(ge=1, le=10_000)] = None,
    ) -> Response:
        """Open asks across conversations, oldest first, with ``hours_open``."""
        asks = gw.open_asks(limit)
        now = gw.clock.now()
        nudge()  # any it found past their TTL were closed on this read
        return SafeJSONResponse({"asks": [ask_to_dict(ask, now) for ask in asks]})

    @app.get("/v1/asks/{ask_id}", response_model=AskOut, responses=_errors(404, *_V1_ERRORS), tags=["asks"])
    async def get_ask(
        request: Request,
        ask_id: str,
        wait: Annotated[float, Query(ge=0, le=MAX_WAIT_SECONDS, allow_inf_nan=False)] = 0,
    ) -> Response:
        """One ask. ``?wait=S`` (S <= 60) holds the request until it closes or S pass."""
        ask = await wait_for_close(
            gw,
            lambda: run_in_threadpool(gw.get, ask_id),
            wait,
            first_pause=LONG_POLL_FIRST_PAUSE,
            max_pause=LONG_POLL_MAX_PAUSE,
            give_up=request.is_disconnected,
        )
        if not ask.is_open:
            nudge()
        return SafeJSONResponse(ask_to_dict(ask))

    @app.post("/v1/asks/{ask_id}/cancel", response_model=AskOut, responses=_errors(404, *_V1_ERRORS), tags=["asks"])
    def cancel_ask(ask_id: str) -> Response:
        """An operator's cancel: the ask closes as ``cancelled`` (a closed one is returned as it is)."""
        ask = gw.cancel(ask_id)
        nudge()
        return SafeJSONResponse(ask_to_dict(ask))

    @app.get("/v1/runs/{run_id}", response_model=RunOut, responses=_errors(404, *_V1_ERRORS), tags=["runs"])
    def get_run(run_id: str) -> Response:
        """One run: its status, outcome, pending ask and (for a workflow) answers so far."""
        run = gw.run(run_id)
        if run is None:
            raise UnknownRun(run_id)
        nudge()  # a pending ask past its TTL was closed on this read
        return SafeJSONResponse(run_to_dict(run))

    @app.post(
        "/v1/runs/{run_id}/finish", response_model=RunOut, responses=_errors(404, 409, *_V1_ERRORS), tags=["runs"]
    )
    def finish_run(run_id: str, body: FinishIn | None = None) -> Response:
        """Mark a run complete once the work after its last answer is done (409 while an ask is pending)."""
        run = gw.finish_run(run_id, (body or FinishIn()).outcome)
        nudge()
        return SafeJSONResponse(run_to_dict(run))

    @app.post(
        "/v1/workflows/{name}/start",
        status_code=201,
        response_model=ReplyOut,
        responses=_errors(404, 409, *_V1_ERRORS),
        tags=["workflows"],
    )
    def start_workflow(name: str, body: StartIn) -> Response:
        """Start a registered workflow (the demo is ``uml``): its first question is parked."""
        reply = gw.start(body.conversation_id, name, replace=body.replace, run_id=body.run_id)
        if body.replace:
            nudge()
        return _reply_json(reply, 201)

    @app.get("/v1/workflows", tags=["workflows"], responses=_errors(*_V1_ERRORS))
    def list_workflows() -> dict[str, list[str]]:
        """The workflows this server can start."""
        return {"workflows": sorted(gw.workflows)}

    # -- operations --------------------------------------------------------------------
    @app.get("/healthz", response_model=HealthOut, responses=_errors(503), tags=["operations"])
    async def healthz() -> Response:
        """200 when the store answers a read in time; 503 (JSON) when it is out of reach."""

        def check() -> int:
            gw.audit(limit=1)
            return gw.store.schema_version()

        try:
            version = await asyncio.wait_for(asyncio.to_thread(check), HEALTH_TIMEOUT_SECONDS)
        except TimeoutError:
            raise StoreUnavailable(f"the store did not answer within {HEALTH_TIMEOUT_SECONDS:g} s") from None
        except StoreError:
            raise
        except Exception as error:  # any failure to read the store is an unhealthy store
            raise StoreUnavailable(f"the store check failed: {error}") from None
        engine = "postgresql" if is_postgres_url(gw.store.url) else "sqlite"
        return SafeJSONResponse({"status": "ok", "store": engine, "schema_version": version})

    @app.get(
        "/metrics",
        response_class=Response,
        responses=_responses({200: {"content": {"text/plain": {}}, "description": "Prometheus text"}}, 503),
        tags=["operations"],
    )
    def metrics() -> Response:
        """Prometheus metrics: replies by kind, asks closed by outcome, time to answer, open asks."""
        try:
            payload = gw.metrics.exposition()  # every worker's counters, with several
        except StoreError:
            raise
        except Exception as error:  # the open-asks gauge reads the store when scraped
            raise StoreUnavailable(f"the metrics could not be read from the store: {error}") from None
        return Response(payload, media_type=CONTENT_TYPE_LATEST)

    # -- the console -------------------------------------------------------------------
    @app.get("/", include_in_schema=False)
    def console() -> Response:
        """The web console: open asks, operator cancel, and the demo chat."""
        return HTMLResponse(_console_page(), headers=_CONSOLE_HEADERS)

    app.mount("/console", ConsoleFiles(directory=CONSOLE_DIR), name="console")
    _answer_head(app)

    def openapi() -> dict[str, Any]:
        if app.openapi_schema:
            return app.openapi_schema
        schema = get_openapi(title=app.title, version=app.version, summary=app.summary, routes=app.routes)
        components = schema.setdefault("components", {})
        components.setdefault("securitySchemes", {})["bearer"] = {
            "type": "http",
            "scheme": "bearer",
            "description": "Needed on /v1 when the server runs with a token (PARKGATE_TOKEN).",
        }
        for path, operations in schema.get("paths", {}).items():
            if path.startswith("/v1/"):
                for operation in operations.values():
                    operation["security"] = [{"bearer": []}]
        app.openapi_schema = schema
        return schema

    app.openapi = openapi  # type: ignore[method-assign]
    return app


def _env(name: str) -> str | None:
    value = os.environ.get(name, "").strip()
    return value or None


def parse_pg_timeout(value: str | float) -> float:
    """A PostgreSQL acquisition timeout in seconds: a number above 0 and at most 600."""
    try:
        seconds = float(value)
    except (TypeError, ValueError):
        seconds = float("nan")
    if not 0 < seconds <= MAX_PG_TIMEOUT_SECONDS:  # also refuses nan
        raise ValueError(
            f"the PostgreSQL timeout must be a number of seconds above 0 and at most "
            f"{MAX_PG_TIMEOUT_SECONDS:g}, not {value!r}"
        )
    return seconds


def open_server_store(url: str | None = None, *, schema: str | None = None, pg_timeout: float | None = None) -> Store:
    """The store the HTTP server runs on (the one place the server opens its store).

    On PostgreSQL, ``schema`` picks the schema, and a request waits at most
    ``pg_timeout`` seconds (default :data:`SERVER_PG_TIMEOUT_SECONDS`) for a connection
    before it fails with :class:`StoreUnavailable` (a 503): during an outage a request
    fails fast instead of hanging. Both are ignored on SQLite. Opening migrates.
    """
    url = url or DEFAULT_URL
    if not is_postgres_url(url):
        return open_store(url)
    timeout = SERVER_PG_TIMEOUT_SECONDS if pg_timeout is None else parse_pg_timeout(pg_timeout)
    return open_store(url, schema=schema, timeout=timeout)


def store_from_env() -> Store:
    """The store ``PARKGATE_DB`` names (default ``sqlite:///parkgate.db``).

    ``PARKGATE_PG_SCHEMA`` puts a PostgreSQL store in that schema, and
    ``PARKGATE_PG_TIMEOUT`` (seconds, default 3) bounds the wait for a connection.
    ``parkgate serve`` migrates through this before it starts its workers, and every
    worker opens its store through it, so both land in the same schema.
    """
    timeout = _env(ENV_PG_TIMEOUT)
    try:
        pg_timeout = None if timeout is None else parse_pg_timeout(timeout)
    except ValueError as error:
        raise ValueError(f"{ENV_PG_TIMEOUT}: {error}") from None
    return open_server_store(_env(ENV_DB), schema=_env(ENV_PG_SCHEMA), pg_timeout=pg_timeout)


def app_from_env() -> FastAPI:
    """The app factory for ``uvicorn --factory parkgate.http.app:app_from_env``.

    Reads ``PARKGATE_DB``, ``PARKGATE_TOKEN``, ``PARKGATE_PG_SCHEMA`` and
    ``PARKGATE_PG_TIMEOUT`` (see :func:`store_from_env`). When nothing in the process
    has configured logging, the ``parkgate`` records (each expiry's ``ask_expired``
    line) go to stderr as JSON lines (:func:`parkgate.http.logs.ensure_stderr_logging`).
    """
    ensure_stderr_logging()
    gateway = Gateway(store=store_from_env(), workflows=WORKFLOWS.values(), surface="http")
    try:
        app = create_app(gateway, token=_env(ENV_TOKEN))
    except BaseException:
        gateway.close()
        raise
    app.state.owns_gateway = True
    return app


__all__ = [
    "MAX_BODY_BYTES",
    "MAX_WAIT_SECONDS",
    "AskIn",
    "MessageIn",
    "StartIn",
    "app_from_env",
    "create_app",
    "open_server_store",
    "store_from_env",
]
