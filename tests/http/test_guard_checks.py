"""The guard's table of checks, one at a time, without a server: each check reads a
request head and refuses it (status, code, detail, headers) or lets it on; then the table's
order and the middleware that runs it (what the app sees, what a refusal carries).

The same refusals through a real ``parkgate serve`` are in tests/security (test_tokens.py,
test_cross_site.py, test_limits.py, test_headers_and_docs.py)."""

from __future__ import annotations

import asyncio
import json
import re
from typing import Any

import pytest
from starlette.responses import Response
from starlette.routing import Route

from parkgate.http import guard as guard_module
from parkgate.http.guard import (
    CALLER_STATE,
    MISSING_TOKEN,
    WRONG_TOKEN,
    GuardMiddleware,
    Incoming,
    check_cross_site,
    check_length,
    check_media_type,
    check_path,
)
from parkgate.http.ratelimit import RateLimiter
from parkgate.http.responses import Refusal
from parkgate.http.settings import Settings
from parkgate.http.tokens import ANONYMOUS, Scope, Tokens, digest, needs


def head(
    method: str = "GET",
    path: str = "/v1/asks",
    headers: dict[str, str] | None = None,
    raw_path: bytes | None = None,
) -> Incoming:
    """The head of a request to a server on 127.0.0.1:8000 (``Host: localhost:8000`` unless given)."""
    sent = {"host": "localhost:8000", **(headers or {})}
    return Incoming.of(
        {
            "type": "http",
            "method": method,
            "path": path,
            "raw_path": path.encode() if raw_path is None else raw_path,
            "query_string": b"",
            "scheme": "http",
            "server": ("127.0.0.1", 8000),
            "headers": [(name.lower().encode(), value.encode("latin-1")) for name, value in sent.items()],
        }
    )


async def _ok(request: Any) -> Response:
    return Response("ok")


@needs(Scope.PARK)
async def _park(request: Any) -> Response:
    return Response("parked")


@needs(Scope.OPERATE, or_owner=True)
async def _cancel(request: Any) -> Response:
    return Response("cancelled")


@needs(Scope.ANSWER)
async def _answer(request: Any) -> Response:
    return Response("answered")


ROUTES = [
    Route("/v1/asks", _park, methods=["POST"]),
    Route("/v1/asks/{ask_id}/cancel", _cancel, methods=["POST"]),
    Route("/v1/conversations/{conversation_id:path}/messages", _answer, methods=["POST"]),
    Route("/v1/open", _ok),
]
TOKENS = Tokens.from_tables(
    {
        "token": [
            {"name": "parker", "sha256": digest("tok-park"), "scopes": ["park"], "rate_per_second": 1},
            {"name": "reader", "sha256": digest("tok-read"), "scopes": ["read"]},
        ]
    }
)


def guard(settings: Settings | None = None, **options: Any) -> GuardMiddleware:
    return GuardMiddleware(_ok, settings or Settings(tokens=TOKENS), ROUTES, **options)


def test_the_host_check_answers_only_to_this_servers_names() -> None:
    check = guard(Settings(allowed_hosts=frozenset({"gate.example"}))).check_host
    for host in ("localhost:8000", "127.0.0.1:8000", "[::1]:8000", "127.9.9.9", "GATE.example.:443"):
        assert check(head(headers={"host": host})) is None, host
    assert check(Incoming.of({"type": "http", "path": "/", "headers": []})) is None  # HTTP/1.0 without Host
    refused = check(head(headers={"host": "rebound.example:8000"}))
    assert refused is not None and (refused.status, refused.error) == (400, "host_not_allowed")
    assert "'rebound.example:8000'" in refused.detail and "PARKGATE_ALLOWED_HOSTS" in refused.detail
    long = check(head(headers={"host": "x" * 500}))
    assert long is not None and "x" * 200 + "'" in long.detail and "x" * 201 not in long.detail


def test_the_cross_site_check_refuses_other_sites_on_v1_and_writes_everywhere() -> None:
    other = {"origin": "http://evil.example"}
    for refused in (
        check_cross_site(head(headers=other)),
        check_cross_site(head(headers={"sec-fetch-site": "cross-site"})),
        check_cross_site(head(headers={"origin": "null"})),
        check_cross_site(head(headers={"origin": "http://localhost:8001"})),  # another port, another origin
        check_cross_site(head("POST", "/", headers=other)),
    ):
        assert refused is not None and (refused.status, refused.error) == (403, "cross_site")
    assert check_cross_site(head("GET", "/", headers=other)) is None  # a link from another site opens the console
    assert check_cross_site(head(headers={"origin": "http://localhost:8000", "sec-fetch-site": "same-origin"})) is None
    assert check_cross_site(head(headers={"sec-fetch-site": "none"})) is None
    assert check_cross_site(head("POST")) is None  # a plain client sends neither header


