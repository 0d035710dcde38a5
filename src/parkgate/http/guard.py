"""The guard in front of every route: what is checked before anything is read or written.

In order, for each HTTP request:

1. ``Host`` is one this server answers to (``localhost``, a loopback address, the
   address the connection arrived at, or one ``PARKGATE_ALLOWED_HOSTS`` names), else
   400 ``host_not_allowed``: a DNS-rebound page is not served.
2. A request that says it comes from another site (``Origin`` not this server's own,
   ``null``, or ``Sec-Fetch-Site`` other than ``same-origin``/``none``) is refused with
   403 ``cross_site``: on every ``/v1`` route, and for every method but GET and HEAD
   elsewhere (a link from another site may still open the console).
3. A path whose ``%``-escapes are not UTF-8 is a 400.
4. On ``/v1``: the bearer token names a caller (else 401, whose detail tells a missing
   token from a wrong one), whose rate it checks (429
   ``rate_limited`` with ``Retry-After``) and whose scopes must hold the one the route
   needs (403 ``missing_scope``, naming it, also in the body's ``scope``). The caller is
   left in the request's state.
5. A POST, PUT, PATCH or DELETE with a body must send ``Content-Type: application/json``
   (415 otherwise; one without a body needs none).
6. The body: over its cap a 413 (before it is read), not UTF-8 a 422.

Every response gets ``X-Content-Type-Options: nosniff``; ``/v1`` answers
``Cache-Control: no-store``; an HTML page without a Content-Security-Policy gets the
console's. A HEAD request gets the GET response's status and headers, without its body.
"""

from __future__ import annotations

import ipaddress
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar
from urllib.parse import unquote_to_bytes, urlsplit

from starlette.routing import Match
from starlette.types import ASGIApp, Message, Receive, Send
from starlette.types import Scope as ASGIScope

from parkgate.http import codes
from parkgate.http.ratelimit import RateLimiter
from parkgate.http.settings import Settings, host_of
from parkgate.http.tokens import ANONYMOUS, Caller, Scope

#: Largest request body accepted; larger ones get 413 before they are read.
MAX_BODY_BYTES = 1024 * 1024
#: The policy of every HTML page: nothing but this origin's own files; the page's inline
#: favicon (``data:``) is the one exception.
CONTENT_SECURITY_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "object-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"
)
#: Where the request's caller is left, in the ASGI scope's ``state`` (``request.state.caller``).
CALLER_STATE = "caller"
#: The 401's detail when a request carries no bearer token, and when it carries one the
#: server does not know: the fixes differ (send one; check the one sent).
MISSING_TOKEN = "this route needs a token: send the header Authorization: Bearer <token>"
WRONG_TOKEN = "the Bearer token sent is not one this server knows: check it for a typo, or get a current one"
_WRITES = frozenset({"POST", "PUT", "PATCH", "DELETE"})
_DEFAULT_PORTS = {"http": 80, "https": 443, "ws": 80, "wss": 443}


@dataclass(frozen=True)
class Need:
    """The scope a route needs; ``or_owner``: a ``park`` caller may also use it on the
    asks it parked (the route checks which ask)."""

    scope: Scope
    or_owner: bool = False

    def allows(self, caller: Caller) -> bool:
        return caller.may(self.scope) or (self.or_owner and caller.may(Scope.PARK))


_NEED_ATTRIBUTE = "__parkgate_need__"
Endpoint = TypeVar("Endpoint", bound=Callable[..., Any])


def needs(scope: Scope, *, or_owner: bool = False) -> Callable[[Endpoint], Endpoint]:
    """Mark a route's endpoint with the scope it needs; the guard enforces it before the body is read."""

    def mark(endpoint: Endpoint) -> Endpoint:
        setattr(endpoint, _NEED_ATTRIBUTE, Need(scope, or_owner))
        return endpoint

    return mark


def route_need(routes: list[Any], scope: ASGIScope) -> Need | None:
    """The :class:`Need` of the route that serves this request (``None``: none, or no route)."""
    for route in routes:
        match, _ = route.matches(scope)
        if match is Match.FULL:
            need = getattr(getattr(route, "endpoint", None), _NEED_ATTRIBUTE, None)
            return need if isinstance(need, Need) else None
    return None


