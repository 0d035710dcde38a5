"""Callback receivers as attackers, against a real ``parkgate serve`` on loopback.

A receiver can answer with a gzip bomb or a huge body, drip its answer a byte at a time,
or be a name that resolves to an internal address; a receiver must be able to tell a
real outcome from a forged one; a failing receiver is not retried forever. Each attack
leaves every other callback as it would have been: a bystander's is delivered once.
Memory is read from ``/proc``; receivers are raw sockets in this process.
"""

from __future__ import annotations

import base64
import contextlib
import json
import socket
import threading
import time
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from live_server import Receiver, wait_until

from parkgate.webhooks import WebhookVerificationError, verify

LOOPBACK = {"PARKGATE_CALLBACK_ALLOW": "127.0.0.1"}
SECRET = "whsec_" + base64.b64encode(b"the security suite's 32 byte key").decode()


def rss_kib(pid: int, field: str = "VmRSS") -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1])
    raise AssertionError(f"no {field} for {pid}")


class RawReceiver:
    """A loopback TCP server answering every request with ``answer(conn)`` (in a thread each)."""

    def __init__(self, answer: Callable[[socket.socket], None]) -> None:
        self.answer = answer
        self.requests: list[bytes] = []
        self._listener = socket.socket()
        self._listener.bind(("127.0.0.1", 0))
        self._listener.listen(16)
        self.port = self._listener.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/hook"

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self._listener.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        with conn, contextlib.suppress(OSError):
            data = b""
            while b"\r\n\r\n" not in data:
                data += conn.recv(65536)
            head, _, body = data.partition(b"\r\n\r\n")
            sizes = [line.split(b":")[1] for line in head.split(b"\r\n") if line.lower().startswith(b"content-length")]
            length = int(sizes[0]) if sizes else 0
            while len(body) < length:
                body += conn.recv(65536)
            self.requests.append(head + b"\r\n\r\n" + body)
            self.answer(conn)

    def close(self) -> None:
        self._listener.close()


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    """A well-behaved receiver on loopback: the bystander whose callbacks must arrive unharmed."""
    hooks = Receiver().start()
    yield hooks
    hooks.stop()


@pytest.fixture
def raw_receivers() -> Iterator[list[RawReceiver]]:
    made: list[RawReceiver] = []
    yield made
    for receiver in made:
        receiver.close()


def park_and_close(server: Any, conversation: str, url: str) -> str:
    with server.client() as http:
        parked = http.post(
            "/v1/asks",
            json={"conversation_id": conversation, "prompt": "Deploy?", "options": ["Go", "Hold"], "callback_url": url},
        )
        assert parked.status_code == 201, parked.text
        assert http.post(f"/v1/conversations/{conversation}/messages", json={"text": "1"}).json()["kind"] == "selected"
    return str(parked.json()["ask_id"])


def callback_of(server: Any, ask_id: str) -> dict[str, Any]:
    with server.client() as http:
        return dict(http.get(f"/v1/asks/{ask_id}").json()["callback"])


