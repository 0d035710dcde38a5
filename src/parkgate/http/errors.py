"""How errors reach a client: the exception handlers, and the errors' entries in the
OpenAPI schema.

Every error is JSON ``{"error": code, "detail": message}`` (plus a field naming what a
client acts on next, where there is one) with a 4xx, or a 503 while the store is out of
reach. A parkgate error answers with what its class states (:mod:`parkgate.errors`:
status, code, body, headers) and is never a 500; anything else is, logged with its
traceback.
"""

from __future__ import annotations

import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import Response
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Match

from parkgate.errors import ErrorResponse, InvalidRequest, NotFound, ParkgateError, ServerError, StoreError
from parkgate.http.models import SafeJSONResponse
from parkgate.http.outputs import ErrorOut
from parkgate.http.responses import error_response

log = logging.getLogger("parkgate.http")

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


def validation_detail(error: RequestValidationError) -> tuple[str, str]:
    """The ``error`` code and detail of a request the route's schema refuses (at most ten problems named)."""
    problems = error.errors()
    if any(problem.get("type") == "json_invalid" for problem in problems):
        first = next(problem for problem in problems if problem.get("type") == "json_invalid")
        reason = (first.get("ctx") or {}).get("error")
        return InvalidRequest.MALFORMED_JSON, f"the body is not valid JSON{f' ({reason})' if reason else ''}"
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
    return InvalidRequest.wire_code, "; ".join(parts) or "the request is not valid"


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
    return error_response(InvalidRequest.http_status, code, detail)


async def http_error(request: Request, error: StarletteHTTPException) -> Response:
    """Starlette's own errors (no route, wrong method) in the one error shape."""
    if error.status_code == 404:
        return error_response(NotFound.http_status, NotFound.wire_code, "no such route")
    if error.status_code == 405:
        allowed = allowed_methods(request)
        detail = f"{request.method} is not allowed here; use {', '.join(allowed)}"
        return error_response(405, ErrorResponse.METHOD_NOT_ALLOWED, detail, {"Allow": ", ".join(allowed)})
    if error.status_code == 400:
        # No route raises a 400 (GuardMiddleware answers its own 400s before routing):
        # this is FastAPI failing to parse a body the JSON decoder gave up on in some
        # other way than a syntax error (nesting too deep for it). To the client that is
        # malformed JSON, like any other.
        detail = "the body could not be read as JSON (nested too deeply?)"
        return error_response(InvalidRequest.http_status, InvalidRequest.MALFORMED_JSON, detail)
    return error_response(error.status_code, ErrorResponse.HTTP_ERROR, str(error.detail), error.headers)


async def parkgate_error(_: Request, error: ParkgateError) -> Response:
    """A parkgate error as its class states it: status, body and headers."""
    if isinstance(error, StoreError):
        log.warning("store error answered with 503: %s", error)
    status = error.answered_as()[0]
    return SafeJSONResponse(error.wire_detail(), status_code=status, headers=error.wire_headers())


async def unexpected_error(_: Request, error: Exception) -> Response:
    """500 for what no other handler answers, its traceback in the server log."""
    log.exception("unexpected error", exc_info=error)
    detail = "an unexpected error; the server log has the details"
    return error_response(ServerError.http_status, ServerError.wire_code, detail)


def add_error_handlers(app: FastAPI) -> None:
    """Answer every error on ``app`` in the one error shape."""
    app.add_exception_handler(RequestValidationError, invalid_request)  # type: ignore[arg-type]
    app.add_exception_handler(StarletteHTTPException, http_error)  # type: ignore[arg-type]
    app.add_exception_handler(ParkgateError, parkgate_error)  # type: ignore[arg-type]
    app.add_exception_handler(Exception, unexpected_error)