async def send_error(
    send: Send, status: int, error: str, detail: str, headers: Mapping[str, str] | None = None, **extra: Any
) -> None:
    """Answer with the one error shape, ``{"error": code, "detail": message, ...}``, from the guard."""
    body = json.dumps({"error": error, "detail": detail, **extra}).encode()
    raw = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    for key, value in (headers or {}).items():
        raw.append((key.lower().encode(), value.encode()))
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": body})


def path_problem(scope: ASGIScope) -> str | None:
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


def body_problem(body: bytes) -> str | None:
    """Why ``body`` is not UTF-8 text (JSON is UTF-8: RFC 8259), or ``None``."""
    try:
        body.decode("utf-8")
    except UnicodeDecodeError as error:
        return (
            f"the body is not valid UTF-8 (byte 0x{body[error.start]:02x} at offset {error.start}): "
            "send the JSON encoded as UTF-8"
        )
    return None


def is_v1(path: str) -> bool:
    return path == "/v1" or path.startswith("/v1/")


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


def cross_site_problem(scope: ASGIScope, headers: Mapping[bytes, bytes]) -> str | None:
    """Why the request comes from another site, or ``None`` (a plain client sends neither header)."""
    fetch_site = headers.get(b"sec-fetch-site")
    if fetch_site is not None and fetch_site.strip().lower() not in (b"same-origin", b"none"):
        return f"the browser says this request comes from another site (Sec-Fetch-Site: {fetch_site.decode('latin-1')})"
    origin = headers.get(b"origin")
    if origin is None:
        return None
    text = origin.decode("latin-1").strip()
    host = headers.get(b"host", b"").decode("latin-1")
    scheme = str(scope.get("scheme", "http"))
    parts = urlsplit(text) if "://" in text else None
    theirs = _netloc(parts.scheme, parts.netloc) if parts and parts.scheme == scheme else None
    if theirs is None or theirs != _netloc(scheme, host):
        return f"the request comes from another origin ({text}); this server answers only its own pages"
    return None


