"""The HTTP service: the gateway as a small JSON API, a web console, metrics and health.

Routes (the public contract; paths and field names are kept stable):

- ``POST /v1/asks``: park a question (``prompt`` + ``kind``/``options``, or a skill's
  ``skill_output`` holding a ``[[ask]]`` marker); 201 with the ``asked`` reply.
- ``POST /v1/conversations/{conversation_id}/messages``: one inbound message; the reply
  always carries a ``kind``.
- ``GET /v1/asks/{ask_id}`` (``?wait=S`` long-polls up to 60 s until it closes),
  ``GET /v1/asks?status=open`` (oldest first, with ``hours_open``, a page at a time:
  ``limit`` and ``cursor``, answered as ``{asks, next}``), ``POST /v1/asks/{ask_id}/cancel``.
- ``POST /v1/workflows/{name}/start``: start a registered workflow (the demo ``uml``).
- ``/healthz``, ``/metrics`` (Prometheus), ``/openapi.json``, and the console at ``/``.

The guard (:mod:`parkgate.http.guard`) runs first: a foreign ``Host``, a cross-site
request and a write that is not JSON are refused, and when tokens are configured
(:mod:`parkgate.http.settings`) every ``/v1`` route needs ``Authorization: Bearer <token>``
of a token with the route's scope (:mod:`parkgate.http.tokens`). Every error is JSON
``{"error": code, "detail": message}`` with a 4xx (or 503 while the store is out of
reach); bodies over :data:`MAX_BODY_BYTES` (:data:`MAX_ASK_BODY_BYTES` for
``POST /v1/asks``) are refused with 413 before they are read. A body that is not
UTF-8 is a 422 and a path whose ``%``-escapes are not UTF-8 a 400, both before anything
is read or written. Every GET route answers HEAD too.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import dataclasses
import functools
import importlib.util
import json
import logging
import os
from collections.abc import AsyncIterator, Mapping, MutableMapping
from datetime import datetime
from pathlib import Path
from typing import Annotated, Any, Literal

from fastapi import FastAPI, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.openapi.utils import get_openapi
from fastapi.responses import HTMLResponse, JSONResponse, Response
from fastapi.routing import APIRoute
from prometheus_client import CONTENT_TYPE_LATEST
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, model_validator
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Match
from starlette.staticfiles import StaticFiles

from parkgate.async_gateway import wait_for_close
from parkgate.checks import MAX_ID_CHARS, MAX_MESSAGE_CHARS, MAX_SKILL_OUTPUT_CHARS, MAX_WAIT_SECONDS
from parkgate.core.expect import FORMS as EXPECT_FORMS
from parkgate.core.model import Ask
from parkgate.core.phrases import (
    CHAT_STILL_PARKED,
    CONSOLE_RESTART,
    EXPIRED_NOTICE,
    OPERATOR_CANCELLED,
    STAND_IN_MODEL,
)
from parkgate.core.stopping_point import MAX_LABEL_CHARS, MAX_OPTIONS, MAX_PROMPT_CHARS
from parkgate.delivery import Deliverer
from parkgate.demo import WORKFLOWS
from parkgate.display import hidden_ranges
from parkgate.errors import (
    REPLACE_IN_JSON,
    AskAlreadyOpen,
    CallbackNotFailed,
    InputError,
    ParkgateError,
    RunStillAsking,
    UnknownRun,
)
from parkgate.fence import check_callback_url
from parkgate.gateway import Gateway, ask_to_dict
from parkgate.http import codes
from parkgate.http.guard import CALLER_STATE, CONTENT_SECURITY_POLICY, MAX_BODY_BYTES, GuardMiddleware, needs
from parkgate.http.guard import missing_scope as missing_scope_detail
from parkgate.http.logs import ensure_stderr_logging
from parkgate.http.quota import OpenAskCap, QuotaExceeded
from parkgate.http.settings import Settings, SettingsError, settings_from_env
from parkgate.http.tokens import ANONYMOUS, Caller, Scope, Tokens
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
from parkgate.store.base import CallbackState, CallbackStatus

log = logging.getLogger("parkgate.http")

#: Largest body ``POST /v1/asks`` accepts: room for a ``skill_output`` of the library's
#: :data:`~parkgate.checks.MAX_SKILL_OUTPUT_CHARS` (256,000) characters even when a
#: client escapes every one of them as a JSON surrogate pair (12 bytes a character).
MAX_ASK_BODY_BYTES = 4 * 1024 * 1024
#: Longest TTL an ask may be parked with over HTTP (ten years), in seconds.
MAX_TTL_SECONDS = 10 * 365 * 24 * 3600.0
#: ``/healthz`` answers 503 when the store has not answered a read within this many seconds.
HEALTH_TIMEOUT_SECONDS = 3.0
ENV_DB = "PARKGATE_DB"
ENV_PG_TIMEOUT = "PARKGATE_PG_TIMEOUT"
#: How long the server waits for a PostgreSQL connection, in seconds, before a request gets
#: its 503 (the library's :class:`~parkgate.store.postgres.PostgresStore` waits 10 s).
SERVER_PG_TIMEOUT_SECONDS = 3.0
#: The longest acquisition timeout the server accepts, in seconds.
MAX_PG_TIMEOUT_SECONDS = 600.0
CONSOLE_DIR = Path(__file__).parent / "console"


def _swagger_ui_dir() -> Path:
    """Swagger UI's files as the ``swagger-ui-py`` package ships them (found, not imported)."""
    spec = importlib.util.find_spec("swagger_ui")
    if spec is None or spec.origin is None:
        raise RuntimeError("the swagger-ui-py package is missing: reinstall parkgate")
    return Path(spec.origin).parent / "static"


