"""Bounded connections through a real ``parkgate serve`` (issue 26, items 4, 6 and 7's head).

Idle sockets that never send a request head are closed after the head timeout, so
``/healthz`` answers again within it; one peer address holds at most its share of the
connection slots; long-polls past their cap get 429 while ordinary requests are served;
2,000 long-polls that time out together leave ``/healthz`` answering within a second;
and a request head over 64 KiB gets 431 even when it arrives in one write.

Real time is what is under test here (a timeout closing sockets, a burst ending at
once), so these tests wait in real time; the head timeouts are set short to keep that brief.
"""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from typing import Any

import httpx
import pytest
from live_server import wait_until

from polling import until

HEAD_TIMEOUT = 2.0


@pytest.fixture
def sqlite_database(store_url_factory: Any) -> Any:
    return store_url_factory("sqlite")


def park(server: Any, conversation: str) -> str:
    with server.client() as http:
        response = http.post("/v1/asks", json={"conversation_id": conversation, "prompt": "Ship?", "options": ["A"]})
    assert response.status_code == 201, response.text
    return str(response.json()["ask_id"])


def open_idle(port: int, count: int) -> list[socket.socket]:
    return [socket.create_connection(("127.0.0.1", port), timeout=10) for _ in range(count)]


def closed_by_server(sock: socket.socket) -> bool:
    """Whether the server has closed ``sock`` (what it sent before, if anything, is read)."""
    sock.settimeout(5)
    try:
        while sock.recv(4096):
            pass
    except TimeoutError:
        return False  # still open: nothing came for 5 s
    except OSError:
        return True  # reset
    return True  # end of stream


def read_to_close(sock: socket.socket) -> bytes:
    """What the server sends until it closes ``sock``."""
    chunks = []
    while chunk := sock.recv(65536):
        chunks.append(chunk)
    return b"".join(chunks)


def test_idle_connections_are_closed_after_the_head_timeout(launch: Any, sqlite_database: Any) -> None:
    server = launch(
        sqlite_database,
        extra_args=["--head-timeout", str(HEAD_TIMEOUT), "--max-connections-per-peer", "500"],
    )
    idle = open_idle(server.port, 600)
    try:
        opened = time.monotonic()
        with httpx.Client(base_url=server.url, timeout=30) as http:
            assert http.get("/healthz").status_code == 503  # the idle sockets hold every slot
            # Real time: the head timeout is what frees the slots.
            wait_until(lambda: http.get("/healthz").status_code == 200, 30, "/healthz to answer 200")
        assert time.monotonic() - opened < HEAD_TIMEOUT + 5
        assert all(closed_by_server(sock) for sock in idle[:50])
    finally:
        for sock in idle:
            sock.close()


def test_one_peer_cannot_take_every_connection(launch: Any, sqlite_database: Any) -> None:
    server = launch(sqlite_database, extra_args=["--max-connections", "20"])  # 10 a peer
    idle = open_idle(server.port, 30)
    try:
        refused = idle[10:]
        first = refused[0]
        first.settimeout(5)
        answer = first.recv(4096)
        assert answer.startswith(b"HTTP/1.1 503") and b"retry-after: 1" in answer.lower()
        assert all(closed_by_server(sock) for sock in refused)
        # Another peer (127.0.0.2 is loopback too) is served at once.
        other = httpx.HTTPTransport(local_address="127.0.0.2")
        with httpx.Client(base_url=server.url, transport=other, timeout=10) as http:
            assert http.get("/healthz").status_code == 200
    finally:
        for sock in idle:
            sock.close()


@pytest.mark.parametrize("size", [70_000, 100_000])
def test_a_request_head_over_64_kib_in_one_write_gets_431(launch: Any, sqlite_database: Any, size: int) -> None:
    server = launch(sqlite_database)
    head = b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Padding: " + b"a" * size + b"\r\n\r\n"
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
        sock.sendall(head)
        answer = read_to_close(sock)
    assert answer.startswith(b"HTTP/1.1 431"), answer[:80]
    assert b"request_head_too_large" in answer
    fits = b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Padding: " + b"a" * 60_000 + b"\r\n\r\n"
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
        sock.sendall(fits)
        assert sock.recv(65536).startswith(b"HTTP/1.1 200")