class GuardMiddleware:
    """The checks of this module's docstring, before the app reads anything (pure ASGI).

    ``routes`` is the app's route list, read at request time to find the scope a route
    needs (:func:`needs`). ``limits`` gives (method, path) a body cap of its own.
    """

    def __init__(
        self,
        app: ASGIApp,
        settings: Settings,
        routes: list[Any],
        max_body: int = MAX_BODY_BYTES,
        limits: Mapping[tuple[str, str], int] | None = None,
        limiter: RateLimiter | None = None,
    ) -> None:
        self.app = app
        self.settings = settings
        self.routes = routes
        self.max_body = max_body
        self.limits = dict(limits or {})
        self.limiter = limiter or RateLimiter()

    async def __call__(self, scope: ASGIScope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path: str = scope.get("path", "")
        method: str = scope.get("method", "")
        if method == "HEAD":
            send = _without_body(send)
        send = _with_safety_headers(send, v1=is_v1(path))
        headers: dict[bytes, bytes] = {}
        for key, value in scope.get("headers", []):
            headers.setdefault(bytes(key).lower(), bytes(value))
        if not self._host_allowed(scope, headers.get(b"host")):
            shown = headers.get(b"host", b"").decode("latin-1")[:200]
            await send_error(
                send,
                400,
                "host_not_allowed",
                f"this server does not answer to the host {shown!r}; its operator can add it with "
                "--allowed-host (PARKGATE_ALLOWED_HOSTS)",
            )
            return
        if (is_v1(path) or method not in ("GET", "HEAD")) and (problem := cross_site_problem(scope, headers)):
            await send_error(send, 403, "cross_site", problem)
            return
        if problem := path_problem(scope):
            await send_error(send, 400, "bad_request", problem)
            return
        if is_v1(path) and not await self._admitted(scope, headers, send):
            return
        declared = headers.get(b"content-length")
        size = None
        if declared is not None:
            try:
                size = int(declared)
            except ValueError:
                await send_error(send, 400, "bad_request", "Content-Length is not a number")
                return
        if method in _WRITES and (problem := _media_problem(headers, bool(size) or b"transfer-encoding" in headers)):
            await send_error(send, 415, "unsupported_media_type", problem)
            return
        limit = self.limits.get((method, path.rstrip("/") or "/"), self.max_body)
        if size is not None and size > limit:
            await self._too_large(send, f"the body is {size} bytes", limit)
            return
        if size or b"transfer-encoding" in headers or (size is None and method in _WRITES):
            await self._buffered(scope, receive, send, limit)
            return
        await self.app(scope, receive, send)

    def _host_allowed(self, scope: ASGIScope, raw: bytes | None) -> bool:
        if raw is None:
            return True  # HTTP/1.0 without Host: no browser sends that, so no page can rebind it
        host = host_of(raw.decode("latin-1"))
        if host == "localhost" or host in self.settings.allowed_hosts:
            return True
        server = scope.get("server")
        local = host_of(str(server[0]).split("%")[0]) if server else None
        if host == local:
            return True  # the address the connection arrived at (or the name an in-process client gives)
        try:
            address = ipaddress.ip_address(host)
        except ValueError:
            return False
        if address.is_loopback:
            return True
        try:
            return local is not None and address == ipaddress.ip_address(local)
        except ValueError:
            return False

    async def _admitted(self, scope: ASGIScope, headers: Mapping[bytes, bytes], send: Send) -> bool:
        """Token, rate and scope of a ``/v1`` request; answers and returns ``False`` when refused."""
        tokens = self.settings.tokens
        caller: Caller | None = ANONYMOUS
        given = False
        if tokens is not None:
            scheme, _, credentials = headers.get(b"authorization", b"").partition(b" ")
            given = scheme.lower() == b"bearer" and bool(credentials.strip())
            caller = tokens.identify(credentials.strip()) if given else None
        if caller is None:
            # A wrong token and a missing one are told apart: the fixes differ.
            detail = WRONG_TOKEN if given else MISSING_TOKEN
            await send_error(send, 401, "unauthorized", detail, {"WWW-Authenticate": "Bearer"})
            return False
        if caller.rate_per_second is not None:
            wait = self.limiter.take(caller.name, caller.rate_per_second)
            if wait is not None:
                await send_error(
                    send,
                    429,
                    "rate_limited",
                    f"the token {caller.name!r} may send {caller.rate_per_second:g} requests a second; "
                    f"retry in {wait} s",
                    {"Retry-After": str(wait)},
                )
                return False
        need = route_need(self.routes, scope)
        if need is not None and not need.allows(caller):
            detail = missing_scope(caller, need.scope, scope)
            await send_error(send, 403, "missing_scope", detail, scope=need.scope.value)
            return False
        scope.setdefault("state", {})[CALLER_STATE] = caller
        return True

    async def _too_large(self, send: Send, what: str, limit: int) -> None:
        await send_error(send, 413, "body_too_large", f"{what}; the limit is {limit} bytes", {"Connection": "close"})

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
                await self._too_large(send, f"the streamed body passed {limit} bytes", limit)
                return
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        if problem := body_problem(body):
            await send_error(send, 422, codes.MALFORMED_JSON, problem)
            return
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)


def missing_scope(caller: Caller, scope: Scope, request: ASGIScope | None = None) -> str:
    """The 403's detail: which token, which scope it lacks, for what."""
    what = f" for {request.get('method', '')} {request.get('path', '')}" if request else ""
    return f"the token {caller.name!r} lacks the scope {scope.value!r}{what}"


def _media_problem(headers: Mapping[bytes, bytes], has_body: bool) -> str | None:
    """Why a write's ``Content-Type`` is refused (415), or ``None``."""
    given = headers.get(b"content-type")
    if given is None:
        return "send the body as JSON with Content-Type: application/json" if has_body else None
    media = given.split(b";", 1)[0].strip().lower()
    if media != b"application/json":
        return (
            f"this route takes Content-Type: application/json, not {media.decode('latin-1')!r} "
            "(a request without a body needs no Content-Type)"
        )
    return None


def _with_safety_headers(send: Send, *, v1: bool) -> Send:
    """``send`` that adds ``nosniff`` everywhere, ``no-store`` on ``/v1`` and a CSP on HTML."""

    async def guarded_send(message: Message) -> None:
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
        await send(message)

    return guarded_send


def _without_body(send: Send) -> Send:
    """``send`` for a HEAD request: the response's status and headers, its body dropped."""

    async def head_send(message: Message) -> None:
        if message["type"] == "http.response.body":
            message = {**message, "body": b""}
        await send(message)

    return head_send


__all__ = [
    "CALLER_STATE",
    "CONTENT_SECURITY_POLICY",
    "MAX_BODY_BYTES",
    "GuardMiddleware",
    "Need",
    "needs",
    "route_need",
]
