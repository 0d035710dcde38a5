"""The cap on a request head's size, enforced on the head the server parsed.

h11 refuses a head that grows past its ``max_incomplete_event_size`` while it is still
incomplete, but a complete head that arrives in one read is parsed whatever its size.
:class:`HeadLimitMiddleware` measures every request's head as the app receives it (its
request line and headers) and answers one over :data:`MAX_HEAD_BYTES` with 431
``request_head_too_large`` and ``Connection: close`` before any route runs, however the
bytes arrived: one write, many, or pipelined behind another request.
"""

from __future__ import annotations

from starlette.types import ASGIApp, Receive, Scope, Send

from parkgate.http import codes
from parkgate.http.responses import error_response

#: The largest request head (request line and headers) served; larger ones get 431.
MAX_HEAD_BYTES = 64 * 1024
#: A request line's fixed parts: the spaces, `` HTTP/1.1`` and its CRLF.
_REQUEST_LINE_EXTRA = len(b"  HTTP/1.1\r\n")
#: Each header line's fixed parts: ``: `` and its CRLF.
_HEADER_LINE_EXTRA = len(b": \r\n")


def head_bytes(scope: Scope) -> int:
    """The size of the request head ``scope`` was parsed from, as it is written on the wire
    without optional whitespace: request line, header lines and the blank line."""
    raw_path = scope.get("raw_path") or scope.get("path", "").encode("utf-8", "surrogateescape")
    query = scope.get("query_string", b"")
    size = len(scope.get("method", "")) + len(raw_path) + _REQUEST_LINE_EXTRA + 2
    if query:
        size += 1 + len(query)
    for name, value in scope.get("headers", ()):
        size += len(name) + len(value) + _HEADER_LINE_EXTRA
    return size


class HeadLimitMiddleware:
    """Answers 431 to an HTTP request whose head is over ``limit`` bytes (module docstring)."""

    def __init__(self, app: ASGIApp, limit: int = MAX_HEAD_BYTES) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and head_bytes(scope) > self.limit:
            detail = f"the request line and headers are over {self.limit} bytes"
            response = error_response(431, codes.REQUEST_HEAD_TOO_LARGE, detail, {"Connection": "close"})
            await response(scope, receive, send)
            return
        await self.app(scope, receive, send)
