"""The guard in front of every route: a table of small checks, run in order before
anything is read or written (:attr:`GuardMiddleware.table`). Each reads the request's
head (:class:`Incoming`) and returns a :class:`~parkgate.http.responses.Refusal` or
``None``; the first refusal is the response.

1. :func:`check_head`: a head (request line and headers) over :data:`MAX_HEAD_BYTES` is
   a 431 with ``Connection: close``, however its bytes arrived.
2. ``check_host``: ``Host`` is one this server answers to (``localhost``, a loopback
   address, the address the connection arrived at, or one ``PARKGATE_ALLOWED_HOSTS``
   names), else 400 ``host_not_allowed``: a DNS-rebound page is not served.
3. :func:`check_cross_site`: a request that says it comes from another site (``Origin``
   not this server's own, ``null``, or ``Sec-Fetch-Site`` other than ``same-origin``/
   ``none``) is a 403 ``cross_site``: on every ``/v1`` route, and for every method but
   GET and HEAD elsewhere (a link from another site may still open the console).
4. :func:`check_path`: a path whose ``%``-escapes are not UTF-8 is a 400.
5. ``check_token`` (``/v1``): the bearer token names a caller, else 401, whose detail
   tells a missing token from a wrong one. The caller is left in the request's state.
6. ``check_rate`` (``/v1``): the caller's rate, else 429 ``rate_limited`` with ``Retry-After``.
7. ``check_scope`` (``/v1``): the caller holds the scope the route needs
   (:func:`~parkgate.http.tokens.needs`), else 403 ``missing_scope``, naming it.
8. :func:`check_length`: a ``Content-Length`` that is not a number is a 400.
9. :func:`check_media_type`: a write with a body sends JSON (415), but to a signed channel route.
10. ``check_size``: a declared body over its cap is a 413, before it is read.

Then the body is read: past its cap a 413, not UTF-8 a 422. Every response gets the
safety headers, and a HEAD request's loses its body (:func:`framed`). The guard reads its
settings once, when it is built.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from functools import partial, update_wrapper
from typing import Any, Protocol
from urllib.parse import unquote_to_bytes, urlsplit

from starlette.routing import Match
from starlette.types import ASGIApp, Message, Receive, Send
from starlette.types import Scope as ASGIScope

from parkgate.errors import (
    BadRequest,
    ErrorResponse,
    Forbidden,
    InvalidRequest,
    RateLimited,
    Unauthorized,
    UnsupportedMediaType,
)
from parkgate.http.ratelimit import RateLimiter
from parkgate.http.responses import Refusal, body_too_large
from parkgate.http.tokens import ANONYMOUS, NEED_ATTRIBUTE, Caller, Need, Scope, Tokens

#: Largest request body accepted; larger ones get 413 before they are read.
MAX_BODY_BYTES = 1024 * 1024
#: The largest request head (request line and headers) served; larger ones get 431.
MAX_HEAD_BYTES = 64 * 1024
#: The fixed bytes of a request line (``  HTTP/1.1``, CRLF, the blank line's CRLF) and a header's.
_LINE_EXTRA, _HEADER_LINE_EXTRA = len(b"  HTTP/1.1\r\n\r\n"), len(b": \r\n")
#: Every HTML page's policy: this origin's own files only, but for the page's inline favicon (``data:``).
CONTENT_SECURITY_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "object-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"
)
#: Where the request's caller is left, in the ASGI scope's ``state`` (``request.state.caller``).
CALLER_STATE = "caller"
#: The 401's detail without a bearer token, and with one the server does not know: the fixes differ.
MISSING_TOKEN = "this route needs a token: send the header Authorization: Bearer <token>"
WRONG_TOKEN = "the Bearer token sent is not one this server knows: check it for a typo, or get a current one"
_WRITES = frozenset({"POST", "PUT", "PATCH", "DELETE"})
_DEFAULT_PORTS = {"http": 80, "https": 443, "ws": 80, "wss": 443}


@dataclass
class Incoming:
    """What the checks read of one HTTP request: its ASGI scope, method, path, headers (the
    first of each name, lower case), whether it is for the API (``/v1``), its declared body
    ``size`` (``None``: no ``Content-Length``, or not a number), the size of its head as
    written on the wire without optional whitespace, and its ``caller`` once
    ``check_token`` has named it."""

    scope: ASGIScope
    method: str
    path: str
    headers: dict[bytes, bytes]
    v1: bool
    size: int | None
    head_size: int
    caller: Caller | None = None

    @classmethod
    def of(cls, scope: ASGIScope) -> Incoming:
        """The request ``scope`` describes."""
        method: str = scope.get("method", "")
        path: str = scope.get("path", "")
        query = scope.get("query_string", b"")
        raw_path = scope.get("raw_path") or path.encode("utf-8", "surrogateescape")
        head_size = len(method) + len(raw_path) + _LINE_EXTRA + (1 + len(query) if query else 0)
        headers: dict[bytes, bytes] = {}
        for key, value in scope.get("headers", []):
            headers.setdefault(bytes(key).lower(), bytes(value))
            head_size += len(key) + len(value) + _HEADER_LINE_EXTRA
        declared = headers.get(b"content-length")
        try:
            size = None if declared is None else int(declared)
        except ValueError:
            size = None
        return cls(scope, method, path, headers, path == "/v1" or path.startswith("/v1/"), size, head_size)

    @property
    def has_body(self) -> bool:
        """Whether the request says it sends a body (a length above 0, or chunks)."""
        return bool(self.size) or b"transfer-encoding" in self.headers


#: One check of the table: a :class:`Refusal`, or ``None`` to let the request on.
Check = Callable[[Incoming], Refusal | None]


class GuardSettings(Protocol):
    """What the guard reads of :class:`~parkgate.http.settings.Settings`, once, when it is built."""

    @property
    def tokens(self) -> Tokens | None: ...

    @property
    def allowed_hosts(self) -> frozenset[str]: ...


class GuardMiddleware:
    """Runs :attr:`table` on each HTTP request before the app reads anything, then the body (pure ASGI).

    ``routes`` is the app's route list (``check_scope``); ``limits`` gives (method, path)
    a body cap of its own, every other body has ``max_body``.
    """

    def __init__(
        self,
        app: ASGIApp,
        settings: GuardSettings,
        routes: list[Any],
        max_body: int = MAX_BODY_BYTES,
        limits: Mapping[tuple[str, str], int] | None = None,
        limiter: RateLimiter | None = None,
        signed_paths: frozenset[str] = frozenset(),
    ) -> None:
        self.app = app
        self.allowed_hosts = settings.allowed_hosts
        self.identify = None if settings.tokens is None else settings.tokens.identify
        self.routes = routes
        self.max_body = max_body
        self.limits = dict(limits or {})
        self.limiter = limiter or RateLimiter()
        #: The checks, in the order they run.
        self.table: tuple[Check, ...] = (
            check_head,
            self.check_host,
            check_cross_site,
            check_path,
            self.check_token,
            self.check_rate,
            self.check_scope,
            check_length,
            update_wrapper(partial(check_media_type, signed=signed_paths), check_media_type),  # channels: signed
            self.check_size,
        )

    async def __call__(self, scope: ASGIScope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        incoming = Incoming.of(scope)
        send = framed(send, v1=incoming.v1, head=incoming.method == "HEAD")
        for check in self.table:
            if (refusal := check(incoming)) is not None:
                await refusal.send(send)
                return
        if incoming.caller is not None:
            scope.setdefault("state", {})[CALLER_STATE] = incoming.caller
        if incoming.has_body or (incoming.size is None and incoming.method in _WRITES):
            await self._buffered(scope, receive, send, self.body_limit(incoming))
            return
        await self.app(scope, receive, send)

    def check_host(self, incoming: Incoming) -> Refusal | None:
        """Check 2: the ``Host`` names this server (400 ``host_not_allowed``)."""
        raw = incoming.headers.get(b"host")
        if raw is None:
            return None  # HTTP/1.0 without Host: no browser sends that, so no page can rebind it
        host = host_of(raw.decode("latin-1"))
        if host == "localhost" or host in self.allowed_hosts or _names_this_server(incoming.scope, host):
            return None
        detail = f"this server does not answer to the host {raw.decode('latin-1')[:200]!r}; its operator can add it "
        return Refusal(
            BadRequest.http_status, BadRequest.HOST_NOT_ALLOWED, detail + "with --allowed-host (PARKGATE_ALLOWED_HOSTS)"
        )

    def check_token(self, incoming: Incoming) -> Refusal | None:
        """Check 5, on ``/v1``: the bearer token names a caller (401 ``unauthorized``); a
        server without tokens takes every request as :data:`~parkgate.http.tokens.ANONYMOUS`."""
        if not incoming.v1:
            return None
        if self.identify is None:
            incoming.caller = ANONYMOUS
            return None
        scheme, _, credentials = incoming.headers.get(b"authorization", b"").partition(b" ")
        given = scheme.lower() == b"bearer" and bool(credentials.strip())
        incoming.caller = self.identify(credentials.strip()) if given else None
        if incoming.caller is not None:
            return None
        return Refusal(
            Unauthorized.http_status,
            Unauthorized.wire_code,
            WRONG_TOKEN if given else MISSING_TOKEN,
            {"WWW-Authenticate": "Bearer"},
        )

    def check_rate(self, incoming: Incoming) -> Refusal | None:
        """Check 6: a caller with a rate has a request left this second (429 ``rate_limited``)."""
        caller = incoming.caller
        if caller is None or caller.rate_per_second is None:
            return None
        wait = self.limiter.take(caller.name, caller.rate_per_second)
        if wait is None:
            return None
        detail = f"the token {caller.name!r} may send {caller.rate_per_second:g} requests a second; retry in {wait} s"
        return Refusal(RateLimited.http_status, RateLimited.wire_code, detail, {"Retry-After": str(wait)})

    def check_scope(self, incoming: Incoming) -> Refusal | None:
        """Check 7: the caller holds the scope the route it asks for needs (403 ``missing_scope``).

        The app's routes are read at request time: they join the list after the guard is added.
        """
        caller = incoming.caller
        if caller is None:
            return None
        route = next((route for route in self.routes if route.matches(incoming.scope)[0] is Match.FULL), None)
        need = getattr(getattr(route, "endpoint", None), NEED_ATTRIBUTE, None)
        if not isinstance(need, Need) or need.scope in caller.scopes or (need.or_owner and Scope.PARK in caller.scopes):
            return None
        what = f"{incoming.method} {incoming.path}"
        detail = f"the token {caller.name!r} lacks the scope {need.scope.value!r} for {what}"
        return Refusal(Forbidden.http_status, Forbidden.wire_code, detail, extra={"scope": need.scope.value})

    def check_size(self, incoming: Incoming) -> Refusal | None:
        """Check 10: a declared body is within its cap (413 ``body_too_large``, before it is read)."""
        size, limit = incoming.size, self.body_limit(incoming)
        return None if size is None or size <= limit else body_too_large(f"the body is {size} bytes", limit)

    def body_limit(self, incoming: Incoming) -> int:
        """The cap on this request's body, in bytes."""
        return self.limits.get((incoming.method, incoming.path.rstrip("/") or "/"), self.max_body)

    async def _buffered(self, scope: ASGIScope, receive: Receive, send: Send, limit: int) -> None:
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
                await body_too_large(f"the streamed body passed {limit} bytes", limit).send(send)
                return
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        try:
            body.decode("utf-8")  # JSON is UTF-8 (RFC 8259)
        except UnicodeDecodeError as error:
            problem = f"the body is not valid UTF-8 (byte 0x{body[error.start]:02x} at offset {error.start}): "
            await Refusal(
                InvalidRequest.http_status, InvalidRequest.MALFORMED_JSON, problem + "send the JSON encoded as UTF-8"
            ).send(send)
            return
        unread: list[Message] = [{"type": "http.request", "body": body, "more_body": False}]

        async def replay() -> Message:
            return unread.pop() if unread else await receive()

        await self.app(scope, replay, send)


