"""Prometheus metrics for one gateway: every outcome counted, nothing only in a debugger.

Several server processes (``parkgate serve --workers N``) count into one set of files:
with ``PROMETHEUS_MULTIPROC_DIR`` set (``serve`` sets it for N > 1), the Prometheus
client keeps each process's counters in that folder and :meth:`Metrics.exposition`
adds them up, so any worker's ``/metrics`` answers for all of them.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator
from datetime import datetime
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.multiprocess import MultiProcessCollector
from prometheus_client.registry import Collector

from parkgate.core.kinds import ReplyKind
from parkgate.store.base import AskGauges

TIME_TO_ANSWER_BUCKETS = (5, 15, 30, 60, 120, 300, 900, 1800, 3600, 7200, 21600, 86400)
#: The ``channel`` label of an answer to an ask that was posted to no channel.
NO_CHANNEL = "none"
#: Where the Prometheus client keeps several processes' counters (its own variable).
MULTIPROCESS_ENV = "PROMETHEUS_MULTIPROC_DIR"
OPEN_ASKS_HELP = "Open asks not past their TTL, counted at scrape time."
OVERDUE_ASKS_HELP = (
    "Open asks past their TTL, counted at scrape time: awaiting their due read (a callback "
    "or a watcher waits on them), or the next read of anyone (nothing waits on them)."
)
UNREAD_DUE_HELP = (
    "Seconds since the earliest due time that passed without its due read, among open asks "
    "something waits on (0: none). A due read closes such an ask at once; a growing value "
    "means no deliverer runs or it cannot keep up."
)

DELIVERER_PASS_HELP = (
    "Unix time of the last successful pass of this process's deliverer (its heartbeat, due reads "
    "and callback claims); with several workers, the latest of any worker (one working deliverer "
    "serves the whole database). A healthy deliverer passes at least every 15 s: an older value "
    "means none passes (failing, or not running)."
)

CALLBACKS_HELP = (
    "Callbacks in the outbox not delivered, counted at scrape time: pending (queued, or "
    "waiting for a retry) and failed (given up on: re-arm with POST /v1/asks/{id}/callback/retry)."
)


class _AskGauges(Collector):
    r"""The open-ask gauges, read from the store on each scrape.

    A collector rather than ``Gauge``\s: the figures are the store's, the same from every
    process, so they must not be per-process values that are added up.
    """

    def __init__(self) -> None:
        self.read: Callable[[], AskGauges] | None = None

    def collect(self) -> Iterator[Metric]:
        """The gauges as the store reports them now; with no reader set, none."""
        figures = self.read() if self.read is not None else None
        for name, help_text, value in (
            ("parkgate_open_asks", OPEN_ASKS_HELP, figures.open if figures else None),
            ("parkgate_asks_overdue", OVERDUE_ASKS_HELP, figures.overdue if figures else None),
            (
                "parkgate_oldest_unread_due_seconds",
                UNREAD_DUE_HELP,
                figures.oldest_unread_due_seconds if figures else None,
            ),
        ):
            gauge = GaugeMetricFamily(name, help_text)
            if value is not None:
                gauge.add_metric([], float(value))
            yield gauge
        callbacks = GaugeMetricFamily("parkgate_callbacks", CALLBACKS_HELP, labels=["status"])
        if figures is not None:
            callbacks.add_metric(["pending"], float(figures.callbacks_pending))
            callbacks.add_metric(["failed"], float(figures.callbacks_failed))
        yield callbacks


class Metrics:
    """The counters of one gateway, labelled with its ``surface`` (``library``, ``http``...)."""

    def __init__(self, surface: str, registry: CollectorRegistry | None = None) -> None:
        self.surface = surface
        self.registry = registry or CollectorRegistry()
        self.replies = Counter(
            "parkgate_replies", "Replies by kind (asked = asks parked).", ["kind", "surface"], registry=self.registry
        )
        self.closed = Counter(
            "parkgate_asks_closed",
            "Asks closed, by outcome: selected, answered, cancelled, replaced, expired.",
            ["outcome", "surface"],
            registry=self.registry,
        )
        self.time_to_answer = Histogram(
            "parkgate_time_to_answer_seconds",
            "Seconds from parking an ask to its answer or selection, by the channel it was posted "
            f"to ({NO_CHANNEL}: not posted).",
            ["channel", "surface"],
            buckets=TIME_TO_ANSWER_BUCKETS,
            registry=self.registry,
        )
        self.retries = Counter(
            "parkgate_store_retries",
            "Transactions run again because a racing worker got there first, or a conversation was "
            "not as this process remembered it (another process wrote it, or a message came twice). "
            "Nothing was written by the failed try.",
            ["surface"],
            registry=self.registry,
        )
        self._retries = self.retries.labels(surface)
        self.reminders = Counter(
            "parkgate_reminders", "Reminders fired by due reads.", ["surface"], registry=self.registry
        )
        self.escalations = Counter(
            "parkgate_escalations",
            "Escalations fired by due reads (their responders added).",
            ["surface"],
            registry=self.registry,
        )
        self.channel_jobs = Counter(
            "parkgate_channel_jobs",
            "Channel jobs run, by channel, job (post, closed, reply) and "
            "outcome: done, retry (failed, tried again later) or failed (given up: GET /v1/channels/failed).",
            ["channel", "job", "outcome", "surface"],
            registry=self.registry,
        )
        self._open_asks = _AskGauges()
        self.registry.register(self._open_asks)
        self._reply_children: dict[ReplyKind, Any] = {}
        for kind in ReplyKind:  # every series exists from the start, at zero
            self._reply_children[kind] = self.replies.labels(kind.value, surface)
        self._closed_children: dict[str, Any] = {}
        self._time_to_answer: dict[str, Any] = {}  # by channel, each made on its first answer
        self._last_pass: Gauge | None = None  # made by the first pass of a deliverer
        self._lock = threading.Lock()

    def read_gauges_with(self, read: Callable[[], AskGauges]) -> None:
        """Make the open-ask gauges read the store on each scrape (right across processes)."""
        self._open_asks.read = read

    def exposition(self) -> bytes:
        """The Prometheus text for a scrape: this process's counters, or, when several
        processes count into :data:`MULTIPROCESS_ENV`, all of theirs added up."""
        if not os.environ.get(MULTIPROCESS_ENV):
            return generate_latest(self.registry)
        combined = CollectorRegistry()
        MultiProcessCollector(combined)  # type: ignore[no-untyped-call]  # the client ships no types here
        combined.register(self._open_asks)
        return generate_latest(combined)

    def reply(self, kind: ReplyKind) -> None:
        """Count one reply of ``kind``.

        Each kind's labelled child is made up front: ``labels()`` takes a lock and builds
        a key on every call, and this runs once a message.
        """
        self._reply_children[kind].inc()

    def deliverer_passed(self, at: datetime) -> None:
        """Set ``parkgate_deliverer_last_pass_timestamp_seconds`` to ``at``, a deliverer's
        successful pass.

        The gauge is made by the first pass, so a gateway that runs no deliverer shows none
        (rather than a zero that reads as a deliverer stuck since 1970). With several
        workers the scrape shows the latest of theirs (``max``: a worker that died leaves
        an old value behind, which never hides a newer one).
        """
        with self._lock:
            if self._last_pass is None:
                self._last_pass = Gauge(
                    "parkgate_deliverer_last_pass_timestamp_seconds",
                    DELIVERER_PASS_HELP,
                    registry=self.registry,
                    multiprocess_mode="max",
                )
        self._last_pass.set(at.timestamp())

    def channel_job(self, channel: str, job: str, outcome: str) -> None:
        """Count one channel job run: its channel, its kind and how it ended (``parkgate_channel_jobs_total``)."""
        self.channel_jobs.labels(channel, job, outcome, self.surface).inc()

    def retry(self) -> None:
        """Count one transaction run again after a conflict."""
        self._retries.inc()

    def fired(self, reminders: int, escalations: int) -> None:
        """Count reminders and escalations fired (``parkgate_reminders_total``, ``parkgate_escalations_total``)."""
        if reminders:
            self.reminders.labels(self.surface).inc(reminders)
        if escalations:
            self.escalations.labels(self.surface).inc(escalations)

    def close(self, outcome: str, seconds_open: float | None = None, channel: str = NO_CHANNEL) -> None:
        """Count one ask closed with ``outcome``; for an answer, how long it was open
        (``parkgate_time_to_answer_seconds``) under the ``channel`` it was posted to."""
        child = self._closed_children.get(outcome)  # made on an outcome's first close, then reused
        if child is None:
            child = self._closed_children[outcome] = self.closed.labels(outcome, self.surface)
        child.inc()
        if seconds_open is not None:
            timer = self._time_to_answer.get(channel)
            if timer is None:
                timer = self._time_to_answer[channel] = self.time_to_answer.labels(channel, self.surface)
            # A clock stepped backwards (an NTP correction) can make answered_at precede
            # asked_at; a negative duration would corrupt the histogram's sum, so it counts as 0.
            timer.observe(max(0.0, seconds_open))