def test_the_path_check_refuses_escapes_that_are_not_utf8() -> None:
    refused = check_path(head(path="/v1/conversations/x\ufffd/messages", raw_path=b"/v1/conversations/x%FE/messages"))
    assert refused is not None and (refused.status, refused.error) == (400, "bad_request")
    assert "0xfe" in refused.detail
    assert check_path(head(path="/v1/conversations/é", raw_path=b"/v1/conversations/%C3%A9?x=%FE")) is None


def test_the_token_check_names_the_caller_and_tells_a_missing_token_from_a_wrong_one() -> None:
    check = guard().check_token
    missing, wrong = check(head()), check(head(headers={"authorization": "Bearer nope"}))
    assert missing == Refusal(401, "unauthorized", MISSING_TOKEN, {"WWW-Authenticate": "Bearer"})
    assert wrong == Refusal(401, "unauthorized", WRONG_TOKEN, {"WWW-Authenticate": "Bearer"})
    assert check(head(headers={"authorization": "Basic tok-read"})) == missing
    known = head(headers={"authorization": "bearer tok-read"})
    assert check(known) is None and known.caller is not None and known.caller.name == "reader"
    console = head(path="/")
    assert check(console) is None and console.caller is None  # only /v1 needs a token
    anyone = head()
    assert guard(Settings()).check_token(anyone) is None and anyone.caller is ANONYMOUS


def test_the_rate_check_refuses_a_caller_past_its_rate_with_the_wait() -> None:
    now = [50.0]
    check = guard(limiter=RateLimiter(lambda: now[0])).check_rate
    parker = head(headers={"authorization": "Bearer tok-park"})
    guard().check_token(parker)
    assert check(parker) is None
    refused = check(parker)
    assert refused is not None and (refused.status, refused.error, refused.headers) == (
        429,
        "rate_limited",
        {"Retry-After": "1"},
    )
    assert "'parker' may send 1 requests a second" in refused.detail
    now[0] += 1.0
    assert check(parker) is None
    reader = head(headers={"authorization": "Bearer tok-read"})
    guard().check_token(reader)
    assert all(check(reader) is None for _ in range(5))  # no rate, no limit


def test_the_scope_check_refuses_a_caller_without_the_routes_scope() -> None:
    check = guard().check_scope

    def as_caller(token: str, method: str, path: str) -> Incoming:
        incoming = head(method, path, {"authorization": f"Bearer {token}"})
        guard().check_token(incoming)
        return incoming

    refused = check(as_caller("tok-read", "POST", "/v1/asks"))
    assert refused is not None and (refused.status, refused.error, dict(refused.extra)) == (
        403,
        "missing_scope",
        {"scope": "park"},
    )
    assert refused.detail == "the token 'reader' lacks the scope 'park' for POST /v1/asks"
    assert check(as_caller("tok-park", "POST", "/v1/asks")) is None
    assert check(as_caller("tok-park", "POST", "/v1/asks/a1/cancel")) is None  # a parker on its own asks
    cancel = check(as_caller("tok-read", "POST", "/v1/asks/a1/cancel"))
    assert cancel is not None and cancel.extra == {"scope": "operate"}
    assert check(as_caller("tok-read", "GET", "/v1/open")) is None  # a route that needs no scope
    assert check(as_caller("tok-read", "GET", "/v1/nowhere")) is None  # no route: the app's 404
    assert check(head("POST", "/v1/asks")) is None  # no caller named: not a /v1 request


def test_the_length_check_refuses_a_content_length_that_is_not_a_number() -> None:
    refused = check_length(head("POST", headers={"content-length": "12abc"}))
    assert refused == Refusal(400, "bad_request", "Content-Length is not a number")
    assert check_length(head("POST", headers={"content-length": "12"})) is None
    assert check_length(head("POST")) is None


def test_the_media_type_check_wants_json_on_a_write_with_a_body() -> None:
    for headers, says in (
        ({"content-length": "2", "content-type": "text/plain"}, "not 'text/plain'"),
        ({"content-length": "2"}, "send the body as JSON"),
        ({"transfer-encoding": "chunked"}, "send the body as JSON"),
        ({"content-length": "0", "content-type": "application/x-www-form-urlencoded"}, "needs no Content-Type"),
    ):
        refused = check_media_type(head("POST", headers=headers))
        assert refused is not None and (refused.status, refused.error) == (415, "unsupported_media_type")
        assert says in refused.detail, (headers, refused.detail)
    assert (
        check_media_type(head("POST", headers={"content-length": "2", "content-type": "Application/JSON; x"})) is None
    )
    assert check_media_type(head("POST", headers={"content-length": "0"})) is None  # no body, no Content-Type
    assert check_media_type(head("GET", headers={"content-length": "2", "content-type": "text/plain"})) is None


