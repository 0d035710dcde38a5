"""Delivery without an HTTP server: ``Gateway(deliver=True)``, ``AsyncGateway(deliver=True)``
and a ``parkgate deliver`` process each send answered and expired callbacks, on both stores.

Also: a gateway that queues callbacks while nothing delivers them says so once, and a
``Gateway.wait`` in one process wakes on an answer committed by another gateway object
(its own connections: another process, as far as the store can tell).

In process, the gateways read a :class:`~parkgate.ManualClock` the test moves past the
TTL; the ``parkgate deliver`` process reads the real one. A test runs on SQLite unless
what it shows is the engine's wake across processes (then on both).
"""

from __future__ import annotations

import asyncio
import logging
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from live_server import Receiver, wait_until

from engine_params import STORE_PARAMS
from parkgate import AsyncGateway, Gateway, ManualClock, ReplyKind
from parkgate.core.model import AskStatus
from parkgate.store.signal import FALLBACK_READ_SECONDS


@pytest.fixture(autouse=True)
def receivers_on_loopback_allowed(monkeypatch: pytest.MonkeyPatch) -> None:
    """The test's receivers listen on 127.0.0.1, an internal address: allowed on purpose."""
    monkeypatch.setenv("PARKGATE_CALLBACK_ALLOW", "127.0.0.1")


def statuses(receiver: Receiver) -> dict[str, str]:
    return {hit.data["conversation_id"]: hit.data["status"] for hit in receiver.got()}


def park_two(gateway: Gateway, receiver: Receiver) -> None:
    """One ask answered at once, one left to expire after 1 s."""
    gateway.ask("answered", "Deploy?", ["Deploy", "Hold"], callback_url=receiver.url)
    gateway.ask("expiring", "Ship?", ["Ship", "Wait"], ttl=1, callback_url=receiver.url)
    assert gateway.handle("answered", "1").kind is ReplyKind.SELECTED


def test_a_library_gateway_with_deliver_sends_answered_and_expired_callbacks(database: Any, receiver: Receiver) -> None:
    clock = ManualClock()
    with Gateway(store=database.open(), deliver=True, clock=clock) as gateway:
        park_two(gateway, receiver)
        wait_until(lambda: statuses(receiver) == {"answered": "answered"}, 20, "the answer's callback")
        clock.advance(1.001)  # past the second ask's TTL: the move wakes the deliverer
        wait_until(lambda: len(statuses(receiver)) == 2, FALLBACK_READ_SECONDS / 2, "the expiry's callback")
    assert statuses(receiver) == {"answered": "answered", "expiring": "expired"}


async def test_an_async_gateway_with_deliver_runs_its_deliverer_as_a_task(database: Any, receiver: Receiver) -> None:
    clock = ManualClock()
    async with AsyncGateway(store=database.open(), deliver=True, clock=clock) as gateway:
        await gateway.ask("answered", "Deploy?", ["Deploy", "Hold"], callback_url=receiver.url)
        await gateway.ask("expiring", "Ship?", ["Ship", "Wait"], ttl=1, callback_url=receiver.url)
        await gateway.handle("answered", "1")
        for _ in range(400):  # bounded: the deliverer runs on this loop, so poll without blocking it
            if statuses(receiver) == {"answered": "answered"}:
                break
            await asyncio.sleep(0.05)
        clock.advance(1.001)  # past the second ask's TTL: the move wakes the deliverer
        for _ in range(400):
            if len(statuses(receiver)) == 2:
                break
            await asyncio.sleep(0.05)
    assert statuses(receiver) == {"answered": "answered", "expiring": "expired"}


def deliver_env(database: Any) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PARKGATE_")}
    env["PARKGATE_DB"] = database.url
    env["PARKGATE_CALLBACK_ALLOW"] = "127.0.0.1"
    if database.schema:
        env["PARKGATE_PG_SCHEMA"] = database.schema
    return env


