"""Where a failing deliverer shows: ``/healthz`` (503 ``deliverer_failing`` while it fails,
200 naming its state otherwise), the last-pass gauge on ``/metrics``, and
``Gateway(deliver=True)``'s thread, which its supervisor restarts.

The app runs in-process (httpx ``ASGITransport``) so the test owns the clock and the
deliverer; the live-server checks of the same outages are in
``tests/reliability/test_deliverer_outages.py``.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Iterator
from datetime import timedelta
from typing import Any

import httpx
import pytest
from flaky_store import BOUND_SECONDS, QUICK, FailingBeats, until

import parkgate.delivery.health as health_module
import polling
from parkgate import Gateway, ManualClock
from parkgate.core.model import AskStatus
from parkgate.delivery import Deliverer
from parkgate.delivery.health import DelivererState
from parkgate.http.app import create_app
from parkgate.store import Store
from parkgate.store.signal import CloseSignal

LAST_PASS = "parkgate_deliverer_last_pass_timestamp_seconds"


@contextlib.asynccontextmanager
async def served(gateway: Gateway, *, deliver: bool = True) -> AsyncIterator[tuple[httpx.AsyncClient, Any]]:
    """The app on ``gateway`` (its deliverer not started yet) and a client for it."""
    app = create_app(gateway, deliver_callbacks=deliver)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://parkgate") as client:
        yield client, app.state.deliverer


@contextlib.asynccontextmanager
async def running(deliverer: Deliverer) -> AsyncIterator[None]:
    deliverer.health.backoff = QUICK
    task = asyncio.create_task(deliverer.run())
    try:
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def test_healthz_is_503_while_the_deliverer_fails_and_200_once_it_recovers(
    gateway: Gateway, monkeypatch: pytest.MonkeyPatch
) -> None:
    beats = FailingBeats(gateway.store, monkeypatch, failures=10**9)  # an outage until the test ends it
    async with served(gateway) as (http, deliverer):
        before = await http.get("/healthz")
        assert before.status_code == 200 and before.json()["deliverer"] == "starting"
        async with running(deliverer):
            await until(lambda: beats.tries >= 2, "failed heartbeats")
            failing = await http.get("/healthz")
            assert failing.status_code == 503, failing.text
            body = failing.json()
            assert (body["error"], body["deliverer"], body["last_pass"]) == ("deliverer_failing", "failing", None)
            assert body["failing_since"] == gateway.clock.now().isoformat() and "recovers" in body["detail"]
            assert "locked" not in failing.text  # the cause goes to the log, not to anonymous callers
            assert LAST_PASS + " " not in (await http.get("/metrics")).text
            beats.fail(0)  # the store answers again
            await until(lambda: deliverer.health.state is DelivererState.RUNNING, "the recovery")
            healthy = await http.get("/healthz")
            assert healthy.status_code == 200 and healthy.json()["deliverer"] == "running"
            metrics = (await http.get("/metrics")).text
        (stamp,) = [line for line in metrics.splitlines() if line.startswith(LAST_PASS + " ")]
        assert float(stamp.split(" ")[1]) == gateway.clock.now().timestamp()
        stopped = await http.get("/healthz")  # the server is stopping its deliverer: off, not failing
        assert stopped.status_code == 200 and stopped.json()["deliverer"] == "off"


async def test_healthz_says_off_where_no_deliverer_runs(gateway: Gateway) -> None:
    async with served(gateway, deliver=False) as (http, deliverer):
        assert deliverer is None
        health = await http.get("/healthz")
    assert health.status_code == 200 and health.json()["deliverer"] == "off"


@pytest.fixture
def quick_default_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    """Deliverers made without a backoff (``Gateway(deliver=True)``'s) retry in milliseconds."""
    monkeypatch.setattr(health_module, "DEFAULT_BACKOFF", QUICK)


@contextlib.contextmanager
def closing(gateway: Gateway) -> Iterator[Gateway]:
    try:
        yield gateway
    finally:
        gateway.close()


def stored_status(store: Store, ask_id: str | None) -> AskStatus | None:
    """The ask's status as stored: a raw read that enforces no TTL (``Gateway.get`` would
    close an ask past it itself, and prove nothing about the deliverer)."""
    with store.transaction() as tx:
        ask = tx.ask(ask_id or "")
    return ask.status if ask is not None else None


def wait_for(condition: Any, what: str) -> None:
    """Poll (bounded by the same limit as the async tests) from a plain thread."""
    polling.until(condition, BOUND_SECONDS, what, interval=0.005)


def test_a_library_gateways_deliverer_thread_is_restarted_and_still_reads_due_asks(
    store: Store, clock: ManualClock, monkeypatch: pytest.MonkeyPatch, quick_default_backoff: None
) -> None:
    real_listen = CloseSignal.listen
    calls: list[int] = []

    def listen(self: CloseSignal, listener: Any) -> Any:  # fails before the loop's first pass
        calls.append(1)
        if len(calls) <= 2:
            raise RuntimeError("the watcher thread could not start")
        return real_listen(self, listener)

    monkeypatch.setattr(CloseSignal, "listen", listen)
    with closing(Gateway(store=store, clock=clock, deliver=True)) as gateway:
        parked = gateway.ask("c-lib", "Deploy?", ["Deploy", "Hold"], ttl=10, watched=True)
        clock.advance(timedelta(seconds=11))
        gateway.ask("c-wake", "Q?", ["A", "B"], ttl=600, watched=True)  # its signal wakes a sleeping loop
        health = gateway.deliverer_health
        assert health is not None
        wait_for(lambda: stored_status(store, parked.ask_id) is AskStatus.EXPIRED, "the due read")
        wait_for(lambda: health.healthy, "the pass that read it to end")
        assert health.restarts == 2 and health.last_pass == clock.now()
    assert health.state is DelivererState.STOPPED  # close() stopped it on purpose


class _Escape(BaseException):
    """What no supervisor catches (only ``Exception``s are restarted in the loop)."""


def test_a_library_gateways_thread_runs_a_new_event_loop_when_something_ends_the_old_one(
    store: Store, clock: ManualClock, monkeypatch: pytest.MonkeyPatch, quick_default_backoff: None
) -> None:
    real_run = Deliverer.run
    runs: list[int] = []

    async def run(self: Deliverer) -> None:
        runs.append(1)
        if len(runs) == 1:
            raise _Escape("ends the thread's event loop")
        await real_run(self)

    monkeypatch.setattr(Deliverer, "run", run)
    with closing(Gateway(store=store, clock=clock, deliver=True)) as gateway:
        parked = gateway.ask("c-lib", "Deploy?", ["Deploy", "Hold"], ttl=10, watched=True)
        clock.advance(timedelta(seconds=11))
        gateway.ask("c-wake", "Q?", ["A", "B"], ttl=600, watched=True)  # its signal wakes a sleeping loop
        health = gateway.deliverer_health
        assert health is not None
        wait_for(lambda: stored_status(store, parked.ask_id) is AskStatus.EXPIRED, "the due read")
        assert len(runs) == 2 and health.restarts == 1
