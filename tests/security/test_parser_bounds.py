"""Both request parsers of ``parkgate serve`` hold the same bounds, through a real server.

``serve`` parses with httptools by default and with h11 under ``--http h11``
(:mod:`parkgate.http.fastparser`). On each: a request head that keeps growing past 64 KiB
is refused and the connection closed before the rest is read; a large body sent in the
same write as its head, and pipelined behind another request, is not mistaken for a
head; a head that trickles in is cut at the head timeout; and one peer holds at most its
share of the connections. (The other connection tests run on the default parser.)

Real time is what the head-timeout test checks (a timer closing a socket), so it waits in
real time, with a short timeout.
"""

from __future__ import annotations

import contextlib
import json
import socket
import time
from typing import Any

import pytest

PARSERS = ["httptools", "h11"]
HEAD_TIMEOUT = 2.0


@pytest.fixture
def sqlite_database(store_url_factory: Any) -> Any:
    return store_url_factory("sqlite")


def read_to_close(sock: socket.socket) -> bytes:
    """What the server sends until it closes ``sock`` (a reset ends it too)."""
    chunks = []
    with contextlib.suppress(OSError):
        while chunk := sock.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks)


def message_request(conversation: str, text: str, padding: int = 0) -> bytes:
    body = json.dumps({"text": text}).encode()[:-1] + b" " * padding + b"}"  # JSON allows the blanks
    return (
        f"POST /v1/conversations/{conversation}/messages HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
    ).encode() + body


@pytest.mark.parametrize("parser", PARSERS)
def test_a_growing_head_is_refused_before_the_rest_is_read(launch: Any, sqlite_database: Any, parser: str) -> None:
    server = launch(sqlite_database, extra_args=["--http", parser])
    sent = 0
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Padding: ")
        with contextlib.suppress(OSError):  # the server hangs up: the rest is never sent
            while sent < 64 * 1024 * 1024:
                sock.sendall(b"a" * 16_384)
                sent += 16_384
        answer = read_to_close(sock)
    assert sent < 16 * 1024 * 1024, sent
    assert answer == b"" or answer.startswith(b"HTTP/1.1 4"), answer[:100]
    if parser == "httptools" and answer:
        assert answer.startswith(b"HTTP/1.1 431") and b"request_head_too_large" in answer
    with server.client() as http:
        assert http.get("/healthz").status_code == 200


@pytest.mark.parametrize("parser", PARSERS)
def test_a_large_body_in_the_heads_write_and_pipelined_is_served(
    launch: Any, sqlite_database: Any, parser: str
) -> None:
    server = launch(sqlite_database, extra_args=["--http", parser])
    big = message_request("big-body", "hello", padding=600_000)  # under the 1 MiB body cap, many reads long
    small = message_request("after-it", "hello")
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
        sock.sendall(big + big + small)  # one write; the second and third heads start mid-read
        answer = b""
        while answer.count(b"HTTP/1.1 ") < 3 or not answer.endswith(b"}"):
            chunk = sock.recv(65536)  # a refusal closes the connection: the loop ends
            if not chunk:
                break
            answer += chunk
    assert answer.count(b"HTTP/1.1 200") == 3, answer[:300]
    assert answer.count(b'"kind":"pass"') == 3


@pytest.mark.parametrize("parser", PARSERS)
def test_a_trickling_head_is_cut_and_one_peer_is_capped(launch: Any, sqlite_database: Any, parser: str) -> None:
    server = launch(
        sqlite_database,
        extra_args=["--http", parser, "--head-timeout", str(HEAD_TIMEOUT), "--max-connections", "8"],
    )
    idle = [socket.create_connection(("127.0.0.1", server.port), timeout=10) for _ in range(5)]
    try:  # 4 a peer: the fifth is refused at once
        idle[4].settimeout(5)
        assert idle[4].recv(4096).startswith(b"HTTP/1.1 503")
    finally:
        for sock in idle:
            sock.close()
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        started = time.monotonic()
        with contextlib.suppress(OSError):
            for _ in range(20):  # one header line every half second: never a complete head
                time.sleep(0.5)  # real time: the trickle against the head timer is what is tested
                sock.sendall(b"X-Slow: 1\r\n")
        read_to_close(sock)
        assert time.monotonic() - started < HEAD_TIMEOUT + 6
