"""The channel deliverer: runs the due channel jobs of the channels this process has.

The :class:`~parkgate.delivery.Deliverer` drives it with the callbacks and the due reads.
Each pass asks :meth:`ChannelDeliverer.start_due` to start the channels that have a job
due now: a channel with none starts nothing, claims nothing and writes nothing, and the
deliverer sleeps until :meth:`ChannelDeliverer.next_job_at` (or until a job is queued: the
close signal wakes it as for a callback, from this process or, across processes, by
PostgreSQL's ``NOTIFY`` or SQLite's change check). So an idle server with channels costs
what one without them costs.

Each channel has a lane of its own: its jobs run in a worker thread of their own, off the
deliverer's loop, so a slow platform holds its own jobs only, never another channel's,
a due read, a callback or a person's reply. A lane claims one job at a time, leased for
:data:`LEASE_SECONDS`, far longer than one job can take, so several deliverers on one
database (``parkgate serve``'s workers, ``parkgate deliver``) never run one job twice
while it runs. Of an ask's jobs, the close update goes first: it waits for the post, never
for replies (:meth:`~parkgate.store.base.ChannelTables.claim_jobs`).

A post counts each platform call before it begins (``channel_posts.sends``) and records
the message after it. A call whose result was never recorded (the process killed during
it) may have posted: the job is run again after its lease and posts again, the message
recorded is the ask's post (the one its close update edits), and a press on the earlier
message is taken as the ask's own (:attr:`~parkgate.store.channel_tables.ChannelPost.unrecorded_sends`),
so its buttons answer how the ask stands rather than nothing. A post already recorded is
never sent again.

Each attempt of a job is a ``posted`` event in its ask's log (the channel, the job and
``ok``, ``retrying`` or ``failed``: :mod:`parkgate.core.events`), written in the
transaction that marks the job. A job that raises is retried with the callbacks' backoff and jitter
(:func:`~parkgate.delivery.outbox.backoff_delay`,
:func:`~parkgate.delivery.outbox.jittered`) up to
:data:`~parkgate.delivery.outbox.MAX_ATTEMPTS` attempts, then kept as failed, with its
last error, for an operator (:meth:`~parkgate.store.base.ChannelTables.failed_jobs`).
A platform that says when to call again (:class:`~parkgate.errors.ChannelRetryLater`, a
429's ``retry_after``) is retried no sooner. Jobs live in the database: a job queued
before a restart runs after it.
"""

from __future__ import annotations

import asyncio
import json
import logging
import random
from collections.abc import Callable, Collection, Mapping
from datetime import datetime, timedelta

from parkgate.channels.base import Channel, ChannelJobFailed, ChannelReply, ChannelRetryLater
from parkgate.channels.jobs import CLOSED, POST, REPLY
from parkgate.clock import Clock
from parkgate.core.events import posted
from parkgate.delivery.outbox import MAX_ATTEMPTS, backoff_delay, jittered
from parkgate.store import Intent, Store
from parkgate.store.channel_tables import ChannelJob

log = logging.getLogger("parkgate.channels")

#: A claimed job is leased this long. A lane claims one job at a time, and a job makes at
#: most a few platform calls, each bounded by its client's timeout (10 s, a dropped
#: connection retried once): the lease is twice the longest a job can take, so no other
#: deliverer claims a job while it runs. A job claimed by a process that died runs again
#: once its lease ends.
LEASE_SECONDS = 120.0
#: What became of a job's attempt, as ``parkgate_channel_jobs_total`` counts it.
DONE, RETRY, FAILED = "done", "retry", "failed"


