"""The channel deliverer: runs the due channel jobs of the channels this process has.

The :class:`~parkgate.delivery.Deliverer` drives it with the callbacks and the due reads:
each pass starts :meth:`ChannelDeliverer.start_due`, which claims due jobs (leased, so
several deliverers on one database never run one job twice at once) and runs them in a
worker thread, off the deliverer's loop: a slow platform holds its own jobs, never a
due read, a callback or a person's reply. A job that raises is retried with the
callbacks' backoff and jitter (:func:`~parkgate.delivery.outbox.backoff_delay`,
:func:`~parkgate.delivery.outbox.jittered`) up to
:data:`~parkgate.delivery.outbox.MAX_ATTEMPTS` attempts, then kept as failed, with its
last error, for an operator (:meth:`~parkgate.store.base.ChannelTables.failed_jobs`).
Jobs live in the database: a job queued before a restart runs after it.
"""

from __future__ import annotations

import asyncio
import json
import logging
import random
from collections.abc import Callable, Mapping
from datetime import datetime, timedelta

from parkgate.channels.base import Channel, ChannelJobFailed, ChannelReply
from parkgate.channels.jobs import CLOSED, POST, REPLY
from parkgate.clock import Clock
from parkgate.delivery.outbox import MAX_ATTEMPTS, backoff_delay, jittered
from parkgate.store import Store
from parkgate.store.channel_tables import ChannelJob

log = logging.getLogger("parkgate.channels")

#: Jobs claimed at once.
BATCH = 20
#: A claimed job is leased this long: the platform's timeout and a margin.
LEASE_SECONDS = 60.0


class ChannelDeliverer:
    """Runs the channel jobs of ``channels`` queued in ``store``.

    Args:
        store: The store whose ``channel_outbox`` it runs.
        clock: The time jobs are due and retried by.
        channels: The channels by name; jobs of other channels are left to another process.
        draw: The jitter's random draw from 0 to 1 (tests pass a fixed one).
    """

    def __init__(
        self,
        store: Store,
        clock: Clock,
        channels: Mapping[str, Channel],
        draw: Callable[[], float] = random.random,
    ) -> None:
        self.store = store
        self.clock = clock
        self.channels = channels
        self._draw = draw
        self._task: asyncio.Task[int] | None = None
        #: Called when a pass of jobs ends (the deliverer wakes: more may be due).
        self.on_done: Callable[[], None] = lambda: None

    @property
    def busy(self) -> bool:
        """Whether a pass of jobs is running."""
        return self._task is not None and not self._task.done()

    async def start_due(self) -> bool:
        """Start a pass over the due jobs in a worker thread unless one runs; whether one started."""
        if self.busy or not self.channels:
            return False
        self._task = asyncio.create_task(asyncio.to_thread(self.run_due))
        self._task.add_done_callback(lambda task: self.on_done())
        return True

    async def aclose(self) -> None:
        """Wait for a running pass to end (its thread cannot be cut short)."""
        if self._task is not None:
            await asyncio.gather(self._task, return_exceptions=True)

    def next_job_at(self) -> datetime | None:
        """When the earliest job of these channels is due (``None``: none, or a pass runs)."""
        if not self.channels or self.busy:
            return None
        with self.store.transaction() as tx:
            return tx.channels.next_job_at(self.channels)

    def run_due(self) -> int:
        """Claim and run due jobs, batch after batch until none is due; return how many ran.

        An ask's next job becomes claimable once its earlier one is done, so a batch is
        followed by another even when it was not full.
        """
        total = 0
        while True:
            now = self.clock.now()
            with self.store.transaction() as tx:
                jobs = tx.channels.claim_jobs(self.channels, now, now + timedelta(seconds=LEASE_SECONDS), BATCH)
            for job in jobs:
                self.run_job(job)
            total += len(jobs)
            if not jobs:
                return total

    def run_job(self, job: ChannelJob) -> bool:
        """Run one claimed job and record its outcome; whether it succeeded."""
        try:
            self._perform(job)
        except Exception as error:  # the platform away, a refusal: retried, or given up
            self._failed(job, error)
            return False
        with self.store.transaction() as tx:
            tx.channels.job_done(job.id, self.clock.now())
        return True

    def _perform(self, job: ChannelJob) -> None:
        channel = self.channels[job.channel]
        with self.store.transaction() as tx:
            ask, post = tx.ask(job.ask_id), tx.channels.post_of(job.ask_id)
        if ask is None or post is None:
            raise ChannelJobFailed(f"ask {job.ask_id} has no post on {job.channel}")
        if job.job == POST:
            posted = channel.post(ask, json.loads(post.target))
            with self.store.transaction() as tx:
                tx.channels.posted(ask.id, json.dumps(dict(posted.location)), posted.thread_key, self.clock.now())
            return
        if post.location is None:
            raise ChannelJobFailed(f"ask {ask.id} was never posted on {job.channel}")
        location = json.loads(post.location)
        if job.job == CLOSED:
            channel.closed(ask, location)
        elif job.job == REPLY:
            channel.reply(ask, location, ChannelReply.from_json(job.payload))
        else:
            raise ChannelJobFailed(f"{job.channel} runs no {job.job!r} job")

    def _failed(self, job: ChannelJob, error: Exception) -> None:
        attempt = job.attempts + 1
        final = isinstance(error, ChannelJobFailed) or attempt >= MAX_ATTEMPTS
        described = f"{type(error).__name__}: {error}"
        now = self.clock.now()
        retry_at = None if final else now + timedelta(seconds=jittered(backoff_delay(attempt), self._draw()))
        with self.store.transaction() as tx:
            tx.channels.job_failed(job.id, described, retry_at, now)
        log.warning(
            "channel job %s (%s %s of ask %s) failed%s: %s",
            job.id,
            job.channel,
            job.job,
            job.ask_id,
            " for good" if final else f", attempt {attempt}",
            described,
        )
