"""The client's own errors (defined in :mod:`parkgate.errors`, with the rest of the tree,
and re-exported here): a server that does not answer, and the error responses that
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

from parkgate.errors import (
    BadRequest,
    BodyTooLarge,
    ClientError,
    ErrorResponse,
    Forbidden,
    InvalidRequest,
    NotFound,
    RateLimited,
    ServerError,
    TooManyOpenAsks,
    Unauthorized,
    UnexpectedResponse,
    Unreachable,
    UnsupportedMediaType,
)

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