#: ``GET /v1/asks`` answers this many asks a page unless ``limit`` says otherwise, and never more than the most.
DEFAULT_PAGE_ASKS = 100
MAX_PAGE_ASKS = 1000

ASGIScope = MutableMapping[str, Any]


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
    options: list[Label] | None = Field(default=None, description="The labels to pick from (several form).")
    min_items: Annotated[int, Field(ge=0)] | None = Field(default=None, description="Fewest picked (several form).")
    max_items: Annotated[int, Field(ge=1)] | None = Field(default=None, description="Most picked (several form).")


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
    context: dict[str, Any] | None = Field(
        default=None, description="Anything else to keep and show with the ask (a JSON object, at most 16 KiB)."
    )
    skill_output: Annotated[str, Field(max_length=MAX_SKILL_OUTPUT_CHARS)] | None = Field(
        default=None, description="Free text holding one [[ask]] ... [[/ask]] marker."
    )

    @model_validator(mode="after")
    def _one_form(self) -> AskIn:
        if self.skill_output is not None:
            fields = ("prompt", "kind", "options", "default", "expect", "context")
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


class CallbackOut(BaseModel):
    """An ask's callback: ``pending`` (the ask is open, or the callback waits for an attempt),
    ``delivered``, or ``failed`` (given up on; ``POST /v1/asks/{id}/callback/retry`` re-arms it)."""

    status: Literal["pending", "delivered", "failed"]
    attempts: int
    last_error: str | None = None
    next_attempt_at: str | None = None


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
    context: dict[str, Any] | None = Field(
        default=None, description="What else was parked with the ask (a JSON object), shown with it."
    )
    hours_open: float | None = None
    callback: CallbackOut | None = Field(
        default=None, description="Where its callback stands (an ask parked with a callback_url)."
    )


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
    """One page of open asks, oldest first, each with ``hours_open``; ``next`` is the
    ``cursor`` of the page after it (``null`` on the last page)."""

    asks: list[AskOut]
    next: str | None = None


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
        403: "Another site's request, or a token without the scope this route needs",
        404: "Unknown id or path",
        409: "The conversation already has an open ask, or the run or callback is not in a state for this",
        413: "Body too large",
        415: "A body that is not Content-Type: application/json",
        422: "Malformed JSON, wrong types, or unusable input",
        429: "Too many requests for this token, or too many open asks",
        503: "The store is out of reach; try again",
    }
    return {status: {"model": ErrorOut, "description": described[status]} for status in statuses}


def _responses(extra: dict[int | str, dict[str, Any]], *statuses: int) -> dict[int | str, dict[str, Any]]:
    return {**extra, **_errors(*statuses)}


_V1_ERRORS = (400, 401, 403, 413, 415, 422, 429, 503)
#: What the API answers each of parkgate's errors with, status and ``error`` code: the
#: library's (:data:`parkgate.http.codes.LIBRARY_ERRORS`) and the server's own. An error
#: takes the entry of the nearest class in its MRO, and ``ParkgateError``'s covers one not
#: listed, so no parkgate error is ever a 500. The tree is drawn in :mod:`parkgate.errors`.
_ANSWERED_ERRORS: tuple[tuple[type[Exception], int, str], ...] = (
    *codes.LIBRARY_ERRORS,
    (QuotaExceeded, 429, codes.TOO_MANY_OPEN_ASKS),
)