def check_head(incoming: Incoming) -> Refusal | None:
    """Check 1: the head is at most :data:`MAX_HEAD_BYTES` (431 ``request_head_too_large``): h11
    refuses an incomplete head past its limit, but parses a complete one whatever its size."""
    if incoming.head_size <= MAX_HEAD_BYTES:
        return None
    detail = f"the request line and headers are over {MAX_HEAD_BYTES} bytes"
    return Refusal(431, ErrorResponse.REQUEST_HEAD_TOO_LARGE, detail, {"Connection": "close"})


def check_cross_site(incoming: Incoming) -> Refusal | None:
    """Check 3: on ``/v1``, and for every method but GET and HEAD elsewhere, the request
    does not come from another site (403 ``cross_site``); a plain client sends neither header."""
    if not incoming.v1 and incoming.method in ("GET", "HEAD"):
        return None
    headers = incoming.headers
    fetch_site = headers.get(b"sec-fetch-site")
    if fetch_site is not None and fetch_site.strip().lower() not in (b"same-origin", b"none"):
        site = fetch_site.decode("latin-1")
        detail = f"the browser says this request comes from another site (Sec-Fetch-Site: {site})"
        return Refusal(Forbidden.http_status, Forbidden.CROSS_SITE, detail)
    origin = headers.get(b"origin")
    if origin is None:
        return None
    text = origin.decode("latin-1").strip()
    scheme = str(incoming.scope.get("scheme", "http"))
    parts = urlsplit(text) if "://" in text else None
    theirs = _netloc(parts.scheme, parts.netloc) if parts and parts.scheme == scheme else None
    if theirs is not None and theirs == _netloc(scheme, headers.get(b"host", b"").decode("latin-1")):
        return None
    detail = f"the request comes from another origin ({text}); this server answers only its own pages"
    return Refusal(Forbidden.http_status, Forbidden.CROSS_SITE, detail)


