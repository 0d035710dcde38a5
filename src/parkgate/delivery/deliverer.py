"""The deliverer: due reads and callback delivery for one store, until stopped.

Each pass reads the asks something waits on whose TTL has fallen due (its
:class:`DueReads`, in practice :meth:`Gateway.read_due <parkgate.Gateway.read_due>`: the
ordinary read, which closes them as ``expired`` and queues their callbacks), then POSTs
the callbacks that are due.
Between passes it sleeps until the earliest due time, the earliest callback retry or the
next heartbeat, and wakes early when the close signal says an ask with a due time was
parked, a callback was queued, or another process committed (:mod:`parkgate.store.signal`).
A pass that fails (its heartbeat included: the store away, the disk full) is logged once
per outage and tried again after a backoff (:mod:`parkgate.delivery.health`); an error
that escapes the loop restarts it (:mod:`parkgate.delivery.supervisor`).

This is not a sweeper: it decides no lifetime. An ask it reads is closed only if the
read finds it past its TTL, exactly as a person's next message would find it; an ask
touched meanwhile is left open and read again at its new due time. Several deliverers
on one database are safe: a due read skips asks another is reading and finds closed asks
closed, and a callback row is leased to one deliverer at a time.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Protocol

import httpx

from parkgate.clock import Clock
from parkgate.core.fence import AllowList
from parkgate.delivery.health import Backoff, DelivererHealth
from parkgate.delivery.heartbeat import HEARTBEAT_SECONDS
from parkgate.delivery.outbox import OutboxDeliverer
from parkgate.delivery.supervisor import supervise
from parkgate.store import Store
from parkgate.store.signal import FALLBACK_READ_SECONDS, Change, CloseSignal

#: Asks closed per due-read transaction; a full batch is followed by another at once.
DUE_BATCH = 100
#: The shortest sleep between passes when a pass closed or sent something.
MIN_PAUSE_SECONDS = 0.002
#: The shortest sleep when due asks were found but none could be closed yet (another
#: deliverer is reading them, or a due time rounded a hair early).
IDLE_PAUSE_SECONDS = 0.05
#: The least time from one pass to the next that another process's unnamed commit
#: (:data:`Change.COMMITTED`, SQLite's watcher) wakes: this process's own commits look
#: the same to the watcher, and a busy server would otherwise run a pass per commit.
COMMITTED_PAUSE_SECONDS = 0.05
_WAKING_CHANGES = frozenset({Change.DUE, Change.OUTBOX, Change.COMMITTED, Change.ANY})


class DueReads(Protocol):
    """The due reads a deliverer makes: what :class:`~parkgate.Gateway` offers as
    :meth:`~parkgate.Gateway.read_due` and :meth:`~parkgate.Gateway.next_due`."""

    def read_due(self, limit: int) -> int:
        """Read up to ``limit`` asks whose TTL has fallen due; return how many closed."""
        ...

    def next_due(self) -> datetime | None:
        """The earliest due time among open asks something waits on (``None``: none)."""
        ...


class JobQueue(Protocol):
    """Another durable queue a deliverer drives beside the callbacks (the channel jobs:
    :class:`~parkgate.channels.deliver.ChannelDeliverer`)."""

    #: Called when a pass of its jobs ends; the deliverer sets it to wake itself.
    on_done: Callable[[], None]

    async def start_due(self) -> bool:
        """Start running the jobs due now off the loop; whether any started. With none due
        it starts nothing and writes nothing, so an idle deliverer sleeps."""
        ...

    def next_job_at(self) -> datetime | None:
        """When its earliest job not already running is due (``None``: none): the deliverer
        sleeps until then, or until a job is queued (the close signal wakes it)."""
        ...

    async def aclose(self) -> None:
        """Wait for a running pass to end."""
        ...


class Deliverer:
    """Due reads and callback delivery on ``store``; ``await run()`` until cancelled.

    Args:
        store: the store whose outbox it delivers and where it stamps its heartbeat.
        clock: the time it reads due times and retries by.
        signal: the close signal that wakes it when something changes.
        due: the due reads (a :class:`~parkgate.Gateway` on ``store``).
        on_pass: called with the time of each successful pass (a metrics gauge).
        on_running: called with ``True`` when its loop starts, ``False`` when it ends.
        allow: the callback allow-list (default: ``PARKGATE_CALLBACK_ALLOW``).
        client: the HTTP client for callbacks (tests pass one with a mock transport).
        backoff: the delays between tries while passes fail (default: 1 s doubling to 5 s).
        jobs: other queues it drives each pass, such as the channel jobs.
    """

    def __init__(
        self,
        store: Store,
        clock: Clock,
        signal: CloseSignal,
        due: DueReads,
        *,
        on_pass: Callable[[datetime], None] | None = None,
        on_running: Callable[[bool], None] | None = None,
        allow: AllowList | None = None,
        client: httpx.AsyncClient | None = None,
        backoff: Backoff | None = None,
        jobs: Sequence[JobQueue] = (),
    ) -> None:
        self.store = store
        self.jobs = tuple(jobs)
        self.clock = clock
        self.signal = signal
        self.due = due
        self.outbox = OutboxDeliverer(store, clock, client=client, allow=allow)
        self.id = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        #: Asks closed by this deliverer's due reads.
        self.due_reads = 0
        #: Whether its passes succeed (``/healthz`` reads it); logs each outage once.
        self.health = DelivererHealth(backoff, on_pass=on_pass)
        #: Seconds between heartbeats (tests set 0: every pass beats).
        self.heartbeat_seconds = HEARTBEAT_SECONDS
        self._on_running = on_running or (lambda running: None)
        self._next_beat = 0.0  # the loop's time of the next heartbeat; 0: at the next pass

    async def run(self) -> None:
        """Deliver until cancelled, under the supervisor: a loop that stops on an unexpected
        error is logged and restarted after a backoff (:mod:`parkgate.delivery.supervisor`)."""
        await supervise(self._loop, self.health, self.clock.now)

    async def _loop(self) -> None:
        """Pass after pass until cancelled; a failed pass (heartbeat included) is retried with backoff."""
        loop = asyncio.get_running_loop()
        wake = asyncio.Event()
        #: Until when (time.monotonic()) a COMMITTED waits, and whether a wake for it is set.
        quiet_until = 0.0
        committed_later = False

        def wake_after_quiet() -> None:
            nonlocal committed_later
            committed_later = False
            wake.set()

        def heard(change: Change, ask_id: str | None) -> None:
            # A wake already set stays set until the next pass begins, and that pass sees
            # this change too: a burst of signals costs the loop one call, not one each.
            nonlocal committed_later
            if change not in _WAKING_CHANGES or wake.is_set():
                return
            with contextlib.suppress(RuntimeError):  # the loop is closing
                delay = quiet_until - time.monotonic() if change is Change.COMMITTED else 0.0
                if delay <= 0:
                    loop.call_soon_threadsafe(wake.set)
                elif not committed_later:
                    committed_later = True
                    loop.call_soon_threadsafe(loop.call_later, delay, wake_after_quiet)

        remove = self.signal.listen(heard)
        self._on_running(True)
        self.outbox.open()
        self.outbox.on_done = wake.set  # a free slot may take the next due callback
        for queue in self.jobs:
            queue.on_done = wake.set  # its pass ended: more jobs may be due
        self._next_beat = 0.0  # a (re)started loop beats at once
        try:
            while True:
                wake.clear()  # before the pass: a signal during it runs another
                quiet_until = time.monotonic() + COMMITTED_PAUSE_SECONDS
                pause = await self._pass(loop)
                if not self.health.healthy:  # the backoff: signals do not cut it short
                    await asyncio.sleep(pause)
                    continue
                # asyncio.timeout, not wait_for: on Python 3.11 wait_for can swallow a cancel
                # that lands as the event is set, and the deliverer would never stop.
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(pause):
                        await wake.wait()
        finally:
            remove()
            self._on_running(False)
            await self.outbox.aclose()
            for queue in self.jobs:
                await queue.aclose()
            with contextlib.suppress(Exception):
                await asyncio.to_thread(self._stop_beating)

    async def _pass(self, loop: asyncio.AbstractEventLoop) -> float:
        """The heartbeat when it is due, then one delivery pass; return how long to sleep.

        A failure of either (the store away, a row that is odd) is reported to
        :attr:`health`, which logs it once per outage, and the sleep is its backoff (which
        the close signal does not cut short); the heartbeat that failed is tried again on
        the next pass.
        """
        step = "heartbeat"
        try:
            if loop.time() >= self._next_beat:
                await asyncio.to_thread(self._beat)
                self._next_beat = loop.time() + self.heartbeat_seconds
            step = "delivery pass"
            pause = await self.deliver_once()
        except asyncio.CancelledError:
            raise
        except Exception as error:  # the store is away, a row is odd: keep going
            return self.health.failed(step, error, self.clock.now())
        self.health.passed(self.clock.now())
        return min(pause, max(0.0, self._next_beat - loop.time()))

    async def deliver_once(self) -> float:
        """One pass: the due reads, then start the due callbacks; return how long to sleep.

        Callbacks are sent by tasks of their own: a slow receiver holds its slot, never
        the pass. With more than half the slots taken, the next pass comes when enough
        deliveries end to bring it to half, and claims rows for all the free ones.
        """
        closed, started = await self._read_due_and_start()
        next_due, next_callback, next_jobs, now = await asyncio.to_thread(self._next_times)
        pause = FALLBACK_READ_SECONDS
        for moment in (next_due, None if self.outbox.busy else next_callback, *next_jobs):
            if moment is not None:
                pause = min(pause, (moment - now).total_seconds())
        floor = MIN_PAUSE_SECONDS if closed or started else IDLE_PAUSE_SECONDS
        return max(floor, pause)

    async def _read_due_and_start(self) -> tuple[int, int]:
        """The due reads, batch after batch until none is full, then the due callbacks started.

        The reads come first: they decide the closes, and deliveries started between
        them would compete with them for the store and the loop.
        """
        closed = await asyncio.to_thread(self._read_due)
        started = len(await self.outbox.start_due())
        for queue in self.jobs:
            started += await queue.start_due()
        return closed, started

    def _read_due(self) -> int:
        total = 0
        while True:
            closed = self.due.read_due(DUE_BATCH)
            total += closed
            if closed < DUE_BATCH:
                self.due_reads += total
                return total

    def _next_times(self) -> tuple[datetime | None, datetime | None, list[datetime | None], datetime]:
        jobs = [queue.next_job_at() for queue in self.jobs]
        return self.due.next_due(), self.outbox.next_callback_at(), jobs, self.clock.now()

    def _beat(self) -> None:
        with self.store.transaction() as tx:
            tx.heartbeats.beat(self.id, self.clock.now())

    def _stop_beating(self) -> None:
        with self.store.transaction() as tx:
            tx.heartbeats.stop_beating(self.id)


class DelivererThread:
    """A :class:`Deliverer` on an event loop of its own, in a daemon thread.

    What ``Gateway(..., deliver=True)`` runs (:func:`parkgate.gateway.delivering.start_thread`
    assembles it); it starts at once and :meth:`stop` ends it
    (the gateway's ``close()`` calls it). The deliverer's own supervisor restarts its loop
    after an error; should anything still end the event loop before :meth:`stop` (an
    exception the supervisor does not catch), the thread logs it and runs a new one.
    """

    def __init__(self, deliverer: Deliverer) -> None:
        self.deliverer = deliverer
        self._loop: asyncio.AbstractEventLoop | None = None
        self._task: asyncio.Task[None] | None = None
        self._stopping = False
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._main, name="parkgate-deliver", daemon=True)
        self._thread.start()
        self._ready.wait(timeout=10)

    @property
    def health(self) -> DelivererHealth:
        """The deliverer's health (see :class:`~parkgate.delivery.health.DelivererHealth`)."""
        return self.deliverer.health

    def _main(self) -> None:
        async def main() -> None:
            self._loop = asyncio.get_running_loop()
            self._task = asyncio.current_task()
            self._ready.set()
            if self._stopping:  # stop() came while this loop was starting
                return
            with contextlib.suppress(asyncio.CancelledError):
                await self.deliverer.run()

        try:
            while not self._stopping:
                try:
                    asyncio.run(main())
                except BaseException as error:  # the thread must outlive whatever ended the loop
                    if self._stopping:
                        return
                    delay = self.deliverer.health.crashed(error, self.deliverer.clock.now())
                    time.sleep(delay)  # a backoff in this thread of its own, not a test's wait
        finally:
            self._ready.set()

    def stop(self) -> None:
        """Cancel the deliverer and wait for its thread to end."""
        self._stopping = True
        loop, task = self._loop, self._task
        if loop is not None and task is not None:
            with contextlib.suppress(RuntimeError):  # the loop already ended
                loop.call_soon_threadsafe(task.cancel)
        if threading.current_thread() is not self._thread:
            self._thread.join(timeout=10)
