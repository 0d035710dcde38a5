"""How errors reach a client: the status and ``error`` code of each of parkgate's errors,
the exception handlers that answer with them, and their entries in the OpenAPI schema.

Every error is JSON ``{"error": code, "detail": message}`` (plus a field naming what a
client acts on next, where there is one) with a 4xx, or a 503 while the store is out of
reach. A parkgate error is never a 500; anything else is, logged with its traceback.
"""

from __future__ import annotations

import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import Response
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Match

from parkgate.errors import REPLACE_IN_JSON, AskAlreadyOpen, CallbackNotFailed, ParkgateError, RunStillAsking
from parkgate.http import codes
from parkgate.http.longpolls import TooManyLongPolls
from parkgate.http.outputs import ErrorOut
from parkgate.http.quota import QuotaExceeded
from parkgate.http.responses import error_response
from parkgate.store import StoreError

log = logging.getLogger("parkgate.http")

#: What the API answers each of parkgate's errors with, status and ``error`` code: the
#: library's (:data:`parkgate.http.codes.LIBRARY_ERRORS`) and the server's own. An error
#: takes the entry of the nearest class in its MRO, and ``ParkgateError``'s covers one not
#: listed, so no parkgate error is ever a 500. The tree is drawn in :mod:`parkgate.errors`.
ANSWERED_ERRORS: tuple[tuple[type[Exception], int, str], ...] = (
    *codes.LIBRARY_ERRORS,
    (QuotaExceeded, 429, codes.TOO_MANY_OPEN_ASKS),
    (TooManyLongPolls, 429, codes.TOO_MANY_LONG_POLLS),
)

#: What each error status means on this API, as the OpenAPI schema describes it.
STATUS_MEANINGS = {
    400: "Bad request",
    401: "Missing or wrong bearer token",
    403: "Another site's request, a token without the scope this route needs, or a channel target it may not post to",
    404: "Unknown id or path",
    409: "The conversation already has an open ask, or the run or callback is not in a state for this",
    413: "Body too large",
    415: "A body that is not Content-Type: application/json",
    422: "Malformed JSON, wrong types, or unusable input",
    429: "Too many requests for this token, too many open asks, or too many long-polls",
    503: "The store is out of reach; try again",
}
#: The errors any ``/v1`` route may answer with (the guard's, validation's and the store's).
V1_ERRORS = (400, 401, 403, 413, 415, 422, 429, 503)


Responses = dict[int | str, dict[str, Any]]


def documented(*statuses: int, extra: Responses | None = None) -> Responses:
    """A route's ``responses`` for the OpenAPI schema: ``extra`` (its other answers, by
    status), then these error statuses, each with the error body."""
    errors: Responses = {status: {"model": ErrorOut, "description": STATUS_MEANINGS[status]} for status in statuses}
    return {**(extra or {}), **errors}


def answered_as(error: type[ParkgateError]) -> tuple[int, str]:
    """The status and ``error`` code the API answers ``error`` with (see :data:`ANSWERED_ERRORS`)."""
    answers = {error_class: (status, code) for error_class, status, code in ANSWERED_ERRORS}
    return next(answers[cls] for cls in error.__mro__ if cls in answers)


def validation_detail(error: RequestValidationError) -> tuple[str, str]:
    """The ``error`` code and detail of a request the route's schema refuses (at most ten problems named)."""
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


def allowed_methods(request: Request) -> list[str]:
    """Every method some route serves on this path (Starlette names only the first route's)."""
    methods: set[str] = set()
    for route in request.app.router.routes:
        match, _ = route.matches({**request.scope, "method": ""})
        if match is not Match.NONE:
            methods.update(getattr(route, "methods", None) or ())
    return sorted(methods)


async def invalid_request(_: Request, error: RequestValidationError) -> Response:
    """422: the body or query is not what the route's schema takes."""
    code, detail = validation_detail(error)
    return error_response(422, code, detail)


async def http_error(request: Request, error: StarletteHTTPException) -> Response:
    """Starlette's own errors (no route, wrong method) in the one error shape."""
    if error.status_code == 404:
        return error_response(404, codes.NOT_FOUND, "no such route")
    if error.status_code == 405:
        allowed = allowed_methods(request)
        detail = f"{request.method} is not allowed here; use {', '.join(allowed)}"
        return error_response(405, "method_not_allowed", detail, {"Allow": ", ".join(allowed)})
    if error.status_code == 400:
        # No route raises a 400 (GuardMiddleware answers its own 400s before routing):
        # this is FastAPI failing to parse a body the JSON decoder gave up on in some
        # other way than a syntax error (nesting too deep for it). To the client that is
        # malformed JSON, like any other.
        return error_response(422, codes.MALFORMED_JSON, "the body could not be read as JSON (nested too deeply?)")
    return error_response(error.status_code, "http_error", str(error.detail), error.headers)


async def parkgate_error(_: Request, error: ParkgateError) -> Response:
    """A parkgate error with its status and code (:func:`answered_as`)."""
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
    if isinstance(error, TooManyLongPolls):  # and the connection's slot goes back at once
        headers.update({"Retry-After": str(error.retry_after), "Connection": "close"})
    if isinstance(error, StoreError):
        log.warning("store error answered with 503: %s", error)
        headers["Retry-After"] = "1"
    return error_response(status, code, detail, headers, **extra)


async def unexpected_error(_: Request, error: Exception) -> Response:
    """500 for what no other handler answers, its traceback in the server log."""
    log.exception("unexpected error", exc_info=error)
    return error_response(500, "internal_error", "an unexpected error; the server log has the details")


def add_error_handlers(app: FastAPI) -> None:
    """Answer every error on ``app`` in the one error shape."""
    app.add_exception_handler(RequestValidationError, invalid_request)  # type: ignore[arg-type]
    app.add_exception_handler(StarletteHTTPException, http_error)  # type: ignore[arg-type]
    app.add_exception_handler(ParkgateError, parkgate_error)  # type: ignore[arg-type]
    app.add_exception_handler(Exception, unexpected_error)
