"""Prometheus metrics for one gateway: every outcome counted, nothing only in a debugger."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from parkgate.core.phrases import ReplyKind

TIME_TO_ANSWER_BUCKETS = (5, 15, 30, 60, 120, 300, 900, 1800, 3600, 7200, 21600, 86400)


class Metrics:
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
            "Seconds from parking an ask to its answer or selection.",
            ["surface"],
            buckets=TIME_TO_ANSWER_BUCKETS,
            registry=self.registry,
        )
        self.retries = Counter(
            "parkgate_store_retries",
            "Transactions run again because a racing worker, or a stale memory of a conversation "
            "(PostgreSQL), got there first. Nothing was written by the failed try.",
            ["surface"],
            registry=self.registry,
        )
        self._retries = self.retries.labels(surface)
        self.open_asks = Gauge(
            "parkgate_open_asks",
            "Asks with status open in the store, counted at scrape time. An ask past its TTL "
            "counts until the read that finds it closes it (there is no sweeper).",
            registry=self.registry,
        )
        self._reply_children: dict[ReplyKind, Any] = {}
        for kind in ReplyKind:  # every series exists from the start, at zero
            self._reply_children[kind] = self.replies.labels(kind.value, surface)

    def count_open_with(self, count: Callable[[], int]) -> None:
        """Make the open-asks gauge read the store on each scrape (right across processes)."""
        self.open_asks.set_function(lambda: float(count()))

    def reply(self, kind: ReplyKind) -> None:
        # The labelled child is looked up once per kind (labels() takes a lock and
        # builds a key on every call; this runs once per message).
        child = self._reply_children.get(kind)
        if child is None:
            child = self._reply_children[kind] = self.replies.labels(kind.value, self.surface)
        child.inc()

    def retry(self) -> None:
        self._retries.inc()

    def close(self, outcome: str, seconds_open: float | None = None) -> None:
        self.closed.labels(outcome, self.surface).inc()
        if seconds_open is not None:
            # A clock stepped backwards (an NTP correction) can make answered_at precede
            # asked_at; a negative duration would corrupt the histogram's sum, so it counts as 0.
            self.time_to_answer.labels(self.surface).observe(max(0.0, seconds_open))
