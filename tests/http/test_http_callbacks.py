"""Callbacks from the durable outbox through real servers: a restart loses none.

The receiver is a small HTTP server on loopback. The first server (a process) closes
asks while the receiver is down (its attempts fail and are rescheduled), is killed with
SIGKILL before any delivery, and a second server on the same database delivers them.
The second server, and the one whose receiver fails once, serve from a thread and read a
:class:`~parkgate.ManualClock` the test moves past the retry's backoff.
"""

from __future__ import annotations

import asyncio
import sqlite3
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
from live_server import Receiver, free_port, messages_path, wait_until

from parkgate import ManualClock
from parkgate.delivery.outbox import OutboxDeliverer

#: The receivers here listen on loopback, which callbacks may reach only when the server allows it.
LOOPBACK_RECEIVERS = {"PARKGATE_CALLBACK_ALLOW": "127.0.0.1"}
#: Past the backoff of a callback's first retries.
RETRIES_DUE = timedelta(hours=1)


def outbox(path: Any) -> list[tuple[Any, ...]]:
    conn = sqlite3.connect(path)
    try:
        return conn.execute("SELECT ask_id, attempts, delivered_at, last_error FROM outbox ORDER BY id").fetchall()
    finally:
        conn.close()


async def _a_deliverer_pass(database: Any, url: str) -> int:
    """How many callbacks one outbox pass on ``database`` sends, a day from now (to ``url`` only)."""
    sent: list[httpx.Request] = []

    def record(request: httpx.Request) -> httpx.Response:
        assert str(request.url) == url
        sent.append(request)
        return httpx.Response(200)

    later = ManualClock(datetime.now(UTC) + timedelta(days=1))
    store = database.open()
    try:
        client = httpx.AsyncClient(transport=httpx.MockTransport(record))
        count = await OutboxDeliverer(store, later, client=client).deliver_due()
    finally:
        store.close()
    assert len(sent) == count
    return count


def test_a_callback_is_delivered_after_a_restart(sqlite_database: Any, start_server: Any) -> None:
    receiver = Receiver(port=free_port())  # not listening yet: deliveries fail
    first = start_server(sqlite_database, extra_env=LOOPBACK_RECEIVERS, in_thread=False)  # a process, to kill
    with first.client() as http:
        answered = http.post(
            "/v1/asks",
            json={
                "conversation_id": "cb-1",
                "prompt": "Deploy?",
                "options": ["Yes", "No"],
                "callback_url": receiver.url,
            },
        ).json()
        cancelled = http.post(
            "/v1/asks", json={"conversation_id": "cb-2", "prompt": "Why?", "callback_url": receiver.url}
        ).json()
        still_open = http.post(
            "/v1/asks", json={"conversation_id": "cb-3", "prompt": "Later?", "callback_url": receiver.url}
        ).json()
        assert http.post(messages_path("cb-1"), json={"text": "yes"}).json()["kind"] == "selected"
        assert http.post(messages_path("cb-2"), json={"text": "/cancel"}).json()["kind"] == "cancelled"
    # The first server tried, failed (receiver down) and rescheduled both; nothing was delivered.
    wait_until(
        lambda: (rows := outbox(sqlite_database.path)) and len(rows) == 2 and all(r[1] >= 1 for r in rows),
        30,
        "both callbacks to be attempted",
    )
    assert all(row[2] is None and row[3] for row in outbox(sqlite_database.path))
    first.kill()

    receiver.start()
    try:
        # Its clock is past the retries the first server scheduled: they are due at its start.
        later = ManualClock(datetime.now(UTC) + RETRIES_DUE)
        second = start_server(sqlite_database, extra_env=LOOPBACK_RECEIVERS, clock=later)
        got = wait_until(lambda: len(receiver.got()) >= 2 and receiver.got(), 60, "the callbacks to arrive")
        by_ask = {item.data["ask_id"]: item for item in got}
        assert set(by_ask) == {answered["ask_id"], cancelled["ask_id"]}  # an open ask has no callback
        done = by_ask[answered["ask_id"]]
        assert (done.data["status"], done.data["answer"], done.data["option_index"]) == ("answered", "Yes", 1)
        assert done.type == "ask.closed" and done.headers["idempotency-key"] == f"{answered['ask_id']}.closed"
        assert done.headers["content-type"] == "application/json"
        assert by_ask[cancelled["ask_id"]].data["status"] == "cancelled"
        assert by_ask[cancelled["ask_id"]].headers["idempotency-key"] == f"{cancelled['ask_id']}.closed"
        wait_until(lambda: all(r[2] is not None for r in outbox(sqlite_database.path)), 20, "rows marked delivered")

        # The operator's cancel of the third ask is delivered by the running server too.
        with second.client() as http:
            assert http.post(f"/v1/asks/{still_open['ask_id']}/cancel").json()["status"] == "cancelled"
        wait_until(
            lambda: any(item.data["ask_id"] == still_open["ask_id"] for item in receiver.got()),
            30,
            "the operator cancel's callback",
        )
    finally:
        receiver.stop()


def test_a_receiver_that_fails_gets_the_same_callback_again(sqlite_database: Any, start_server: Any) -> None:
    receiver = Receiver(status=503).start()
    try:
        clock = ManualClock(datetime.now(UTC))
        server = start_server(sqlite_database, extra_env=LOOPBACK_RECEIVERS, clock=clock)
        with server.client() as http:
            ask = http.post(
                "/v1/asks",
                json={"conversation_id": "cb-r", "prompt": "Ok?", "options": ["Ok"], "callback_url": receiver.url},
            ).json()
            http.post(messages_path("cb-r"), json={"text": "1"})
        wait_until(lambda: len(receiver.got()) >= 1, 30, "the first attempt")
        receiver.status = 200
        wait_until(lambda: outbox(sqlite_database.path)[0][1] == 1, 30, "the 503 recorded and the retry scheduled")
        clock.advance(RETRIES_DUE)  # past the retry's backoff
        wait_until(lambda: len(receiver.got()) >= 2, 30, "a retry after the 503")
        attempts = receiver.got()
        assert {item.headers["idempotency-key"] for item in attempts} == {f"{ask['ask_id']}.closed"}
        assert attempts[0].body == attempts[1].body
        wait_until(lambda: outbox(sqlite_database.path)[0][2] is not None, 20, "the row marked delivered")
        # A delivered row is due to no deliverer, however late: a day on, a pass sends nothing.
        assert asyncio.run(_a_deliverer_pass(sqlite_database, receiver.url)) == 0
    finally:
        receiver.stop()