def test_long_polls_past_their_cap_get_429_and_other_requests_are_served(launch: Any, database: Any) -> None:
    server = launch(database, extra_args=["--max-long-polls", "3"])
    ask_id = park(server, "capped-polls")
    statuses: list[str] = []

    def poll() -> None:
        with server.client(timeout=60) as http:
            # The probe below may hold a place for a moment: a 429 then is asked again.
            response = until(
                lambda: (r := http.get(f"/v1/asks/{ask_id}", params={"wait": 30})).status_code != 429 and r,
                60,
                "a place among the long-polls",
                interval=0.1,
            )
            statuses.append(response.json()["status"])

    pollers = [threading.Thread(target=poll, daemon=True) for _ in range(3)]
    for poller in pollers:
        poller.start()
    with server.client() as http:
        refused = wait_until(
            lambda: (r := http.get(f"/v1/asks/{ask_id}", params={"wait": 0.5})).status_code == 429 and r,
            20,
            "a fourth long-poll to be refused",
        )
        assert refused.json()["error"] == "too_many_long_polls"
        assert refused.headers["retry-after"] == "2" and refused.headers["connection"] == "close"
        assert http.get("/healthz").status_code == 200
        assert http.get(f"/v1/asks/{ask_id}").json()["status"] == "open"  # a read without wait
        assert http.post(f"/v1/asks/{ask_id}/cancel").json()["status"] == "cancelled"
    for poller in pollers:
        poller.join(30)
    assert statuses == ["cancelled"] * 3
    with server.client() as http:  # their places are free again
        assert http.get(f"/v1/asks/{ask_id}", params={"wait": 30}).json()["status"] == "cancelled"


POLLS = 2_000
POLL_WAIT = 8.0


async def burst_of_polls(port: int, ask_id: str) -> list[bytes]:
    """``POLLS`` long-polls on one connection each, sent at once; the status lines they get."""

    async def one() -> bytes:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        target = f"/v1/asks/{ask_id}?wait={POLL_WAIT}"
        writer.write(f"GET {target} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n".encode())
        answer = await reader.read()
        writer.close()
        return answer.split(b"\r\n", 1)[0]

    return await asyncio.gather(*(one() for _ in range(POLLS)))


@pytest.mark.slow
def test_two_thousand_long_polls_ending_together_leave_healthz_answering(launch: Any, database: Any) -> None:
    server = launch(
        database,
        extra_args=["--max-connections", "3000", "--max-connections-per-peer", "3000", "--max-long-polls", "2500"],
    )
    ask_id = park(server, "burst")
    probes: list[tuple[float, float, int]] = []
    done = threading.Event()

    def probe() -> None:
        with httpx.Client(base_url=server.url, timeout=60) as http:
            while not done.is_set():
                sent = time.monotonic()
                status = http.get("/healthz").status_code
                probes.append((sent, time.monotonic() - sent, status))
                time.sleep(0.05)  # real time: /healthz's answer time while the polls end is under test

    prober = threading.Thread(target=probe, daemon=True)
    started = time.monotonic()
    prober.start()
    try:
        answers = asyncio.run(burst_of_polls(server.port, ask_id))
    finally:
        done.set()
        prober.join(60)
    assert answers == [b"HTTP/1.1 200 OK"] * POLLS
    # The second around the moment the polls time out: /healthz answers within a second.
    ending = [(took, status) for sent, took, status in probes if sent >= started + POLL_WAIT - 1]
    assert ending, "no /healthz probe while the polls ended"
    assert max(took for took, _ in ending) < 1.0, max(ending)
    assert {status for _, status in ending} == {200}
