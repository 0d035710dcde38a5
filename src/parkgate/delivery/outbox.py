"""Callback delivery from the durable outbox: at-least-once, with backoff, across restarts.

When an ask with a ``callback_url`` closes (answered, cancelled, replaced or expired),
the gateway writes an ``outbox`` row in the same transaction that closed it. The
:class:`OutboxDeliverer` (driven by :class:`~parkgate.delivery.Deliverer`) POSTs each due row's
payload (the ask's JSON) to its URL with ``Idempotency-Key: <ask id>``; a 2xx marks the
row delivered, anything else (an error status, a refused connection, a timeout)
reschedules it with exponential backoff capped at ``max_delay``. The rows are durable,
so a server killed before a delivery delivers it after its restart.

Each poll claims its rows with a short lease (:meth:`Store.claim_callbacks`), so
several worker processes on one database do not send the same row at the same time.
Delivery is still at-least-once: a crash between the receiver's 2xx and the row's
update (or a lease that runs out mid-request) sends a payload again. Receivers
deduplicate on ``Idempotency-Key`` (one ask closes once, so one key per callback).
"""

from __future__ import annotations

import asyncio
import logging
from datetime import timedelta

import httpx

from parkgate.clock import Clock
from parkgate.store import Store
from parkgate.store.base import Callback

log = logging.getLogger("parkgate.outbox")

#: First retry after this many seconds; doubled per failed attempt.
BASE_DELAY_SECONDS = 1.0
#: The backoff never waits longer than this between attempts.
MAX_DELAY_SECONDS = 300.0
#: Rows fetched per poll, and callbacks in flight at once.
BATCH_SIZE = 50
CONCURRENCY = 8
REQUEST_TIMEOUT_SECONDS = 10.0
#: A claimed row is leased for the request timeout plus this; a worker that dies
#: mid-delivery leaves it due again once the lease runs out.
LEASE_MARGIN_SECONDS = 5.0
USER_AGENT = "parkgate-callback/1"


def backoff_delay(attempts: int, base: float = BASE_DELAY_SECONDS, cap: float = MAX_DELAY_SECONDS) -> float:
    """Seconds to wait after the ``attempts``-th failed attempt (1, 2, 4, ... capped)."""
    exponent = max(0, attempts - 1)
    if exponent >= 63:
        return cap
    return float(min(cap, base * (2**exponent)))


class OutboxDeliverer:
    """POSTs due outbox rows to their callback URLs, one pass per :meth:`deliver_due`.

    ``clock`` must be the gateway's clock: outbox times are written with it.
    ``client`` may be given (tests pass an ``httpx.AsyncClient`` with a mock transport);
    otherwise one is made for each pass, or kept between :meth:`open` and :meth:`aclose`.
    """

    def __init__(
        self,
        store: Store,
        clock: Clock,
        *,
        client: httpx.AsyncClient | None = None,
        base_delay: float = BASE_DELAY_SECONDS,
        max_delay: float = MAX_DELAY_SECONDS,
        timeout: float = REQUEST_TIMEOUT_SECONDS,
    ) -> None:
        self.store = store
        self.clock = clock
        self.base_delay = base_delay
        self.max_delay = max_delay
        self.timeout = timeout
        self._client = client
        self._owned: httpx.AsyncClient | None = None
        self.delivered = 0
        self.failed = 0

    # -- delivering ------------------------------------------------------------
    async def deliver_due(self) -> int:
        """Attempt every due row once; return how many were delivered."""
        now = self.clock.now()
        # Leased for longer than one attempt can take: other workers skip these rows.
        lease_until = now + timedelta(seconds=self.timeout + LEASE_MARGIN_SECONDS)
        rows = await asyncio.to_thread(self.store.claim_callbacks, now, lease_until, BATCH_SIZE)
        if not rows:
            return 0
        client = self._client or self._owned
        owned = client is None
        if client is None:
            client = self._new_client()
        try:
            gate = asyncio.Semaphore(CONCURRENCY)

            async def one(row: Callback) -> bool:
                async with gate:
                    return await self._deliver(client, row)

            results = await asyncio.gather(*(one(row) for row in rows))
        finally:
            if owned:
                await client.aclose()
        return sum(1 for ok in results if ok)

    async def _deliver(self, client: httpx.AsyncClient, row: Callback) -> bool:
        attempt = row.attempts + 1
        headers = {
            "Content-Type": "application/json",
            "Idempotency-Key": row.ask_id,
            "X-Parkgate-Outbox-Id": str(row.id),
            "X-Parkgate-Attempt": str(attempt),
            "User-Agent": USER_AGENT,
        }
        error: str | None = None
        try:
            response = await client.post(row.url, content=row.payload.encode("utf-8"), headers=headers)
            if 200 <= response.status_code < 300:
                await asyncio.to_thread(self.store.callback_done, row.id, self.clock.now())
                self.delivered += 1
                log.info("callback delivered: ask %s to %s (attempt %d)", row.ask_id, row.url, attempt)
                return True
            error = f"HTTP {response.status_code}"
        except httpx.HTTPError as failure:
            error = f"{type(failure).__name__}: {failure}" if str(failure) else type(failure).__name__
        delay = backoff_delay(attempt, self.base_delay, self.max_delay)
        retry_at = self.clock.now() + timedelta(seconds=delay)
        await asyncio.to_thread(self.store.callback_failed, row.id, error, retry_at)
        self.failed += 1
        log.warning(
            "callback failed: ask %s to %s (attempt %d: %s); retrying in %.0f s",
            row.ask_id,
            row.url,
            attempt,
            error,
            delay,
        )
        return False

    def _new_client(self) -> httpx.AsyncClient:
        # No redirects: a callback goes where it was told, or it fails and is retried.
        return httpx.AsyncClient(timeout=self.timeout, follow_redirects=False, trust_env=False)

    def open(self) -> None:
        """Keep one client for the passes until :meth:`aclose` (a long-running deliverer)."""
        if self._client is None and self._owned is None:
            self._owned = self._new_client()

    async def aclose(self) -> None:
        owned, self._owned = self._owned, None
        if owned is not None:
            await owned.aclose()
