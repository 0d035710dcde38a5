"""Fair callback delivery, against a real ``parkgate serve`` on loopback.

One tenant's receiver that holds every connection it gets holds at most
``PER_HOST_CONCURRENCY`` delivery slots, and another host's callback is delivered while
those deliveries are still held (before a single one of them ends). A token that parks
with ``replace`` in a loop, each close queuing a callback its receiver never takes, is
stopped by its ``max_open_asks``: its undelivered callbacks count. A callback URL on port
0 is refused at the park, and the URLs the server logs carry no query string (receivers
put capability tokens there). Receivers are raw sockets in this process; ``127.0.0.1``
and ``127.0.0.2`` are two hosts.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from live_server import free_port, wait_until

from parkgate.delivery.outbox import DELIVERY_DEADLINE_SECONDS, PER_HOST_CONCURRENCY

ALLOW_LOOPBACK = {"PARKGATE_CALLBACK_ALLOW": "127.0.0.0/8"}
#: Callbacks queued to the receiver that holds its connections: more than every slot.
FLOOD = 40


class HoldingReceiver:
    """A loopback receiver on ``address``: answers 200 at once, or (``hold``) reads each
    request and then holds its connection until the server closes it or the test ends.

    It records when each request arrived, when the server first closed a held connection
    (its delivery deadline), and the most connections held at once.
    """

    def __init__(self, address: str, hold: bool = False) -> None:
        self.hold = hold
        self.arrivals: list[float] = []
        self.first_close: float | None = None
        self.held = 0
        self.peak = 0
        self._lock = threading.Lock()
        self._conns: list[socket.socket] = []
        self._listener = socket.socket()
        self._listener.bind((address, 0))
        self._listener.listen(128)
        self.url = f"http://{address}:{self._listener.getsockname()[1]}/hook"
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self._listener.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        with conn, contextlib.suppress(OSError):
            self._conns.append(conn)
            data = b""
            while b"\r\n\r\n" not in data:
                chunk = conn.recv(65536)
                if not chunk:
                    return
                data += chunk
            with self._lock:
                self.arrivals.append(time.monotonic())
            if not self.hold:
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
                return
            with self._lock:
                self.held += 1
                self.peak = max(self.peak, self.held)
            while conn.recv(65536):  # the rest of the body; then b"" once the server gives up
                pass
            with self._lock:
                self.held -= 1
                if self.first_close is None:
                    self.first_close = time.monotonic()

    def close(self) -> None:
        self._listener.close()
        for conn in self._conns:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)


@pytest.fixture
def receivers() -> Iterator[list[HoldingReceiver]]:
    made: list[HoldingReceiver] = []
    yield made
    for receiver in made:
        receiver.close()


def park(http: Any, conversation: str, url: str, *, replace: bool = False) -> Any:
    return http.post(
        "/v1/asks",
        json={
            "conversation_id": conversation,
            "prompt": "Deploy?",
            "options": ["Go", "Hold"],
            "callback_url": url,
            "replace": replace,
        },
    )


def test_a_receiver_holding_every_connection_delays_another_hosts_callback_by_less_than_one_attempt(
    launch: Any, database: Any, receivers: list[HoldingReceiver]
) -> None:
    slow = HoldingReceiver("127.0.0.1", hold=True)
    fine = HoldingReceiver("127.0.0.2")
    receivers += [slow, fine]
    server = launch(database, extra_env=ALLOW_LOOPBACK)
    with server.client() as http:
        for _ in range(FLOOD + 1):  # each replace closes the last ask: a callback to the slow receiver
            assert park(http, "flood", slow.url, replace=True).status_code == 201
        wait_until(lambda: slow.peak >= PER_HOST_CONCURRENCY, 20, "the slow receiver to hold its connections")
        parked = park(http, "bystander", fine.url)
        assert parked.status_code == 201, parked.text
        assert http.post("/v1/conversations/bystander/messages", json={"text": "1"}).json()["kind"] == "selected"
    wait_until(lambda: fine.arrivals, 4 * DELIVERY_DEADLINE_SECONDS, "the bystander's callback")
    # Delivered while the slow receiver still held its first connections: less than one attempt late.
    assert slow.first_close is None or fine.arrivals[0] < slow.first_close
    assert slow.peak == PER_HOST_CONCURRENCY  # never more of the slots than its host's share
    with server.client() as http:
        callback = http.get(f"/v1/asks/{parked.json()['ask_id']}").json()["callback"]
    assert callback["status"] == "delivered"


def test_replace_in_a_loop_is_stopped_by_the_tokens_cap_while_its_callbacks_go_undelivered(
    launch: Any, database: Any, tokens_file: Any
) -> None:
    server = launch(database, extra_env={**tokens_file.env(), **ALLOW_LOOPBACK})
    nobody = f"http://127.0.0.1:{free_port()}/hook"  # nothing listens: every attempt fails and is retried
    agent_token, other_token = tokens_file.tokens["agent"], tokens_file.tokens["other-agent"]
    with server.client(agent_token) as agent, server.client(other_token) as other:
        statuses = [park(agent, "loop", nobody, replace=True).status_code for _ in range(20)]
        # max_open_asks is 3: the open ask and two undelivered callbacks of replaced asks.
        assert statuses[:3] == [201, 201, 201] and set(statuses[3:]) == {429}
        refused = park(agent, "loop", nobody, replace=True)
        assert "undelivered callbacks" in refused.json()["detail"]
        assert refused.headers["retry-after"]
        assert park(other, "elsewhere", nobody).status_code == 201  # another token is not held back
    rows = database.raw_query("SELECT count(*) FROM outbox WHERE owner = 'agent'")
    assert int(rows[0][0]) == 2
    asks = database.raw_query("SELECT count(*) FROM asks WHERE owner = 'agent'")
    assert int(asks[0][0]) == 3


def test_a_callback_url_on_port_zero_or_out_of_range_is_refused(launch: Any, database: Any) -> None:
    server = launch(database)
    with server.client() as http:
        for url in ("http://example.com:0/hook", "http://example.com:00/hook", "https://example.com:65536/"):
            refused = park(http, "ports", url)
            assert refused.status_code == 422, (url, refused.text)
            assert "port" in refused.json()["detail"]
        assert park(http, "ports", "http://example.com:8080/hook").status_code == 201


def test_logged_callback_urls_carry_no_query_or_user_info(
    launch: Any, database: Any, receivers: list[HoldingReceiver]
) -> None:
    fine = HoldingReceiver("127.0.0.2")
    receivers.append(fine)
    server = launch(database, extra_env={**ALLOW_LOOPBACK, "PARKGATE_CALLBACK_MAX_ATTEMPTS": "1"})
    secret = "cap-8f1c0ffee"
    dead = f"http://127.0.0.1:{free_port()}/gone?token={secret}-dead"
    with server.client() as http:
        for conversation, url in (("ok", f"{fine.url}?token={secret}#{secret}-fragment"), ("dead", dead)):
            assert park(http, conversation, url).status_code == 201
            assert http.post(f"/v1/conversations/{conversation}/messages", json={"text": "1"}).status_code == 200
    wait_until(lambda: fine.arrivals, 30, "the callback")
    wait_until(lambda: "callback failed for good" in server.log_text(), 30, "the failed callback's log line")
    wait_until(lambda: "callback delivered" in server.log_text(), 30, "the delivered callback's log line")
    logged = server.log_text()
    assert f"{fine.url}" in logged and "/gone" in logged  # the receiver is named...
    assert secret not in logged  # ...but not its capability
