"""Callback delivery from the durable outbox: at least once, signed, fenced and bounded.

Each event of an ask (:mod:`parkgate.gateway.events`: its close, a reminder, its
escalation, and for the events subscriber its park) is an ``outbox`` row written in the
transaction that decided it. The :class:`OutboxDeliverer` (driven by
:class:`~parkgate.delivery.Deliverer`) claims due rows and POSTs each row's payload (the
event's JSON) to its URL:

- **signed** per the Standard Webhooks spec when a secret is set (``webhook-id`` is the
  event's id, the same on every attempt; ``webhook-timestamp``; ``webhook-signature``, one
  ``v1,`` signature per secret while one is rotated: :mod:`parkgate.delivery.signing`), so
  a receiver can tell a real event from a forged one (:mod:`parkgate.webhooks` verifies);
- **fenced**: the URL's host is resolved at delivery and every address it resolves to
  must be allowed (:func:`parkgate.core.fence.address_allowed`); the connection goes to the
  address that was checked, so a name cannot change between the check and the connect;
- **bounded**: one deadline for the whole delivery (connect, send, response), at most
  :data:`MAX_RESPONSE_BYTES` of the response read, ``Accept-Encoding: identity``, no
  redirects followed;
- **independent**: each delivery is a task of its own, so a slow receiver delays no other;
  a claimed row is leased for longer than the deadline, so no other deliverer sends it
  meanwhile;
- **fair**: due rows are claimed in turns between receiver hosts, and at most
  :data:`PER_HOST_CONCURRENCY` deliveries are in flight to one host, so a receiver that
  holds every connection it gets holds that many of the :data:`CONCURRENCY` slots and
  another host's callback waits at most for one delivery to end.

Each attempt is a ``delivered`` event in the ask's log (:mod:`parkgate.core.events`:
its receiver, attempt, the receiver's status, latency and result), written in the
transaction that marks the row. A 2xx marks the row delivered; a 410 Gone (the receiver wants no more) marks it
``failed`` at once, with that reason. Anything else (an error status, a refused or fenced
connection, the deadline, any exception) is recorded as the row's ``last_error`` and
retried with exponential backoff, each wait shortened at random by up to
:data:`JITTER_FRACTION` (callbacks that failed together retry apart), up to
:data:`MAX_ATTEMPTS` attempts (about an hour); then, or at once for a URL that can
never be sent to, the callback is ``failed`` and stays so until an operator re-arms it.
Rows are durable, so a deliverer killed before a delivery makes it after its restart.
Delivery is at least once: a crash between the receiver's 2xx and the row's update
sends a payload again, with the same ``webhook-id`` and ``Idempotency-Key`` (the event's id).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import os
import random as randomness
from collections import Counter
from collections.abc import Awaitable, Callable
from datetime import datetime, timedelta
from urllib.parse import urlsplit, urlunsplit

import httpx
from standardwebhooks import Webhook

from parkgate.clock import Clock
from parkgate.core.events import Attempt, DeliveryResult, NewEvent
from parkgate.core.events import delivered as delivered_event
from parkgate.core.fence import (
    ENV_CALLBACK_ALLOW,
    AllowList,
    address_allowed,
    loggable_url,
    parse_allow_list,
    parse_callback_url,
    receiver_host,
)
from parkgate.delivery.dns import resolve
from parkgate.delivery.marks import DeliveredMarks
from parkgate.delivery.signing import Signer, signer_from_env
from parkgate.store import Store
from parkgate.store.base import Callback

log = logging.getLogger("parkgate.outbox")

#: First retry after this many seconds; doubled per failed attempt.
BASE_DELAY_SECONDS = 1.0
#: The backoff never waits longer than this between attempts.
MAX_DELAY_SECONDS = 300.0
#: Attempts before a callback is given up as ``failed``: with the default backoff the
#: last comes about an hour after the first (1 + 2 + ... + 256 s, then every 5 minutes).
MAX_ATTEMPTS = 20
#: Deliveries in flight at once (each a task of its own, on a keep-alive connection).
CONCURRENCY = 32
#: Deliveries in flight at once to one receiver host: a receiver that holds every
#: connection it gets holds this many slots, and the others stay free for other hosts.
PER_HOST_CONCURRENCY = 4
#: A retry waits between ``1 - JITTER_FRACTION`` and all of its backoff, at random, so
#: callbacks that failed together (a receiver down, a restart) do not retry together.
JITTER_FRACTION = 0.5
#: The kept connections are split among this many clients: a client's pool looks at each
#: of its connections whenever a request starts or ends, so one pool of
#: :data:`CONCURRENCY` connections costs that many checks per request, for every request.
CLIENT_SHARDS = 4
#: One delivery's whole time: resolving, connecting, sending and reading the response.
DELIVERY_DEADLINE_SECONDS = 10.0
#: A claimed row is leased for the deadline plus this, so it is never sent twice at once;
#: a deliverer that dies mid-delivery leaves it due again once the lease runs out.
LEASE_MARGIN_SECONDS = 5.0
#: The most of a receiver's response that is read (the status is what counts).
MAX_RESPONSE_BYTES = 64 * 1024
USER_AGENT = "parkgate-callback/1"
#: The environment variable that sets :data:`MAX_ATTEMPTS` for a deployment.
ENV_MAX_ATTEMPTS = "PARKGATE_CALLBACK_MAX_ATTEMPTS"


def backoff_delay(attempts: int, base: float = BASE_DELAY_SECONDS, cap: float = MAX_DELAY_SECONDS) -> float:
    """Seconds to wait after the ``attempts``-th failed attempt (1, 2, 4, ... capped)."""
    exponent = max(0, attempts - 1)
    if exponent >= 63:
        return cap
    return float(min(cap, base * (2**exponent)))


def jittered(delay: float, draw: float) -> float:
    """``delay`` shortened by up to :data:`JITTER_FRACTION` of it: ``draw`` (from 0 to 1)
    says how much (0: all of it; 1: the shortest)."""
    return delay * (1.0 - JITTER_FRACTION * min(1.0, max(0.0, draw)))


class _Undeliverable(Exception):
    """A callback that can never be sent as it is (its URL does not parse): failed at once.

    Internal to delivery, as :class:`_Refused` is: neither reaches a caller, only the
    outbox row's ``last_error`` (which names them without the underscore)."""


