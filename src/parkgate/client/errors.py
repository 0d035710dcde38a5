"""The client's own errors: a server that does not answer, and the error responses that
have no library exception of their own.

An error response that stands for one of the library's errors (``ask_already_open``,
``unknown_ask``, ``invalid_input``, ``store_unavailable``, ...) is raised as that
exception (:class:`~parkgate.errors.AskAlreadyOpen`, ...), the same class the
:class:`~parkgate.Gateway` raises, with the server's ``detail`` as its message and the
:class:`ErrorResponse` it came from as its ``__cause__``. Every other one is raised as
the :class:`ErrorResponse` subclass for its status::

    ParkgateError
      ClientError                 anything the client raises of its own
        Unreachable               no answer: refused, timed out, cut off
        ErrorResponse             a response the client cannot use: status, code, detail
          BadRequest              400 (a Host the server does not answer to, a bad path)
          Unauthorized            401: no token, or a wrong one
          Forbidden               403: the token lacks ``scope`` (or a cross-site request)
          NotFound                404 ``not_found``: no such route (is base_url right?)
          BodyTooLarge            413
          UnsupportedMediaType    415
          InvalidRequest          422 ``invalid_request`` / ``malformed_json`` (also an InputError)
          RateLimited             429 ``rate_limited``: wait ``retry_after`` seconds
            TooManyOpenAsks       429 ``too_many_open_asks``: the token's max_open_asks
          ServerError             500 and any other 5xx but the store's 503s
          UnexpectedResponse      not parkgate's JSON, or not the shape the call reads
"""

from __future__ import annotations

from typing import Any

from parkgate.errors import InputError, ParkgateError
from parkgate.http.tokens import Scope


class ClientError(ParkgateError):
    """Base of the errors :class:`~parkgate.client.Client` raises of its own."""


class Unreachable(ClientError):
    """The server did not answer: the connection was refused, timed out or was cut.

    Its message is the transport's own; ``__cause__`` is the ``httpx`` error. Whether the
    request took effect is unknown: a message sent again with the same ``message_id``
    is answered with its first reply and changes nothing.
    """


class ErrorResponse(ClientError):
    """A response the call cannot use, as the server sent it.

    ``status`` is the HTTP status; ``code`` the body's ``error`` (``None`` when the body
    is not parkgate's error JSON); ``detail`` the body's ``detail`` (else the status's
    reason phrase); ``body`` the decoded JSON (``None`` when it is not JSON); and
    ``retry_after`` the ``Retry-After`` header in seconds, when the server sent one.
    """

    def __init__(
        self,
        status: int,
        code: str | None,
        detail: str,
        body: Any = None,
        retry_after: float | None = None,
    ) -> None:
        self.status = status
        self.code = code
        self.detail = detail
        self.body = body
        self.retry_after = retry_after
        super().__init__(f"HTTP {status} {code}: {detail}" if code else f"HTTP {status}: {detail}")


class BadRequest(ErrorResponse):
    """400: the server refused the request before routing it (its ``Host``, its path)."""


class Unauthorized(ErrorResponse):
    """401: the server runs with tokens and this client sent none, or a wrong one."""


class Forbidden(ErrorResponse):
    """403: the token lacks the :class:`~parkgate.http.tokens.Scope` in ``scope`` for this
    call (``None`` for a request refused as cross-site)."""

    def __init__(
        self,
        status: int,
        code: str | None,
        detail: str,
        body: Any = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(status, code, detail, body, retry_after)
        named = body.get("scope") if isinstance(body, dict) else None
        self.scope: Scope | None = Scope(named) if named in set(Scope) else None


class NotFound(ErrorResponse):
    """404 ``not_found``: the server has no such route; the base URL may point elsewhere.

    An unknown ask, run or workflow is :class:`~parkgate.errors.UnknownAsk`,
    :class:`~parkgate.errors.UnknownRun` or :class:`~parkgate.errors.UnknownWorkflow`.
    """


class BodyTooLarge(ErrorResponse):
    """413: the body is over the server's limit (1 MiB, 4 MiB when parking); nothing was read."""


class UnsupportedMediaType(ErrorResponse):
    """415: a write whose body is not ``Content-Type: application/json``."""


class InvalidRequest(ErrorResponse, InputError):
    """422 ``invalid_request`` or ``malformed_json``: the server's schema refused an argument
    (a wrong type, a prompt over its length, ...). An :class:`~parkgate.errors.InputError`,
    as the library's own refusal of bad input is; nothing was read or written."""


class RateLimited(ErrorResponse):
    """429: too many requests for this token; ``retry_after`` says how many seconds to wait."""


class TooManyOpenAsks(RateLimited):
    """429 ``too_many_open_asks``: the token has as many open asks as its ``max_open_asks``."""


class ServerError(ErrorResponse):
    """A 5xx other than the store's 503 (``StoreUnavailable``): the server's log has the cause."""


class UnexpectedResponse(ErrorResponse):
    """A response that is not parkgate's JSON (a proxy's page, say), or a success whose
    body is not the shape the call reads."""


__all__ = [
    "BadRequest",
    "BodyTooLarge",
    "ClientError",
    "ErrorResponse",
    "Forbidden",
    "InvalidRequest",
    "NotFound",
    "RateLimited",
    "ServerError",
    "TooManyOpenAsks",
    "Unauthorized",
    "UnexpectedResponse",
    "Unreachable",
    "UnsupportedMediaType",
]