def test_the_size_check_refuses_a_declared_body_over_its_routes_cap() -> None:
    check = guard(max_body=100, limits={("POST", "/v1/asks"): 10}).check_size
    refused = check(head("POST", "/v1/asks/", {"content-length": "11"}))
    assert refused == Refusal(
        413, "body_too_large", "the body is 11 bytes; the limit is 10 bytes", {"Connection": "close"}
    )
    assert check(head("POST", "/v1/asks", {"content-length": "10"})) is None
    assert check(head("POST", "/v1/conversations/c/messages", {"content-length": "100"})) is None
    assert check(head("POST", "/v1/conversations/c/messages", {"content-length": "101"})) is not None
    assert check(head("POST", "/v1/asks")) is None  # a streamed body is capped as it is read


def test_the_table_runs_the_checks_in_the_order_the_module_docstring_lists() -> None:
    listed = re.findall(r"^\d+\. [`:a-z]*?`?(check_\w+)", guard_module.__doc__ or "", re.MULTILINE)
    assert [check.__name__ for check in guard().table] == listed
    assert len(listed) == 10


def _serve(middleware: GuardMiddleware, method: str, path: str, headers: dict[str, str], chunks: list[bytes]) -> Any:
    """One request through ``middleware``: the response's status, headers and body, and what the app got."""
    incoming = head(method, path, headers)
    sent: list[dict[str, Any]] = []
    reached: dict[str, Any] = {}
    messages = [
        {"type": "http.request", "body": chunk, "more_body": i < len(chunks) - 1} for i, chunk in enumerate(chunks)
    ]

    async def receive() -> dict[str, Any]:
        return messages.pop(0) if messages else {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    async def app(scope: Any, receive: Any, send: Any) -> None:
        reached["caller"] = scope.get("state", {}).get(CALLER_STATE)
        reached["body"] = (await receive()).get("body")
        await Response("ok", media_type="text/plain")(scope, receive, send)

    middleware.app = app
    asyncio.run(middleware(incoming.scope, receive, send))
    start = next(message for message in sent if message["type"] == "http.response.start")
    body = b"".join(message.get("body", b"") for message in sent if message["type"] == "http.response.body")
    return start["status"], dict(start["headers"]), body, reached


def test_the_guard_answers_the_first_refusal_and_lets_a_passing_request_reach_the_app() -> None:
    middleware = guard(max_body=8)
    # Foreign host and cross-site at once: the host check comes first.
    status, headers, body, reached = _serve(middleware, "GET", "/v1/asks", {"host": "evil", "origin": "http://x"}, [])
    assert status == 400 and json.loads(body)["error"] == "host_not_allowed" and reached == {}
    assert headers[b"x-content-type-options"] == b"nosniff" and headers[b"cache-control"] == b"no-store"
    assert headers[b"content-length"] == str(len(body)).encode()
    status, _, body, _ = _serve(middleware, "POST", "/v1/asks", {"content-length": "abc"}, [b""])
    assert (status, json.loads(body)["error"]) == (401, "unauthorized")  # the token comes before the length
    ok = {"authorization": "Bearer tok-park", "content-type": "application/json"}
    status, headers, body, reached = _serve(middleware, "POST", "/v1/asks", ok, [b"{}"])
    assert (status, body, reached["body"]) == (200, b"ok", b"{}") and reached["caller"].name == "parker"
    assert b"cache-control" in headers


def test_the_guard_reads_the_body_within_its_cap_and_as_utf8() -> None:
    ok = {"authorization": "Bearer tok-read", "content-type": "application/json"}
    status, headers, body, reached = _serve(guard(max_body=8), "POST", "/v1/open", ok, [b"12345", b"6789"])
    assert status == 413 and reached == {} and headers[b"connection"] == b"close"
    assert json.loads(body)["detail"] == "the streamed body passed 8 bytes; the limit is 8 bytes"
    status, _, body, reached = _serve(guard(), "POST", "/v1/open", ok, [b'{"a": "\xff"}'])
    assert (status, json.loads(body)["error"], reached) == (422, "malformed_json", {})
    assert "byte 0xff at offset 7" in json.loads(body)["detail"]


@pytest.mark.parametrize("method", ["HEAD", "GET"])
def test_the_guard_drops_a_head_responses_body_and_keeps_its_headers(method: str) -> None:
    status, headers, body, _ = _serve(guard(Settings()), method, "/", {}, [])
    assert (status, headers[b"content-length"]) == (200, b"2")
    assert body == (b"" if method == "HEAD" else b"ok")
    assert b"cache-control" not in headers  # no-store is for /v1