def gzip_bomb(size: int = 400 * 1024 * 1024) -> bytes:
    """``size`` zero bytes, gzip-compressed (about a thousandth of it), built without holding them."""
    packer = zlib.compressobj(9, zlib.DEFLATED, 31)
    block = b"\0" * (1024 * 1024)
    parts = [packer.compress(block) for _ in range(size // len(block))]
    parts.append(packer.flush())
    return b"".join(parts)


def test_a_gzip_bomb_or_a_huge_answer_leaves_the_servers_memory_flat(
    launch: Any, database: Any, raw_receivers: list[RawReceiver], receiver: Receiver
) -> None:
    bomb = gzip_bomb()

    def answer_bomb(conn: socket.socket) -> None:
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\n" + f"Content-Length: {len(bomb)}\r\n\r\n".encode())
        conn.sendall(bomb)

    def answer_huge(conn: socket.socket) -> None:
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 300000000\r\n\r\n")
        chunk = b"x" * 65536
        for _ in range(300_000_000 // len(chunk)):
            conn.sendall(chunk)

    bombs = [RawReceiver(answer_bomb), RawReceiver(answer_huge)]
    raw_receivers.extend(bombs)
    server = launch(database, extra_env=LOOPBACK)
    assert server.proc is not None
    peak_before = rss_kib(server.proc.pid, "VmHWM")
    attacked = [park_and_close(server, f"bomb-{n}", target.url) for n, target in enumerate(bombs)]
    bystander = park_and_close(server, "bystander", receiver.url)
    wait_until(lambda: all(callback_of(server, ask_id)["status"] == "delivered" for ask_id in attacked), 60, "both")
    wait_until(lambda: callback_of(server, bystander)["status"] == "delivered", 30, "the bystander's callback")
    grown = rss_kib(server.proc.pid, "VmHWM") - peak_before
    assert grown < 40 * 1024, f"the server's peak memory grew by {grown} KiB"
    assert [hit.data["ask_id"] for hit in receiver.got()] == [bystander]  # once, unharmed
    heads = [request.split(b"\r\n\r\n")[0].lower() for target in bombs for request in target.requests]
    assert all(b"accept-encoding: identity" in head for head in heads)


def test_a_slow_receiver_delays_no_other_callback_and_is_not_sent_twice(
    launch: Any, database: Any, raw_receivers: list[RawReceiver], receiver: Receiver
) -> None:
    def drip(conn: socket.socket) -> None:
        for byte in b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n":
            conn.sendall(bytes([byte]))
            time.sleep(5)  # real time: a receiver this slow is what is under test

    slow = RawReceiver(drip)
    raw_receivers.append(slow)
    server = launch(database, extra_env=LOOPBACK)
    slow_ask = park_and_close(server, "slow", slow.url)
    wait_until(lambda: slow.requests, 20, "the slow delivery to be under way")
    started = time.monotonic()
    bystander = park_and_close(server, "bystander", receiver.url)
    wait_until(lambda: receiver.got(), 20, "the bystander's callback")
    assert time.monotonic() - started < 5  # well inside one drip: nothing waited for the slow one
    wait_until(lambda: callback_of(server, slow_ask)["attempts"] >= 1, 30, "the slow delivery to end")
    state = callback_of(server, slow_ask)
    assert state["status"] == "pending" and "within 10 s" in state["last_error"]  # one deadline a delivery
    assert len(slow.requests) == 1  # its lease outlasted the deadline: no second send meanwhile
    assert [hit.data["ask_id"] for hit in receiver.got()] == [bystander]


def test_callbacks_are_signed_and_a_forged_outcome_does_not_verify(
    launch: Any, database: Any, receiver: Receiver
) -> None:
    server = launch(database, extra_env={**LOOPBACK, "PARKGATE_WEBHOOK_SECRET": SECRET})
    ask_id = park_and_close(server, "signed", receiver.url)
    (hit,) = wait_until(lambda: receiver.got(), 20, "the callback")
    assert hit.headers["webhook-id"] == f"{ask_id}.closed"
    assert verify(hit.raw_body, hit.headers, SECRET)["data"]["answer"] == "Go"
    forged = json.dumps({**hit.body, "data": {**hit.data, "answer": "Hold"}}).encode()
    with pytest.raises(WebhookVerificationError):
        verify(forged, hit.headers, SECRET)
    unsigned = {k: v for k, v in hit.headers.items() if k != "webhook-signature"}
    with pytest.raises(WebhookVerificationError):
        verify(hit.raw_body, unsigned, SECRET)


def loopback_name() -> str:
    """A host name (not ``localhost``) that this machine resolves to a loopback address."""
    for name in (socket.gethostname(), *(line.split()[1] for line in _hosts_lines())):
        if name.startswith("localhost") or name.endswith(".localhost"):
            continue
        with contextlib.suppress(OSError):
            if socket.gethostbyname(name).startswith("127."):
                return name
    raise AssertionError("no host name here resolves to 127.x (the fence test needs one in /etc/hosts)")


def _hosts_lines() -> list[str]:
    lines = Path("/etc/hosts").read_text().splitlines()
    return [line for line in lines if line.strip() and not line.startswith("#") and len(line.split()) > 1]


def test_a_name_that_resolves_to_loopback_is_refused_at_delivery(
    launch: Any, database: Any, receiver: Receiver
) -> None:
    name = loopback_name()
    server = launch(database)  # no allow-list: internal addresses are refused
    ask_id = park_and_close(server, "rebound", f"http://{name}:{receiver.port}/hook")  # a name passes at park time
    wait_until(lambda: callback_of(server, ask_id)["attempts"] >= 1, 20, "the delivery attempt")
    state = callback_of(server, ask_id)
    assert state["status"] == "pending" and "internal address" in state["last_error"]
    assert receiver.got() == []  # never connected


def test_a_failing_receiver_is_given_up_on_then_an_operator_rearms_it(
    launch: Any, database: Any, raw_receivers: list[RawReceiver]
) -> None:
    def refuse(conn: socket.socket) -> None:
        conn.sendall(b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n\r\n")

    failing = RawReceiver(refuse)
    raw_receivers.append(failing)
    server = launch(database, extra_env={**LOOPBACK, "PARKGATE_CALLBACK_MAX_ATTEMPTS": "2"})
    ask_id = park_and_close(server, "failing", failing.url)
    wait_until(lambda: callback_of(server, ask_id)["status"] == "failed", 30, "the callback to fail")
    state = callback_of(server, ask_id)
    assert (state["attempts"], state["last_error"]) == (2, "HTTP 503")
    with server.client() as http:
        assert 'parkgate_callbacks{status="failed"} 1.0' in http.get("/metrics").text
        rearmed = http.post(f"/v1/asks/{ask_id}/callback/retry")
        assert rearmed.status_code == 200 and rearmed.json()["callback"]["status"] == "pending"
        again = http.post(f"/v1/asks/{ask_id}/callback/retry")
        assert again.status_code == 409 and again.json()["error"] == "callback_not_failed"
    wait_until(lambda: len(failing.requests) >= 3, 30, "the re-armed attempt")