def check_path(incoming: Incoming) -> Refusal | None:
    """Check 4: the path is UTF-8 once its ``%``-escapes are decoded (400 ``bad_request``).

    The server decodes ``%``-escapes leniently (``x%FE`` becomes ``x`` + U+FFFD, the path
    of another conversation), so the raw bytes are decoded again here, strictly.
    """
    raw = incoming.scope.get("raw_path")
    try:
        unquote_to_bytes(bytes(raw or b"").split(b"?", 1)[0]).decode("utf-8")
    except UnicodeDecodeError as error:
        byte = error.object[error.start]
        problem = f"the URL path is not valid UTF-8 once its %-escapes are decoded (a byte 0x{byte:02x} cannot start "
        return Refusal(
            BadRequest.http_status,
            BadRequest.wire_code,
            problem + "or continue a character there): percent-encode ids as UTF-8",
        )
    return None


def check_length(incoming: Incoming) -> Refusal | None:
    """Check 8: a ``Content-Length`` is a number (400 ``bad_request``)."""
    if b"content-length" in incoming.headers and incoming.size is None:
        return Refusal(BadRequest.http_status, BadRequest.wire_code, "Content-Length is not a number")
    return None


def check_media_type(incoming: Incoming, signed: Collection[str] = ()) -> Refusal | None:
    """Check 9: a write with a body sends JSON (415 ``unsupported_media_type``), but to ``signed`` paths."""
    if incoming.method not in _WRITES or incoming.path in signed:
        return None
    given = incoming.headers.get(b"content-type")
    if given is None:
        problem = "send the body as JSON with Content-Type: application/json" if incoming.has_body else None
    elif (media := given.split(b";", 1)[0].strip().lower()) != b"application/json":
        problem = (
            f"this route takes Content-Type: application/json, not {media.decode('latin-1')!r} "
            "(a request without a body needs no Content-Type)"
        )
    else:
        problem = None
    return (
        None if problem is None else Refusal(UnsupportedMediaType.http_status, UnsupportedMediaType.wire_code, problem)
    )