class ChannelDeliverer:
    """Runs the channel jobs of ``channels`` queued in ``store``, a lane per channel.

    Args:
        store: The store whose ``channel_outbox`` it runs.
        clock: The time jobs are due and retried by.
        channels: The channels by name (a live mapping: channels added later run too);
            jobs of other channels are left to another process.
        draw: The jitter's random draw from 0 to 1 (tests pass a fixed one).
        on_job: Called with each job's channel, kind and outcome once it ran (``done``,
            ``retry`` or ``failed``): the per-channel metrics.
    """

    def __init__(
        self,
        store: Store,
        clock: Clock,
        channels: Mapping[str, Channel],
        draw: Callable[[], float] = random.random,
        on_job: Callable[[str, str, str], None] = lambda channel, job, outcome: None,
    ) -> None:
        self.store = store
        self.clock = clock
        self.channels = channels
        self._draw = draw
        self._on_job = on_job
        #: The running lane of each channel that has one.
        self._lanes: dict[str, asyncio.Task[int]] = {}
        #: Called when a lane's pass ends (the deliverer wakes: more may be due).
        self.on_done: Callable[[], None] = lambda: None

    @property
    def busy(self) -> bool:
        """Whether a lane is running."""
        return any(not lane.done() for lane in self._lanes.values())

    def _idle(self) -> list[str]:
        """The channels whose lane is not running."""
        lanes = dict(self._lanes)  # next_job_at reads it from a worker thread
        return [name for name in list(self.channels) if name not in lanes or lanes[name].done()]

    async def start_due(self) -> bool:
        """Start a lane for each idle channel with a job due now; whether any started.

        A channel with no job due starts nothing: what it costs is one read.
        """
        idle = self._idle()
        if not idle:
            return False
        now = self.clock.now()
        due = await asyncio.to_thread(self._next_jobs_at, idle)
        started = False
        for name, at in due.items():
            if at <= now and name in self.channels:
                lane = asyncio.create_task(asyncio.to_thread(self.run_due, (name,)), name=f"parkgate-channel-{name}")
                lane.add_done_callback(self._lane_ended)
                self._lanes[name] = lane
                started = True
        return started

    def _lane_ended(self, lane: asyncio.Task[int]) -> None:
        if not lane.cancelled() and lane.exception() is not None:  # the store away: the next pass backs off
            log.warning("a channel lane stopped: %s", lane.exception())
        self.on_done()

    async def aclose(self) -> None:
        """Wait for running lanes to end (their threads cannot be cut short)."""
        await asyncio.gather(*self._lanes.values(), return_exceptions=True)

    def next_job_at(self) -> datetime | None:
        """When the earliest job of a channel with no running lane is due (``None``: none)."""
        times = self._next_jobs_at(self._idle())
        return min(times.values(), default=None)

    def _next_jobs_at(self, channels: Collection[str]) -> dict[str, datetime]:
        if not channels:
            return {}
        with self.store.transaction(Intent.READ_FIRST) as tx:
            return tx.channels.next_jobs_at(channels)

    def run_due(self, channels: Collection[str] | None = None) -> int:
        """Claim and run due jobs of ``channels`` (default: all), one at a time until none
        is due; return how many ran.

        An ask's next job becomes claimable once its earlier one is done, so a job is
        followed by another claim whatever it did.
        """
        names = tuple(self.channels) if channels is None else tuple(channels)
        total = 0
        while names:
            now = self.clock.now()
            with self.store.transaction() as tx:
                jobs = tx.channels.claim_jobs(names, now, now + timedelta(seconds=LEASE_SECONDS), 1)
            if not jobs:
                return total
            for job in jobs:
                self.run_job(job)
            total += len(jobs)
        return total

    def run_job(self, job: ChannelJob) -> bool:
        """Run one claimed job and record its outcome; whether it succeeded."""
        try:
            self._perform(job)
        except Exception as error:  # the platform away, a refusal: retried, or given up
            self._failed(job, error)
            return False
        now = self.clock.now()
        with self.store.transaction() as tx:
            tx.events.record((posted(job.ask_id, now, job.channel, job.job, "ok"),))
            tx.channels.job_done(job.id, now)
        self._on_job(job.channel, job.job, DONE)
        return True

    def _perform(self, job: ChannelJob) -> None:
        channel = self.channels[job.channel]
        with self.store.transaction() as tx:
            ask, post = tx.ask(job.ask_id), tx.channels.post_of(job.ask_id)
        if ask is None or post is None:
            raise ChannelJobFailed(f"ask {job.ask_id} has no post on {job.channel}")
        if job.job == POST:
            if post.location is not None:  # recorded already (by a run whose lease had lapsed)
                return
            with self.store.transaction() as tx:
                earlier = tx.channels.sending(ask.id)
            if earlier:
                log.warning(
                    "ask %s: %d earlier %s post call(s) left no recorded message; posting it again",
                    ask.id,
                    earlier,
                    job.channel,
                )
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
        delay = jittered(backoff_delay(attempt), self._draw())
        if isinstance(error, ChannelRetryLater):  # the platform said when: never sooner
            delay = max(delay, error.seconds)
        retry_at = None if final else now + timedelta(seconds=delay)
        event = posted(job.ask_id, now, job.channel, job.job, "failed" if final else "retrying")
        with self.store.transaction() as tx:
            tx.events.record((event,))
            tx.channels.job_failed(job.id, described, retry_at, now)
        self._on_job(job.channel, job.job, FAILED if final else RETRY)
        log.warning(
            "channel job %s (%s %s of ask %s) failed%s: %s",
            job.id,
            job.channel,
            job.job,
            job.ask_id,
            " for good" if final else f", attempt {attempt}",
            described,
        )