def answered_as(error: type[ParkgateError]) -> tuple[int, str]:
    """The status and ``error`` code the API answers ``error`` with (see the table above)."""
    answers = {error_class: (status, code) for error_class, status, code in _ANSWERED_ERRORS}
    return next(answers[cls] for cls in error.__mro__ if cls in answers)


# -- the app ---------------------------------------------------------------------------


def _validation_detail(error: RequestValidationError) -> tuple[str, str]:
    problems = error.errors()
    if any(problem.get("type") == "json_invalid" for problem in problems):
        first = next(problem for problem in problems if problem.get("type") == "json_invalid")
        reason = (first.get("ctx") or {}).get("error")
        return codes.MALFORMED_JSON, f"the body is not valid JSON{f' ({reason})' if reason else ''}"
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
    return codes.INVALID_REQUEST, "; ".join(parts) or "the request is not valid"


_CONSOLE_HEADERS = {
    # img-src allows the page's inline favicon (data:), so no browser asks for /favicon.ico.
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
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
        self, full_path: Any, stat_result: os.stat_result, scope: ASGIScope, status_code: int = 200
    ) -> Response:
        if Path(full_path).resolve() == (CONSOLE_DIR / "index.html").resolve():
            return HTMLResponse(_console_page(), headers=_CONSOLE_HEADERS)
        return super().file_response(full_path, stat_result, scope, status_code)


@functools.cache
def _console_page() -> str:
    """index.html with the phrases the console shows (one definition, in core.phrases) and
    the characters it shows escaped (one definition, in :mod:`parkgate.display`)."""
    phrases = json.dumps(
        {
            "stand_in": STAND_IN_MODEL,
            "expired": EXPIRED_NOTICE,
            "still_parked": CHAT_STILL_PARKED.format(restart=CONSOLE_RESTART),
            "operator_cancelled": OPERATOR_CANCELLED,
            "hidden": hidden_ranges(),
        }
    ).replace("<", "\\u003c")
    return (CONSOLE_DIR / "index.html").read_text(encoding="utf-8").replace("__PARKGATE_PHRASES__", phrases)


@functools.cache
def _docs_page() -> str:
    """The Swagger UI page: its files from the pinned package, its start-up script from the console's folder."""
    return (CONSOLE_DIR / "docs.html").read_text(encoding="utf-8")


