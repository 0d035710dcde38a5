"""The side that waits hears the end: real servers on loopback.

An ask with a callback that nobody ever reads is closed by its due read and its
``expired`` callback is delivered; a touch moves that later; a server killed before the
due time delivers it after its restart; two servers on one database expire each ask
once and send one callback each; a long-poll on one server wakes on the other's commit.

The servers serve from a thread and read a :class:`~parkgate.ManualClock` the test
moves, except where the process is the point (kill -9, several processes on one schema).
A move wakes the server's deliverer: what the move made due arrives well before a
fallback read would come (the bound on each wait), and nothing arrives before it is due.
"""

from __future__ import annotations

import json
import threading
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
from live_server import Receiver, Server, messages_path, wait_until

from engine_params import STORE_PARAMS
from parkgate import ManualClock
from parkgate.store.signal import FALLBACK_READ_SECONDS

TTL = 2.0
#: A step of the manual clock just short of a due time, or just past it.
TICK = 0.001
#: The receivers listen on 127.0.0.1, an internal address: the servers allow it on purpose.
LOOPBACK_RECEIVERS = {"PARKGATE_CALLBACK_ALLOW": "127.0.0.1"}
#: The bound on a wait for what a clock move made due: well inside a fallback read.
WOKEN = FALLBACK_READ_SECONDS / 2


def park(server: Server, conv: str, receiver: Receiver, ttl: float = TTL) -> str:
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
    return str(response.json()["ask_id"])


def status(server: Server, ask_id: str) -> str:
    """The ask's status as a read sees it (a read past the TTL would close it)."""
    with server.client() as client:
        return str(client.get(f"/v1/asks/{ask_id}").json()["status"])


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
    clock = ManualClock(datetime.now(UTC))
    server = start_server(database, extra_env=LOOPBACK_RECEIVERS, clock=clock)
    ask_id = park(server, conv, receiver)
    clock.advance(TTL - TICK)
    assert status(server, ask_id) == "open"  # never before the TTL: a due read closes only what is past it
    clock.advance(2 * TICK)
    # On the due time (the move woke the deliverer), not on a fallback sweep.
    hits = wait_until(lambda: callbacks_for(receiver, ask_id), WOKEN, "the expiry callback")
    assert [(hit["status"], hit["outcome"]) for hit in hits] == [("expired", "expired")]
    assert [line["ask_id"] for line in expiry_lines(server)] == [ask_id]  # the one ask_expired line
    assert database.raw_query("SELECT status FROM asks WHERE id = ?", (ask_id,)) == [("expired",)]
    with server.client() as client:  # the person's next message finds nothing parked
        assert client.post(messages_path(conv), json={"text": "1"}).json()["kind"] == "pass"


def test_a_miss_moves_the_due_read_later(database: Any, start_server: Any, receiver: Receiver, conv: str) -> None:
    clock = ManualClock(datetime.now(UTC))
    server = start_server(database, extra_env=LOOPBACK_RECEIVERS, clock=clock)
    ask_id = park(server, conv, receiver)
    clock.advance(1.5)  # towards the TTL before the miss
    with server.client() as client:
        assert client.post(messages_path(conv), json={"text": "what?"}).json()["kind"] == "retry"
    clock.advance(TTL - TICK)  # 3.5 s after parking, past where the TTL was: not due
    assert status(server, ask_id) == "open" and callbacks_for(receiver, ask_id) == []
    clock.advance(2 * TICK)  # due 2 s after the miss
    hits = wait_until(lambda: callbacks_for(receiver, ask_id), WOKEN, "the expiry callback")
    assert [hit["status"] for hit in hits] == ["expired"]


def test_a_server_killed_before_the_due_time_delivers_after_its_restart(
    database: Any, start_server: Any, receiver: Receiver, conv: str
) -> None:
    server = start_server(database, extra_env=LOOPBACK_RECEIVERS, in_thread=False)  # a process, to kill
    ask_id = park(server, conv, receiver)
    server.kill()  # SIGKILL: nothing runs on the way out
    assert callbacks_for(receiver, ask_id) == []
    # The restart finds the TTL passed while no server ran (its clock is past it).
    later = ManualClock(datetime.now(UTC) + timedelta(seconds=TTL + 1))
    start_server(database, extra_env=LOOPBACK_RECEIVERS, clock=later)
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
    # Two processes: the point is deliverers in several processes on one schema.
    first, second = (start_server(location, extra_env=LOOPBACK_RECEIVERS, in_thread=False) for _ in range(2))
    asks = [park(first if n % 2 else second, f"c-two-{n}", receiver, ttl=0.5) for n in range(20)]
    wait_until(lambda: all(callbacks_for(receiver, ask_id) for ask_id in asks), 30, "every expiry callback")
    # Every row is marked delivered: no deliverer sends a delivered row again (test_http_callbacks.py).
    wait_until(lambda: _delivered(location) == sorted(asks), 30, "every outbox row marked delivered")
    assert sorted(hit.data["ask_id"] for hit in receiver.got()) == sorted(asks)  # one callback per ask
    assert sorted(line["ask_id"] for line in expiry_lines(first, second)) == sorted(asks)  # expired once


# Both engines: the wake across servers is the engine's (LISTEN/NOTIFY, SQLite's file watch).
@pytest.mark.parametrize("engine", STORE_PARAMS)
def test_a_long_poll_on_one_server_wakes_when_another_commits_the_answer(
    database: Any, start_server: Any, conv: str
) -> None:
    # Each in-thread server has its own gateway and connections: another process, as far
    # as the store can tell.
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
    assert second.gateway.signal.wait_until_asleep(ask_id, 10)  # the long-poll read the open ask and sleeps
    with first.client() as client:
        assert client.post(messages_path(conv), json={"text": "2"}).json()["kind"] == "selected"
    waiter.join(60)
    assert result["ask"]["status"] == "answered" and result["ask"]["answer"] == "B"
    # Woken by the close signal: no read cycle (the fallback read comes after 15 s) ended it.
    assert result["seconds"] < FALLBACK_READ_SECONDS / 2
