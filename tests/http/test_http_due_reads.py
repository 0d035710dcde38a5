"""The side that waits hears the end: real servers on loopback, on SQLite and PostgreSQL.

An ask with a callback that nobody ever reads is closed by its due read and its
``expired`` callback is delivered; a touch moves that later; a server killed before the
due time delivers it after its restart; two servers on one database expire each ask
once and send one callback each; a long-poll on one server wakes on the other's commit.

Times here are bounds on behaviour (not early; not by a fallback read), never speed
goals: the lateness and wake-up figures live in ``bench/``.
"""

from __future__ import annotations

import json
import threading
import time
from typing import Any

import httpx
import pytest
from live_server import Receiver, Server, messages_path, wait_until

from parkgate.signal import FALLBACK_READ_SECONDS
from polling import holds

TTL = 2.0
#: The receivers listen on 127.0.0.1, an internal address: the servers allow it on purpose.
LOOPBACK_RECEIVERS = {"PARKGATE_CALLBACK_ALLOW": "127.0.0.1"}


def park(server: Server, conv: str, receiver: Receiver, ttl: float = TTL) -> tuple[str, float]:
    body = {
        "conversation_id": conv,
        "prompt": "Deploy?",
        "options": ["Deploy", "Hold"],
        "ttl_seconds": ttl,
        "callback_url": receiver.url,
    }
    with server.client() as client:
        response = client.post("/v1/asks", json=body)
    assert response.status_code == 201, response.text
    return str(response.json()["ask_id"]), time.monotonic()


def callbacks_for(receiver: Receiver, ask_id: str) -> list[dict[str, Any]]:
    return [hit.data for hit in receiver.got() if hit.data["ask_id"] == ask_id]


def expiry_lines(*servers: Server) -> list[dict[str, Any]]:
    found = []
    for server in servers:
        for line in server.log_text().splitlines():
            if '"ask_expired"' in line:
                found.append(json.loads(line[line.index("{") :]))
    return found


def test_an_ask_nobody_reads_is_expired_at_its_ttl_and_its_callback_sent(
    database: Any, start_server: Any, receiver: Receiver, conv: str
) -> None:
    server = start_server(database, extra_env=LOOPBACK_RECEIVERS)
    ask_id, parked_at = park(server, conv, receiver)
    hits = wait_until(lambda: callbacks_for(receiver, ask_id), 20, "the expiry callback")
    arrived = time.monotonic() - parked_at
    assert arrived >= TTL  # never before the TTL: a due read closes only what is past it
    assert arrived < TTL + FALLBACK_READ_SECONDS  # on the due time, not on a fallback sweep
    assert [(hit["status"], hit["outcome"]) for hit in hits] == [("expired", "expired")]
    assert [line["ask_id"] for line in expiry_lines(server)] == [ask_id]  # the one ask_expired line
    assert database.raw_query("SELECT status FROM asks WHERE id = ?", (ask_id,)) == [("expired",)]
    with server.client() as client:  # the person's next message finds nothing parked
        assert client.post(messages_path(conv), json={"text": "1"}).json()["kind"] == "pass"


def test_a_miss_moves_the_due_read_later(database: Any, start_server: Any, receiver: Receiver, conv: str) -> None:
    server = start_server(database, extra_env=LOOPBACK_RECEIVERS)
    ask_id, parked_at = park(server, conv, receiver)
    time.sleep(1.5)  # real time: the server's own clock runs on towards the TTL before the miss
    with server.client() as client:
        assert client.post(messages_path(conv), json={"text": "what?"}).json()["kind"] == "retry"
    touched_at = time.monotonic()
    wait_until(lambda: callbacks_for(receiver, ask_id), 20, "the expiry callback")
    arrived = time.monotonic()
    assert arrived - touched_at >= TTL  # due 2 s after the miss (3.5 s after parking), not at 2 s
    assert arrived - parked_at >= 1.5 + TTL


def test_a_server_killed_before_the_due_time_delivers_after_its_restart(
    database: Any, start_server: Any, receiver: Receiver, conv: str
) -> None:
    server = start_server(database, extra_env=LOOPBACK_RECEIVERS)
    ask_id, _ = park(server, conv, receiver)
    server.kill()  # SIGKILL: nothing runs on the way out
    time.sleep(TTL + 1)  # real time: the TTL passes while no server runs
    assert callbacks_for(receiver, ask_id) == []
    server.start()
    hits = wait_until(lambda: callbacks_for(receiver, ask_id), 20, "the expiry callback after the restart")
    assert [hit["status"] for hit in hits] == ["expired"]


def _delivered(location: Any) -> list[str]:
    """The asks whose outbox row is marked delivered; each ask has one row."""
    rows = location.raw_query("SELECT ask_id, delivered_at FROM outbox ORDER BY ask_id")
    return [ask_id for ask_id, delivered_at in rows if delivered_at is not None]


@pytest.mark.postgres
def test_two_servers_on_one_schema_expire_each_ask_once_and_send_one_callback_each(
    store_url_factory: Any, start_server: Any, receiver: Receiver
) -> None:
    location = store_url_factory("postgres")
    first, second = (start_server(location, extra_env=LOOPBACK_RECEIVERS) for _ in range(2))
    asks = [park(first if n % 2 else second, f"c-two-{n}", receiver)[0] for n in range(20)]
    wait_until(lambda: all(callbacks_for(receiver, ask_id) for ask_id in asks), 30, "every expiry callback")
    # Every row is marked delivered: no deliverer sends a delivered row again (test_http_callbacks.py).
    wait_until(lambda: _delivered(location) == sorted(asks), 30, "every outbox row marked delivered")
    assert sorted(hit.data["ask_id"] for hit in receiver.got()) == sorted(asks)  # one callback per ask
    assert sorted(line["ask_id"] for line in expiry_lines(first, second)) == sorted(asks)  # expired once


def test_a_long_poll_on_one_server_wakes_when_another_commits_the_answer(
    database: Any, start_server: Any, conv: str
) -> None:
    first, second = (start_server(database, extra_env=LOOPBACK_RECEIVERS) for _ in range(2))
    with first.client() as client:
        parked = client.post("/v1/asks", json={"conversation_id": conv, "prompt": "Deploy?", "options": ["A", "B"]})
    ask_id = parked.json()["ask_id"]
    result: dict[str, Any] = {}

    def long_poll() -> None:
        started = time.monotonic()
        with httpx.Client(base_url=second.url, timeout=60) as client:
            result["ask"] = client.get(f"/v1/asks/{ask_id}", params={"wait": 50}).json()
        result["seconds"] = time.monotonic() - started

    waiter = threading.Thread(target=long_poll)
    waiter.start()
    assert holds(waiter, 0.5)  # the long-poll holds on the open ask (a server shows no "asleep" state)
    with first.client() as client:
        assert client.post(messages_path(conv), json={"text": "2"}).json()["kind"] == "selected"
    waiter.join(60)
    assert result["ask"]["status"] == "answered" and result["ask"]["answer"] == "B"
    # Woken by the close signal: no read cycle (the fallback read comes after 15 s) ended it.
    assert result["seconds"] < FALLBACK_READ_SECONDS / 2