def encode_cursor(ask: Ask) -> str:
    """The opaque ``cursor`` of the page after ``ask``: its place in the order (asked_at, id)."""
    raw = json.dumps([ask.asked_at.isoformat(), ask.id], separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(cursor: str) -> tuple[datetime, str]:
    """The place a ``cursor`` names; :class:`InputError` for one this server did not make."""
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        stamp, ask_id = json.loads(raw)
        place = (datetime.fromisoformat(stamp), ask_id)
        if not isinstance(ask_id, str) or place[0].tzinfo is None:
            raise ValueError(ask_id)
    except (ValueError, TypeError, binascii.Error):
        raise InputError("cursor is not one this server gave: pass the 'next' of the page before") from None
    return place


def caller_of(request: Request) -> Caller:
    """Who sent the request (the guard left it in the request's state)."""
    caller = getattr(request.state, CALLER_STATE, ANONYMOUS)
    return caller if isinstance(caller, Caller) else ANONYMOUS


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


def asks_json(gateway: Gateway, asks: list[Ask], now: datetime | None = None) -> list[dict[str, Any]]:
    """Asks in their public JSON shape, each with where its callback stands (if it has one)."""
    with_callback = [ask.id for ask in asks if ask.callback_url]
    states = gateway.callback_states(with_callback) if with_callback else {}
    return [
        ask_to_dict(ask, now, states.get(ask.id, UNSENT) if ask.callback_url else None) for ask in asks
    ]


#: The callback of an ask with a ``callback_url`` that has not closed yet.
UNSENT = CallbackState(CallbackStatus.PENDING)


def _reply_json(reply: Reply, status: int = 200) -> Response:
    return SafeJSONResponse(reply.to_dict(), status_code=status)


def create_app(
    gateway: Gateway | None = None,
    *,
    db_url: str | None = None,
    token: str | None = None,
    settings: Settings | None = None,
    deliver_callbacks: bool = True,
) -> FastAPI:
    """The ASGI app serving ``gateway`` (or a new one on ``db_url`` with the demo workflow).

    ``settings`` are the tokens, allowed hosts and callback allow-list the guard and the
    routes enforce (default: none of them); ``token`` is a shorthand for one token with
    every scope (a blank one is a :class:`~parkgate.http.settings.SettingsError`).
    ``deliver_callbacks`` runs a :class:`~parkgate.delivery.Deliverer` (due reads and
    callbacks, under the same callback allow-list) as a background task while the app is
    up (in its lifespan). A gateway made here is closed on shutdown; one passed in
    belongs to the caller.
    """
    settings = settings or Settings()
    if token is not None and token != "":
        if settings.tokens is not None:
            raise SettingsError("give token or settings with tokens, not both")
        try:
            settings = dataclasses.replace(settings, tokens=Tokens.single(token))
        except ValueError as error:
            raise SettingsError(str(error)) from None
    owned = gateway is None
    if gateway is None:
        gateway = Gateway(store=open_server_store(db_url), workflows=WORKFLOWS.values(), surface="http")
    gw: Gateway = gateway
    for flow in WORKFLOWS.values():
        gw.workflows.setdefault(flow.name, flow)
    deliverer = Deliverer(gw, allow=settings.callback_allow) if deliver_callbacks else None

    @contextlib.asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        task = asyncio.create_task(deliverer.run(), name="parkgate-deliver") if deliverer else None
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
        docs_url=None,  # served below, from the Swagger UI copy that ships in a package
        redoc_url=None,
        # "/v1/asks/" is not a route: a JSON 404, not a bare 307 a POST client may not follow.
        redirect_slashes=False,
    )
    app.state.gateway = gw
    app.state.owns_gateway = owned
    app.state.deliverer = deliverer
    app.state.settings = settings
    app.add_middleware(
        GuardMiddleware,
        settings=settings,
        routes=app.router.routes,
        limits={("POST", "/v1/asks"): MAX_ASK_BODY_BYTES},
    )
    cap = OpenAskCap(gw)

    # -- errors ------------------------------------------------------------------------
    @app.exception_handler(RequestValidationError)
    async def _invalid(_: Request, error: RequestValidationError) -> Response:
        code, detail = _validation_detail(error)
        return error_response(422, code, detail)

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(request: Request, error: StarletteHTTPException) -> Response:
        if error.status_code == 404:
            return error_response(404, codes.NOT_FOUND, "no such route")
        if error.status_code == 405:
            allowed = _allowed_methods(app, request)
            detail = f"{request.method} is not allowed here; use {', '.join(allowed)}"
            return error_response(405, "method_not_allowed", detail, {"Allow": ", ".join(allowed)})
        if error.status_code == 400:
            # No route raises a 400 (GuardMiddleware answers its own 400s before routing):
            # this is FastAPI failing to parse a body the JSON decoder gave up on in some
            # other way than a syntax error (nesting too deep for it). To the client that is
            # malformed JSON, like any other.
            return error_response(422, codes.MALFORMED_JSON, "the body could not be read as JSON (nested too deeply?)")
        return error_response(error.status_code, "http_error", str(error.detail), error.headers)

    @app.exception_handler(ParkgateError)
    async def _answered(_: Request, error: ParkgateError) -> Response:
        status, code = answered_as(type(error))
        detail = str(error)
        headers: dict[str, str] = {}
        extra: dict[str, Any] = {}
        if isinstance(error, AskAlreadyOpen):
            detail = error.message(REPLACE_IN_JSON)  # the JSON field, not the Python argument
        # The errors about an open ask name it, so a client can read or cancel it; a
        # refused callback retry says where the callback stands.
        if isinstance(error, (AskAlreadyOpen, RunStillAsking)):
            extra["open_ask_id"] = error.ask_id
        if isinstance(error, CallbackNotFailed):
            extra["callback_status"] = error.status
        if isinstance(error, QuotaExceeded):
            headers["Retry-After"] = str(error.retry_after)
        if isinstance(error, StoreError):
            log.warning("store error answered with 503: %s", error)
            headers["Retry-After"] = "1"
        return error_response(status, code, detail, headers, **extra)

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
    @needs(Scope.PARK)
    def park_ask(request: Request, body: AskIn) -> Response:
        """Park a question in a conversation; 409 if one is open there (unless ``replace``).

        A ``callback_url`` must parse and may not reach an internal address the server
        does not allow (422); a token at its ``max_open_asks`` gets 429.
        """
        if body.callback_url is not None:
            check_callback_url(body.callback_url, settings.callback_allow)
        caller = caller_of(request)
        with cap.room(caller):
            if body.skill_output is not None:
                reply = gw.ask_from_text(
                    body.conversation_id,
                    body.skill_output,
                    run_id=body.run_id,
                    ttl=body.ttl_seconds,
                    replace=body.replace,
                    callback_url=body.callback_url,
                    owner=caller.owner,
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
                    owner=caller.owner,
                    expect=body.expect.model_dump(exclude_none=True) if body.expect is not None else None,
                    context=body.context,
                )
        return _reply_json(reply, 201 if reply.parked else 200)

    @app.post(
        "/v1/conversations/{conversation_id:path}/messages",
        response_model=ReplyOut,
        responses=_errors(*_V1_ERRORS),
        tags=["conversations"],
    )
    @needs(Scope.ANSWER)
    def post_message(conversation_id: str, body: MessageIn) -> Response:
        """Match one inbound message against the conversation's parked ask."""
        reply = gw.handle(conversation_id, body.text, body.message_id)
        return _reply_json(reply)

    @app.get("/v1/asks", response_model=AskListOut, responses=_errors(*_V1_ERRORS), tags=["asks"])
    @needs(Scope.READ)
    def list_asks(
        status: Annotated[Literal["open"], Query(description="Only open asks are listed.")] = "open",
        limit: Annotated[int, Query(ge=1, le=MAX_PAGE_ASKS)] = DEFAULT_PAGE_ASKS,
        cursor: Annotated[str | None, Query(max_length=512, description="The 'next' of the page before.")] = None,
    ) -> Response:
        """Open asks across conversations, oldest first, with ``hours_open``: ``limit`` a page
        (default 100, at most 1,000), and ``next``, the ``cursor`` of the following page."""
        after = None if cursor is None else decode_cursor(cursor)
        asks = gw.open_asks(limit + 1, after=after)
        now = gw.clock.now()
        following = encode_cursor(asks[limit - 1]) if len(asks) > limit else None
        return SafeJSONResponse({"asks": asks_json(gw, asks[:limit], now), "next": following})

    @app.get("/v1/asks/{ask_id}", response_model=AskOut, responses=_errors(404, *_V1_ERRORS), tags=["asks"])
    @needs(Scope.READ, or_owner=True)
    async def get_ask(
        request: Request,
        ask_id: str,
        wait: Annotated[float, Query(ge=0, le=MAX_WAIT_SECONDS, allow_inf_nan=False)] = 0,
    ) -> Response:
        """One ask. ``?wait=S`` (S <= 60) holds the request until it closes or S pass.

        A token with the ``park`` scope but not ``read`` reads only the asks it parked.
        """
        caller = caller_of(request)
        if not caller.may(Scope.READ):
            mine = await asyncio.to_thread(gw.get, ask_id)
            if caller.owner is None or mine.owner != caller.owner:
                return error_response(
                    403,
                    "missing_scope",
                    missing_scope_detail(caller, Scope.READ, request.scope) + " (without it, only the asks it parked)",
                    scope=Scope.READ.value,
                )
        ask = await wait_for_close(gw, ask_id, wait, give_up=request.is_disconnected)
        return SafeJSONResponse((await asyncio.to_thread(asks_json, gw, [ask]))[0])

    @app.post("/v1/asks/{ask_id}/cancel", response_model=AskOut, responses=_errors(404, *_V1_ERRORS), tags=["asks"])
    @needs(Scope.OPERATE)
    def cancel_ask(ask_id: str) -> Response:
        """An operator's cancel: the ask closes as ``cancelled`` (a closed one is returned as it is)."""
        ask = gw.cancel(ask_id)
        return SafeJSONResponse(asks_json(gw, [ask])[0])

    @app.get("/v1/callbacks/failed", response_model=AskListOut, responses=_errors(*_V1_ERRORS), tags=["asks"])
    @needs(Scope.READ)
    def list_failed_callbacks(limit: Annotated[int, Query(ge=1, le=MAX_PAGE_ASKS)] = DEFAULT_PAGE_ASKS) -> Response:
        """Asks whose callback was given up on, the latest first, each with its last error."""
        return SafeJSONResponse({"asks": asks_json(gw, gw.failed_callbacks(limit)), "next": None})

    @app.post(
        "/v1/asks/{ask_id}/callback/retry",
        response_model=AskOut,
        responses=_errors(404, 409, *_V1_ERRORS),
        tags=["asks"],
    )
    @needs(Scope.OPERATE)
    def retry_callback(ask_id: str) -> Response:
        """Re-arm a failed callback: due now, attempts counted from 0 (409 unless it failed)."""
        gw.retry_callback(ask_id)
        return SafeJSONResponse(asks_json(gw, [gw.get(ask_id)])[0])

    @app.get("/v1/runs/{run_id}", response_model=RunOut, responses=_errors(404, *_V1_ERRORS), tags=["runs"])
    @needs(Scope.READ)
    def get_run(run_id: str) -> Response:
        """One run: its status, outcome, pending ask and (for a workflow) answers so far."""
        run = gw.run(run_id)
        if run is None:
            raise UnknownRun(run_id)
        return SafeJSONResponse(run_to_dict(run))

    @app.post(
        "/v1/runs/{run_id}/finish", response_model=RunOut, responses=_errors(404, 409, *_V1_ERRORS), tags=["runs"]
    )
    @needs(Scope.OPERATE)
    def finish_run(run_id: str, body: FinishIn | None = None) -> Response:
        """Mark a run complete once the work after its last answer is done (409 while an ask is pending)."""
        run = gw.finish_run(run_id, (body or FinishIn()).outcome)
        return SafeJSONResponse(run_to_dict(run))

    @app.post(
        "/v1/workflows/{name}/start",
        status_code=201,
        response_model=ReplyOut,
        responses=_errors(404, 409, *_V1_ERRORS),
        tags=["workflows"],
    )
    @needs(Scope.PARK)
    def start_workflow(request: Request, name: str, body: StartIn) -> Response:
        """Start a registered workflow (the demo is ``uml``): its first question is parked."""
        caller = caller_of(request)
        with cap.room(caller):
            reply = gw.start(body.conversation_id, name, replace=body.replace, run_id=body.run_id, owner=caller.owner)
        return _reply_json(reply, 201)

    @app.get("/v1/workflows", tags=["workflows"], responses=_errors(*_V1_ERRORS))
    @needs(Scope.READ)
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

    @app.get("/docs", include_in_schema=False)
    def docs() -> Response:
        """Swagger UI for ``/openapi.json``, from the copy pinned in a package (no CDN): ``/docs/assets``."""
        return HTMLResponse(_docs_page(), headers=_CONSOLE_HEADERS)

    app.mount("/console", ConsoleFiles(directory=CONSOLE_DIR), name="console")
    app.mount("/docs/assets", StaticFiles(directory=_swagger_ui_dir()), name="docs-assets")
    _answer_head(app)

    def openapi() -> dict[str, Any]:
        if app.openapi_schema:
            return app.openapi_schema
        schema = get_openapi(title=app.title, version=app.version, summary=app.summary, routes=app.routes)
        components = schema.setdefault("components", {})
        components.setdefault("securitySchemes", {})["bearer"] = {
            "type": "http",
            "scheme": "bearer",
            "description": "Needed on /v1 when the server runs with tokens (PARKGATE_TOKEN or PARKGATE_TOKENS_FILE); "
            "each route needs one scope: park, answer, read or operate.",
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

    Reads ``PARKGATE_DB``, ``PARKGATE_PG_SCHEMA`` and ``PARKGATE_PG_TIMEOUT`` (see
    :func:`store_from_env`), and the tokens, allowed hosts and callback allow-list
    (:func:`parkgate.http.settings.settings_from_env`: ``PARKGATE_TOKEN``,
    ``PARKGATE_TOKEN_FILE`` or ``PARKGATE_TOKENS_FILE``, ``PARKGATE_ALLOWED_HOSTS``,
    ``PARKGATE_CALLBACK_ALLOW``); a bad one stops the start. When nothing in the process
    has configured logging, the ``parkgate`` records (each expiry's ``ask_expired``
    line) go to stderr as JSON lines (:func:`parkgate.http.logs.ensure_stderr_logging`).
    """
    ensure_stderr_logging()
    settings = settings_from_env()
    gateway = Gateway(store=store_from_env(), workflows=WORKFLOWS.values(), surface="http")
    try:
        app = create_app(gateway, settings=settings)
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
