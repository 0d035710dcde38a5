"""The deliverer outlives its store's outages and its own errors.

A heartbeat or a pass that fails (the store away) is logged once per outage with its
cause, retried with backoff, and the loop goes on: the due read and the ``expired``
callback it owed happen once the store answers. An error that escapes the loop is
logged with its traceback and the loop is restarted. Time is the manual clock's; the
backoff is milliseconds (:data:`flaky_store.QUICK`), so no test waits out a real one.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from datetime import timedelta

import pytest
from flaky_store import ERROR, HOOK, INFO, QUICK, WARNING, FailingBeats, Hook, lines, until

from parkgate import Gateway, ManualClock
from parkgate.core.model import AskStatus
from parkgate.delivery import Deliverer
from parkgate.delivery.health import Backoff, DelivererState
from parkgate.gateway.delivering import deliverer_for
from parkgate.store import StoreUnavailable


@contextlib.asynccontextmanager
async def running(deliverer: Deliverer) -> AsyncIterator[asyncio.Task[None]]:
    """``deliverer.run()`` as a task for the block; cancelled (as a server stops it) after."""
    task = asyncio.create_task(deliverer.run())
    try:
        yield task
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


def park_due(gateway: Gateway, clock: ManualClock, conversation: str = "c-1") -> str:
    """Park an ask with a callback and move the clock past its TTL: its due read is owed."""
    parked = gateway.ask(conversation, "Deploy?", ["Deploy", "Hold"], ttl=10, callback_url=HOOK)
    clock.advance(timedelta(seconds=11))
    return parked.ask_id or ""


def last_pass_gauge(gateway: Gateway) -> float | None:
    """``parkgate_deliverer_last_pass_timestamp_seconds`` as a scrape shows it (``None``: absent)."""
    for line in gateway.metrics.exposition().decode().splitlines():
        if line.startswith("parkgate_deliverer_last_pass_timestamp_seconds "):
            return float(line.split(" ")[1])
    return None


def test_the_backoff_doubles_from_one_second_to_a_cap_of_five() -> None:
    assert [Backoff().delay(n) for n in range(1, 7)] == [1.0, 2.0, 4.0, 5.0, 5.0, 5.0]
    assert Backoff().delay(10_000) == 5.0  # a long outage never overflows or grows the wait


async def test_a_heartbeat_that_fails_is_logged_once_and_the_due_read_and_callback_follow(
    gateway: Gateway, clock: ManualClock, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    beats = FailingBeats(gateway.store, monkeypatch, failures=4)
    ask_id = park_due(gateway, clock)
    hook = Hook()
    deliverer = deliverer_for(gateway, client=hook.client(), backoff=QUICK)
    assert last_pass_gauge(gateway) is None  # no pass yet: no gauge, not a zero
    caplog.set_level("INFO", logger="parkgate.deliver")
    async with running(deliverer):
        await until(lambda: hook.requests and deliverer.health.healthy, "the expired callback after the outage")
    assert beats.tries >= 5  # four failed beats, retried, then one that worked
    assert hook.statuses() == ["expired"]
    assert gateway.get(ask_id).status is AskStatus.EXPIRED
    (warning,) = lines(caplog, WARNING)  # one line for the whole outage, not one per try
    assert "heartbeat" in warning and "StoreUnavailable: the database is locked" in warning
    (recovered,) = [line for line in lines(caplog, INFO) if "recovered" in line]
    assert "4 failed tries" in recovered
    assert deliverer.health.state is DelivererState.STOPPED  # cancelled on purpose
    assert deliverer.health.last_pass is not None and deliverer.health.failing_since is None
    assert last_pass_gauge(gateway) == clock.now().timestamp()


async def test_each_outage_is_logged_once_and_the_gauge_stands_still_while_it_lasts(
    gateway: Gateway, clock: ManualClock, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    beats = FailingBeats(gateway.store, monkeypatch)
    deliverer = deliverer_for(gateway, client=Hook().client(), backoff=QUICK)
    deliverer.heartbeat_seconds = 0.0  # every pass beats: each outage is seen at once
    caplog.set_level("INFO", logger="parkgate.deliver")
    async with running(deliverer):
        await until(lambda: deliverer.health.state is DelivererState.RUNNING, "the first pass")
        first = last_pass_gauge(gateway)
        for outage in range(1, 3):
            beats.fail(3)
            clock.advance(timedelta(seconds=60))
            gateway.ask(f"wake-{outage}", "Q?", ["A", "B"], ttl=600, callback_url=HOOK)  # wakes the loop
            await until(lambda: beats.left == 0, "the outage's failed beats")
            await until(lambda: deliverer.health.state is DelivererState.RUNNING, "the recovery")
    assert first == (clock.now() - timedelta(seconds=120)).timestamp()
    assert last_pass_gauge(gateway) == clock.now().timestamp()  # set again once a pass worked
    assert len(lines(caplog, WARNING)) == 2  # two outages, two warnings
    assert len([line for line in lines(caplog, INFO) if "recovered" in line]) == 2


async def test_a_failing_pass_reports_the_deliverer_unhealthy_until_one_succeeds(
    gateway: Gateway, clock: ManualClock, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    ask_id = park_due(gateway, clock)
    deliverer = deliverer_for(gateway, client=(hook := Hook()).client(), backoff=QUICK)
    real_read_due = gateway.read_due
    seen: list[tuple[bool, str]] = []

    def read_due(limit: int = 100) -> int:
        seen.append((deliverer.health.healthy, deliverer.health.state.value))
        if len(seen) <= 3:
            raise StoreUnavailable("the disk is full")
        return real_read_due(limit)

    monkeypatch.setattr(gateway, "read_due", read_due)
    caplog.set_level("INFO", logger="parkgate.deliver")
    async with running(deliverer):
        await until(lambda: hook.requests and deliverer.health.healthy, "the expired callback")
    assert seen[:4] == [(True, "starting"), (False, "failing"), (False, "failing"), (False, "failing")]
    assert deliverer.health.last_pass is not None
    assert gateway.get(ask_id).status is AskStatus.EXPIRED
    (warning,) = lines(caplog, WARNING)
    assert "delivery pass" in warning and "StoreUnavailable: the disk is full" in warning


async def test_an_error_that_escapes_the_loop_restarts_it_and_is_logged_once_with_its_traceback(
    gateway: Gateway, clock: ManualClock, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    ask_id = park_due(gateway, clock)
    deliverer = deliverer_for(gateway, client=(hook := Hook()).client(), backoff=QUICK)
    real_listen = gateway.signal.listen
    states: list[str] = []

    def listen(listener: object) -> object:  # runs before the loop's first pass, outside its try
        states.append(deliverer.health.state.value)
        if len(states) <= 3:
            raise RuntimeError("the watcher thread could not start")
        return real_listen(listener)  # type: ignore[arg-type]

    monkeypatch.setattr(gateway.signal, "listen", listen)
    caplog.set_level("INFO", logger="parkgate.deliver")
    async with running(deliverer) as task:
        await until(lambda: hook.requests and deliverer.health.healthy, "the expired callback after the restarts")
        assert not task.done()
    assert states == ["starting", "restarting", "restarting", "restarting"]
    assert deliverer.health.restarts == 3
    assert gateway.get(ask_id).status is AskStatus.EXPIRED
    errors = [r for r in caplog.records if r.name == "parkgate.deliver" and r.levelno == ERROR]
    assert len(errors) == 1 and errors[0].exc_info is not None  # once, with the traceback
    assert "RuntimeError: the watcher thread could not start" in errors[0].getMessage()
    assert [line for line in lines(caplog, INFO) if "recovered" in line]
