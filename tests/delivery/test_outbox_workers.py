"""The outbox deliverer: workers claim disjoint rows, a dead worker's lease runs out.

Uses the shared ``gateway`` (SQLite; the workers' race also on PostgreSQL) with a manual
clock, and receivers behind ``httpx.MockTransport``.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta

import httpx
import pytest

from parkgate import Gateway, ManualClock
from parkgate.delivery.outbox import DELIVERY_DEADLINE_SECONDS, LEASE_MARGIN_SECONDS, OutboxDeliverer


def close_asks_with_callbacks(gateway: Gateway, count: int) -> set[str]:
    ids = set()
    for n in range(count):
        # Four receiver hosts: a pass takes at most PER_HOST_CONCURRENCY rows of each.
        reply = gateway.ask(f"ob-{n}", "Q?", ["A", "B"], callback_url=f"http://hooks{n % 4}.test/{n}")
        assert reply.ask_id is not None
        ids.add(reply.ask_id)
        gateway.handle(f"ob-{n}", "1" if n % 2 else "/cancel")
    return ids


class Recorder:
    """Receives callbacks; yields to the loop first so two deliverers really overlap."""

    def __init__(self) -> None:
        self.keys: list[str] = []

    async def __call__(self, request: httpx.Request) -> httpx.Response:
        await asyncio.sleep(0.01)
        self.keys.append(request.headers["idempotency-key"])
        return httpx.Response(200)


@pytest.mark.engines("two workers claim rows at once: the engine's claim (SKIP LOCKED on PostgreSQL) keeps them apart")
async def test_two_workers_never_send_the_same_row_at_once(gateway: Gateway, clock: ManualClock) -> None:
    expected = close_asks_with_callbacks(gateway, 12)
    hook = Recorder()
    workers = [
        OutboxDeliverer(gateway.store, clock, client=httpx.AsyncClient(transport=httpx.MockTransport(hook)))
        for _ in range(2)
    ]
    delivered = await asyncio.gather(*(worker.deliver_due() for worker in workers))
    delivered += await asyncio.gather(*(worker.deliver_due() for worker in workers))
    assert sum(delivered) == 12
    assert sorted(hook.keys) == sorted(f"{ask_id}.closed" for ask_id in expected)  # each once, none twice


async def test_a_row_claimed_by_a_worker_that_died_is_sent_after_its_lease(
    gateway: Gateway, clock: ManualClock
) -> None:
    (ask_id,) = close_asks_with_callbacks(gateway, 1)
    now = clock.now()
    lease = timedelta(seconds=DELIVERY_DEADLINE_SECONDS + LEASE_MARGIN_SECONDS)
    claimed = gateway.store.claim_callbacks(now, now + lease)  # ...and then that worker was killed
    assert [row.ask_id for row in claimed] == [ask_id]
    hook = Recorder()
    worker = OutboxDeliverer(gateway.store, clock, client=httpx.AsyncClient(transport=httpx.MockTransport(hook)))
    assert await worker.deliver_due() == 0  # still leased
    clock.advance(lease + timedelta(seconds=1))
    assert await worker.deliver_due() == 1 and hook.keys == [f"{ask_id}.closed"]
