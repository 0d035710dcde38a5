"""Retries are jittered, so callbacks that failed together do not retry together; and
callback hosts are resolved on threads of their own, so a DNS server that never answers
cannot hold the threads the deliverer's store calls run on."""

from __future__ import annotations

import asyncio
import random
import socket
import threading
from datetime import datetime
from typing import Any

import httpx
import pytest

from parkgate.clock import ManualClock
from parkgate.delivery.dns import DNS_THREADS, resolve
from parkgate.delivery.outbox import JITTER_FRACTION, OutboxDeliverer, backoff_delay
from parkgate.store import Store
from parkgate.store.writes import QueuedCallback, Writes

#: Callbacks that fail at once: fewer than one pass claims (no per-host cap: no host recorded).
FAILING = 30


def _queue_failing(store: Store, clock: ManualClock) -> list[str]:
    asks = [f"ask-{n}" for n in range(FAILING)]
    queued = tuple(QueuedCallback(ask, f"http://r{n % 5}.test/h", "{}", clock.now()) for n, ask in enumerate(asks))
    with store.transaction() as tx:
        tx.write(Writes(callbacks=queued))
    return asks


def _down() -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.MockTransport(lambda request: httpx.Response(503)))


async def _retry_times(store: Store, clock: ManualClock, draw: Any) -> list[datetime]:
    """Fail every callback once, all in one pass; when each is due next."""
    asks = _queue_failing(store, clock)
    deliverer = OutboxDeliverer(store, clock, client=_down(), base_delay=60, max_delay=300, random=draw)
    assert await deliverer.deliver_due() == 0
    with store.transaction() as tx:
        states = tx.outbox.callback_states(asks)
    assert {state.attempts for state in states.values()} == {1}
    return [state.next_attempt_at for state in states.values() if state.next_attempt_at is not None]


async def test_callbacks_that_fail_together_retry_spread_over_their_backoff(store: Store, clock: ManualClock) -> None:
    failed_at = clock.now()
    times = await _retry_times(store, clock, random.Random(26).random)
    waits = sorted((at - failed_at).total_seconds() for at in times)
    assert len(waits) == FAILING
    backoff = backoff_delay(1, 60, 300)
    assert backoff * (1 - JITTER_FRACTION) <= waits[0] and waits[-1] <= backoff  # never later than the backoff
    assert waits[-1] - waits[0] > backoff * JITTER_FRACTION / 2  # spread over much of the window...
    assert len({int(wait) for wait in waits}) > 10  # ...not in one second


async def test_without_jitter_every_retry_waits_its_whole_backoff(store: Store, clock: ManualClock) -> None:
    failed_at = clock.now()
    times = await _retry_times(store, clock, lambda: 0.0)
    assert {(at - failed_at).total_seconds() for at in times} == {backoff_delay(1, 60, 300)}


async def test_a_dns_server_that_never_answers_holds_no_thread_the_store_needs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    release = threading.Event()
    real = socket.getaddrinfo

    def hanging(host: str, *args: Any, **kwargs: Any) -> Any:
        if host.endswith(".hangs.test"):
            release.wait(60)
        return real("127.0.0.1", *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", hanging)
    # Far more hanging look-ups than the default pool has threads (min(32, CPUs + 4)).
    lookups = [asyncio.create_task(resolve(f"r{n}.hangs.test", 80)) for n in range(64)]
    try:
        await asyncio.sleep(0)
        # A store call on the default pool still runs (bounded only so a failure does not hang).
        ran = await asyncio.wait_for(asyncio.to_thread(threading.current_thread), timeout=30)
        assert not ran.name.startswith("parkgate-dns")
        assert not any(lookup.done() for lookup in lookups)  # the look-ups still hang
        hung = [thread for thread in threading.enumerate() if thread.name.startswith("parkgate-dns")]
        assert len(hung) == DNS_THREADS
    finally:
        release.set()
    assert {tuple(found) for found in await asyncio.gather(*lookups)} == {("127.0.0.1",)}