def _names_this_server(scope: ASGIScope, host: str) -> bool:
    """Whether ``host`` is loopback, or the address (or in-process name) the connection arrived at."""
    server = scope.get("server")
    local = host_of(str(server[0]).split("%")[0]) if server else None
    if host == local:
        return True
    try:
        address = ipaddress.ip_address(host)
        return address.is_loopback or (local is not None and address == ipaddress.ip_address(local))
    except ValueError:
        return False


def host_of(header: str) -> str:
    """The host of a ``Host`` header or list entry: no port, no brackets, lower case, no trailing dot."""
    value = header.strip().lower()
    if value.startswith("["):
        return value[1:].partition("]")[0]
    if value.count(":") == 1:
        value = value.partition(":")[0]
    return value.rstrip(".")


def _netloc(scheme: str, hostport: str) -> tuple[str, int] | None:
    """(host, port) of ``host[:port]`` under ``scheme``, the port filled in; ``None`` if unreadable."""
    try:
        parts = urlsplit(f"{scheme}://{hostport}")
        port = parts.port or _DEFAULT_PORTS.get(scheme)
    except ValueError:
        return None
    if parts.hostname is None or port is None:
        return None
    return parts.hostname.rstrip("."), port


def framed(send: Send, *, v1: bool, head: bool) -> Send:
    """``send`` that adds the safety headers (``nosniff`` everywhere, ``no-store`` on ``/v1``,
    a CSP on HTML) and, for a HEAD request (``head``), drops the body: its status and headers stay."""

    async def framed_send(message: Message) -> None:
        if message["type"] == "http.response.start":
            headers = list(message.get("headers", []))
            names = {bytes(name).lower() for name, _ in headers}
            if b"x-content-type-options" not in names:
                headers.append((b"x-content-type-options", b"nosniff"))
            if v1 and b"cache-control" not in names:
                headers.append((b"cache-control", b"no-store"))
            content_type = next((bytes(v) for name, v in headers if bytes(name).lower() == b"content-type"), b"")
            if content_type.startswith(b"text/html") and b"content-security-policy" not in names:
                headers.append((b"content-security-policy", CONTENT_SECURITY_POLICY.encode()))
            message = {**message, "headers": headers}
        elif head and message["type"] == "http.response.body":
            message = {**message, "body": b""}
        await send(message)

    return framed_send
