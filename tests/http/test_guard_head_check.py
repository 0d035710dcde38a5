"""The guard's first check on its own, without a server: a request head (request line and
headers) over 64 KiB is refused with 431 ``request_head_too_large`` and ``Connection:
close`` before any other check runs or the app is reached. The same refusal through a
real ``parkgate serve``, with the head in one write, is in
tests/security/test_connection_bounds.py."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from starlette.responses import Response

from parkgate.http.guard import MAX_HEAD_BYTES, GuardMiddleware, Incoming, check_head
from parkgate.http.settings import Settings


def scope_with_padding(padding: int, host: str = "localhost:8000") -> dict[str, Any]:
    """A GET of ``/v1/asks`` whose ``x-padding`` header holds ``padding`` bytes."""
    return {
        "type": "http",
        "method": "GET",
        "path": "/v1/asks",
        "raw_path": b"/v1/asks",
        "query_string": b"",
        "scheme": "http",
        "server": ("127.0.0.1", 8000),
        "headers": [(b"host", host.encode()), (b"x-padding", b"a" * padding)],
    }


def padding_to_fill(limit: int) -> int:
    """The padding that makes the head exactly ``limit`` bytes."""
    return limit - Incoming.of(scope_with_padding(0)).head_size


def test_a_head_of_64_kib_passes_and_one_byte_more_is_a_431_that_closes() -> None:
    exact = padding_to_fill(MAX_HEAD_BYTES)
    assert check_head(Incoming.of(scope_with_padding(exact))) is None
    refusal = check_head(Incoming.of(scope_with_padding(exact + 1)))
    assert refusal is not None
    assert (refusal.status, refusal.error) == (431, "request_head_too_large")
    assert refusal.detail == f"the request line and headers are over {MAX_HEAD_BYTES} bytes"
    assert refusal.headers == {"Connection": "close"}


def test_the_guard_answers_an_oversized_head_first_and_never_reaches_the_app() -> None:
    reached: list[str] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        reached.append(scope["path"])
        await Response("ok")(scope, receive, send)

    sent: list[dict[str, Any]] = []

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    async def receive() -> dict[str, Any]:
        return {"type": "http.disconnect"}

    guard = GuardMiddleware(app, Settings(), [])
    # A foreign Host would be a 400 from the host check: the head check comes before it.
    oversized = scope_with_padding(MAX_HEAD_BYTES, host="evil.example")
    asyncio.run(guard(oversized, receive, send))
    start, body = sent[0], sent[1]["body"]
    headers = dict(start["headers"])
    assert start["status"] == 431 and reached == []
    assert json.loads(body)["error"] == "request_head_too_large"
    assert headers[b"connection"] == b"close" and headers[b"x-content-type-options"] == b"nosniff"