# Both engines: the deliver process hears the library's commits through the engine's
# wake across processes (LISTEN/NOTIFY, SQLite's file watch).
@pytest.mark.parametrize("engine", STORE_PARAMS)
def test_a_parkgate_deliver_process_sends_what_a_library_gateway_queued(
    database: Any, receiver: Receiver, tmp_path: Path
) -> None:
    log = tmp_path / "deliver.log"
    with open(log, "wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "parkgate", "deliver"], env=deliver_env(database), stdout=out, stderr=out
        )
    try:
        with Gateway(store=database.open()) as gateway:  # no deliverer of its own, no HTTP server
            park_two(gateway, receiver)
            wait_until(lambda: len(statuses(receiver)) == 2, 30, "both callbacks, sent by parkgate deliver")
        assert statuses(receiver) == {"answered": "answered", "expiring": "expired"}
    finally:
        process.terminate()
        try:
            process.wait(60)  # bounded: a busy machine is slow to wind down
        finally:
            if process.poll() is None:
                process.kill()  # never left running, whatever the test found
                process.wait(10)
    text = log.read_text()
    assert "parkgate delivering callbacks and due reads" in text
    assert '"event": "ask_expired"' in text  # the due read was the deliver process's
    assert process.returncode == 0 and "parkgate deliver stopped" in text


def test_a_gateway_queueing_callbacks_with_no_deliverer_running_warns_once(
    database: Any, caplog: pytest.LogCaptureFixture
) -> None:
    with Gateway(store=database.open()) as gateway, caplog.at_level(logging.WARNING, logger="parkgate"):
        for n in range(3):
            gateway.ask(f"c-{n}", "Deploy?", ["Deploy", "Hold"], callback_url="http://hooks.test/h")
            gateway.handle(f"c-{n}", "1")
    warnings = [r.getMessage() for r in caplog.records if "no deliverer runs" in r.getMessage()]
    assert len(warnings) == 1
    assert "parkgate deliver" in warnings[0] and "deliver=True" in warnings[0]


def test_no_warning_while_a_deliverer_runs_on_the_database(
    database: Any, caplog: pytest.LogCaptureFixture, receiver: Receiver
) -> None:
    with Gateway(store=database.open(), deliver=True) as delivering:
        wait_until(lambda: delivering.delivering, 10, "the deliverer to start")
        with Gateway(store=database.open()) as gateway, caplog.at_level(logging.WARNING, logger="parkgate"):
            wait_until(lambda: _beat(gateway), 10, "the deliverer's heartbeat")
            gateway.ask("c-1", "Deploy?", ["Deploy", "Hold"], callback_url=receiver.url)
            gateway.handle("c-1", "1")
    assert not [r for r in caplog.records if "no deliverer runs" in r.getMessage()]


def _beat(gateway: Gateway) -> bool:
    with gateway.store.transaction() as tx:
        return tx.heartbeats.last_beat() is not None


# Both engines: the wake across gateways is the engine's (LISTEN/NOTIFY, SQLite's file watch).
@pytest.mark.parametrize("engine", STORE_PARAMS)
def test_a_wait_wakes_when_another_gateway_on_the_database_commits_the_answer(
    database: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    with Gateway(store=database.open()) as asking, Gateway(store=database.open()) as answering:
        parked = asking.ask("c-1", "Deploy?", ["Deploy", "Hold"])
        result: dict[str, Any] = {}

        def wait() -> None:
            started = time.monotonic()
            result["ask"] = asking.wait(parked.ask_id or "", 60)
            result["seconds"] = time.monotonic() - started

        waiter = threading.Thread(target=wait)
        waiter.start()
        assert asking.signal.wait_until_asleep(parked.ask_id or "", 10)  # it read the open ask and sleeps
        assert answering.handle("c-1", "2").kind is ReplyKind.SELECTED
        waiter.join(60)
    assert result["ask"].status is AskStatus.ANSWERED and result["ask"].answer == "Hold"
    assert result["seconds"] < FALLBACK_READ_SECONDS / 2  # the signal, not a fallback read, woke it


def test_a_wait_on_an_unanswered_ask_ends_with_its_own_read_at_the_due_time(database: Any) -> None:
    clock = ManualClock()
    with Gateway(store=database.open(), clock=clock) as gateway:
        parked = gateway.ask("c-1", "Deploy?", ["Deploy", "Hold"], ttl=0.5)
        ask_id = parked.ask_id or ""
        result: dict[str, Any] = {}

        def wait() -> None:
            started = time.monotonic()
            result["ask"] = gateway.wait(ask_id, 30)
            result["seconds"] = time.monotonic() - started

        waiter = threading.Thread(target=wait)
        waiter.start()
        assert gateway.signal.wait_until_asleep(ask_id, 10)  # it read the open ask and sleeps
        clock.advance(0.499)  # the wait reads again and finds the ask still open
        assert waiter.is_alive() and "ask" not in result  # not before the TTL
        clock.advance(0.002)
        waiter.join(30)
    assert result["ask"].status is AskStatus.EXPIRED
    assert result["seconds"] < FALLBACK_READ_SECONDS / 2  # its own read at the due time, no fallback read