class _Refused(Exception):
    """The fence refused every address the callback's host resolved to (retried: DNS changes)."""


def max_attempts_from_env() -> int:
    """``PARKGATE_CALLBACK_MAX_ATTEMPTS`` (a whole number of at least 1), else :data:`MAX_ATTEMPTS`."""
    raw = os.environ.get(ENV_MAX_ATTEMPTS, "").strip()
    if not raw:
        return MAX_ATTEMPTS
    if not raw.isdigit() or int(raw) < 1:
        raise ValueError(f"{ENV_MAX_ATTEMPTS} must be a whole number of at least 1, not {raw!r}")
    return int(raw)


class OutboxDeliverer:
    """POSTs due outbox rows to their callback URLs; :meth:`deliver_due` starts a pass.

    ``clock`` must be the gateway's clock: outbox times are written with it. ``signer``
    signs each request (default: :func:`signer_from_env`); ``allow`` lets internal
    receivers in (default: ``PARKGATE_CALLBACK_ALLOW``). ``client`` may be given (tests
    pass an ``httpx.AsyncClient`` with a mock transport: it is then used as it is, with
    no fence or connection to the resolved address); otherwise one is kept between
    :meth:`open` and :meth:`aclose`, or made for each pass. ``per_host`` caps the
    deliveries in flight to one receiver host (:data:`PER_HOST_CONCURRENCY`); ``random``
    draws each retry's jitter (numbers from 0 to 1; tests pass a seeded source).
    """

    def __init__(
        self,
        store: Store,
        clock: Clock,
        *,
        client: httpx.AsyncClient | None = None,
        signer: Signer | Webhook | bool | None = True,
        allow: AllowList | None = None,
        base_delay: float = BASE_DELAY_SECONDS,
        max_delay: float = MAX_DELAY_SECONDS,
        max_attempts: int | None = None,
        deadline: float = DELIVERY_DEADLINE_SECONDS,
        resolver: Callable[[str, int], Awaitable[list[str]]] | None = None,
        per_host: int = PER_HOST_CONCURRENCY,
        random: Callable[[], float] = randomness.random,
    ) -> None:
        self.store = store
        self.clock = clock
        self.signer = signer_from_env() if signer is True else (signer or None)
        self.allow = allow if allow is not None else parse_allow_list(os.environ.get(ENV_CALLBACK_ALLOW))
        self.base_delay = base_delay
        self.max_delay = max_delay
        self.max_attempts = max_attempts if max_attempts is not None else max_attempts_from_env()
        self.deadline = deadline
        self._resolve = resolver or resolve
        self._client = client
        self._owned: list[httpx.AsyncClient] = []
        self._turn = 0
        self._in_flight: set[asyncio.Task[bool]] = set()
        self.per_host = per_host
        self._random = random
        #: Deliveries in flight per receiver host, and the hosts at :attr:`per_host`
        #: (replaced, never changed in place: a store call in a thread reads it).
        self._hosts: Counter[str] = Counter()
        self._full: frozenset[str] = frozenset()
        self._marks = DeliveredMarks(store, clock)
        #: Called (in the loop) whenever a delivery ends: its slot is free for the next row.
        self.on_done: Callable[[], None] | None = None
        self.delivered = 0
        self.failed = 0

    # -- passes ---------------------------------------------------------------------
    async def deliver_due(self) -> int:
        """Attempt every due row once, waiting for them all; how many were delivered.

        What a test calls; a long-running deliverer uses :meth:`start_due`.
        """
        started = await self.start_due()
        results = await asyncio.gather(*started)
        return sum(1 for ok in results if ok)

    async def start_due(self) -> list[asyncio.Task[bool]]:
        """Claim due rows for the free slots and start a delivery task for each (none while
        :attr:`busy`)."""
        if self.busy:
            return []
        free = CONCURRENCY - len(self._in_flight)
        now = self.clock.now()
        lease_until = now + timedelta(seconds=self.deadline + LEASE_MARGIN_SECONDS)
        hosts = dict(self._hosts)
        rows = await asyncio.to_thread(self.store.claim_callbacks, now, lease_until, free, self.per_host, hosts)
        started = []
        for row in rows:
            task = asyncio.create_task(self._deliver(row), name=f"parkgate-callback-{row.id}")
            self._in_flight.add(task)
            if row.host is not None:
                self._hosts[row.host] += 1
            task.add_done_callback(functools.partial(self._finished, row.host))
            started.append(task)
        self._full = frozenset(host for host, count in self._hosts.items() if count >= self.per_host)
        return started

    def next_callback_at(self) -> datetime | None:
        """When the earliest callback this deliverer could start is due: hosts with
        :attr:`per_host` deliveries in flight wait for one to end (:attr:`on_done`)."""
        return self.store.next_callback_at(self._full)

    def _finished(self, host: str | None, task: asyncio.Task[bool]) -> None:
        self._in_flight.discard(task)
        if host is not None:
            self._hosts[host] -= 1
            if self._hosts[host] <= 0:
                del self._hosts[host]
            self._full = frozenset(name for name, count in self._hosts.items() if count >= self.per_host)
        # Free slots are refilled by the half: one claim for many rows, not one per delivery.
        if self.on_done is not None and not self.busy:
            self.on_done()

    @property
    def busy(self) -> bool:
        """Whether more than half the delivery slots are taken: the next claim waits for
        deliveries to end (:attr:`on_done` says when), so it takes many rows at once."""
        return len(self._in_flight) > CONCURRENCY // 2

    # -- one delivery ------------------------------------------------------------------
    async def _deliver(self, row: Callback) -> bool:
        attempt = row.attempts + 1
        started = asyncio.get_running_loop().time()
        status: int | None = None
        try:
            async with asyncio.timeout(self.deadline):
                status = await self._post(row, attempt)
            if 200 <= status < 300:
                await self._marks.mark(row.id, self._attempted(row, attempt, status, started, "delivered"))
                self.delivered += 1
                log.info("callback delivered: ask %s to %s (attempt %d)", row.ask_id, loggable_url(row.url), attempt)
                return True
            gone = status == 410  # the receiver wants no more: no retry helps
            error, final = ("HTTP 410 Gone: the receiver takes no more deliveries" if gone else f"HTTP {status}"), gone
        except _Undeliverable as reason:
            error, final = f"undeliverable: {reason}", True
        except TimeoutError:
            error, final = f"no complete answer within {self.deadline:g} s", False
        except asyncio.CancelledError:
            raise  # the deliverer stops: the lease runs out and the row is due again
        except Exception as failure:  # any failure of one delivery is that delivery's, recorded
            error, final = _describe(failure), False
        await self._record_failure(row, attempt, error, final, status, started)
        return False

    def _attempted(
        self, row: Callback, attempt: int, status: int | None, started: float, result: DeliveryResult
    ) -> NewEvent:
        """The ``delivered`` event of ``row``'s ``attempt``, begun at loop time ``started``."""
        elapsed = asyncio.get_running_loop().time() - started
        host = row.host or receiver_host(row.url)
        facts = Attempt(row.target, host, row.webhook_id, attempt, status, round(elapsed * 1000, 1), result)
        return delivered_event(row.ask_id, self.clock.now(), facts)

    async def _record_failure(
        self, row: Callback, attempt: int, error: str, final: bool, status: int | None, started: float
    ) -> None:
        self.failed += 1
        if final or attempt >= self.max_attempts:
            event = self._attempted(row, attempt, status, started, "failed")
            with contextlib.suppress(Exception):
                await asyncio.to_thread(self.store.callback_failed, row.id, error, None, (event,))
            log.warning(
                "callback failed for good: ask %s to %s (attempt %d: %s)",
                row.ask_id,
                loggable_url(row.url),
                attempt,
                error,
            )
            return
        event = self._attempted(row, attempt, status, started, "retrying")
        delay = jittered(backoff_delay(attempt, self.base_delay, self.max_delay), self._random())
        retry_at = self.clock.now() + timedelta(seconds=delay)
        with contextlib.suppress(Exception):  # the store away: the lease runs out, the row comes back
            await asyncio.to_thread(self.store.callback_failed, row.id, error, retry_at, (event,))
        log.warning(
            "callback failed: ask %s to %s (attempt %d: %s); retrying in %.0f s",
            row.ask_id,
            loggable_url(row.url),
            attempt,
            error,
            delay,
        )

    async def _post(self, row: Callback, attempt: int) -> int:
        """POST the row; the response's status (at most :data:`MAX_RESPONSE_BYTES` read)."""
        body = row.payload.encode("utf-8")
        headers = {
            "Content-Type": "application/json",
            "Accept-Encoding": "identity",
            "Idempotency-Key": row.webhook_id,
            "X-Parkgate-Outbox-Id": str(row.id),
            "X-Parkgate-Attempt": str(attempt),
            "User-Agent": USER_AGENT,
        }
        if self.signer is not None:
            sent_at = self.clock.now()
            headers["webhook-id"] = row.webhook_id
            headers["webhook-timestamp"] = str(int(sent_at.timestamp()))
            headers["webhook-signature"] = self.signer.sign(row.webhook_id, sent_at, body)
        url, extensions = await self._fenced(row.url, headers)
        client = self._client or self._next_owned()
        owned = client is None
        if client is None:
            client = _new_client()
        try:
            request = client.build_request("POST", url, content=body, headers=headers, extensions=extensions)
            response = await client.send(request, stream=True)
            try:
                read = 0
                with contextlib.suppress(httpx.StreamConsumed):  # a transport that read it already
                    async for chunk in response.aiter_raw():  # raw: a compressed body stays compressed
                        read += len(chunk)
                        if read >= MAX_RESPONSE_BYTES:
                            break
                return response.status_code
            finally:
                await response.aclose()
        finally:
            if owned:
                await client.aclose()

    async def _fenced(self, url: str, headers: dict[str, str]) -> tuple[str, dict[str, object]]:
        """The URL to connect to (the checked address in place of the host) and its extensions."""
        try:
            target = parse_callback_url(url)
        except Exception as error:  # a URL that does not parse never will: no retry helps
            raise _Undeliverable(str(error)) from None
        if self._client is not None:
            return url, {}  # a test's own transport: it reaches no network
        addresses = [target.address.compressed] if target.address else await self._resolve(target.host, target.port)
        refused = [a for a in addresses if not address_allowed(a, target.port, self.allow, host=target.host)]
        if refused or not addresses:
            raise _Refused(
                f"{target.host} resolves to {', '.join(refused) or 'nothing'}: an internal address this server "
                f"does not allow ({ENV_CALLBACK_ALLOW})"
            )
        address = addresses[0]
        parts = urlsplit(url)
        literal = f"[{address}]" if ":" in address else address
        default_port = {"http": 80, "https": 443}[target.scheme]
        netloc = literal if target.port == default_port else f"{literal}:{target.port}"
        headers["Host"] = target.authority  # as checked and ASCII, never the host as written
        extensions: dict[str, object] = {"sni_hostname": target.host} if target.scheme == "https" else {}
        return urlunsplit((parts.scheme, netloc, parts.path or "/", parts.query, "")), extensions

    # -- the kept client ----------------------------------------------------------------
    def open(self) -> None:
        """Keep one client for the passes until :meth:`aclose` (a long-running deliverer)."""
        if self._client is None and not self._owned:
            self._owned = [_new_client(CONCURRENCY // CLIENT_SHARDS) for _ in range(CLIENT_SHARDS)]

    def _next_owned(self) -> httpx.AsyncClient | None:
        """The kept clients in turn (``None`` when none is kept)."""
        if not self._owned:
            return None
        self._turn = (self._turn + 1) % len(self._owned)
        return self._owned[self._turn]

    async def aclose(self) -> None:
        """Cancel the deliveries in flight (their leases run out) and close the kept clients.

        Rows already delivered are still marked so (a delivery whose mark is cancelled
        is sent again once its lease runs out: at least once).
        """
        for task in list(self._in_flight):
            task.cancel()
        if self._in_flight:
            await asyncio.gather(*self._in_flight, return_exceptions=True)
        await self._marks.drain()
        owned, self._owned = self._owned, []
        for client in owned:
            await client.aclose()


def _new_client(connections: int = 1) -> httpx.AsyncClient:
    # No redirects: a callback goes where it was told (and checked), or it fails and is
    # retried. No proxies from the environment: the fence checks the receiver's address.
    limits = httpx.Limits(max_connections=connections, max_keepalive_connections=connections)
    return httpx.AsyncClient(timeout=DELIVERY_DEADLINE_SECONDS, follow_redirects=False, trust_env=False, limits=limits)


def _describe(failure: BaseException) -> str:
    text = str(failure)
    name = type(failure).__name__.lstrip("_")  # the internal failures read as "Refused: ..."
    return f"{name}: {text}" if text else name
