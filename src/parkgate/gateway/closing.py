"""What follows the close of an ask, once its transaction commits: the metrics, the
``ask_expired`` log line, the close signal its waiters hear, and the warning when its
callback has nobody to deliver it; and how long a waiter sleeps between reads."""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from parkgate.clock import Clock
from parkgate.core.kinds import AskStatus
from parkgate.core.model import Ask
from parkgate.delivery.heartbeat import is_fresh
from parkgate.metrics import NO_CHANNEL, Metrics
from parkgate.store import Store
from parkgate.store.signal import FALLBACK_READ_SECONDS, Change, CloseSignal

log = logging.getLogger("parkgate")

#: A waiter reads its ask this long after its due time, so that the read finds it past
#: its TTL (expiry is strict: an ask is past its TTL only after the due instant).
DUE_MARGIN_SECONDS = 0.002
#: The time-to-answer ``channel`` label of an answer whose post could not be read.
UNKNOWN_CHANNEL = "unknown"
#: How long after warning that nothing delivers callbacks a gateway looks again.
UNDELIVERED_CHECK_SECONDS = 60.0


@dataclass(frozen=True, slots=True)
class ClosedAsk:
    """An ask closed inside a transaction: reported to metrics and logs after commit.

    ``idle_minutes`` is set for an expiry (the ``ask_expired`` log line gives it).
    """

    ask: Ask
    idle_minutes: float | None = None


class CloseReport:
    """Reports the asks a committed transaction closed."""

    def __init__(
        self, store: Store, clock: Clock, metrics: Metrics, signal: CloseSignal, delivering: Callable[[], bool]
    ) -> None:
        self._signal = signal
        self._store = store
        self._metrics = metrics
        self._delivering = delivering
        self._undelivered = UndeliveredWarning(store, clock)

    def committed(self, closed: list[ClosedAsk]) -> None:
        channels = self._channels_of([item.ask for item in closed if _answered(item.ask) and item.ask.watched])
        for item in closed:
            ask = item.ask
            seconds = (ask.answered_at - ask.asked_at).total_seconds() if ask.answered_at else None
            self._metrics.close(
                ask.outcome or ask.status.value,
                seconds if _answered(ask) else None,
                channels.get(ask.id, NO_CHANNEL),
            )
            if item.idle_minutes is not None:
                log.info(json.dumps(_expiry_record(ask, item.idle_minutes)))
        self._signal.closed([item.ask.id for item in closed])

    def _channels_of(self, answered: list[Ask]) -> dict[str, str]:
        """The channel each of ``answered`` was posted to, by ask id (none: not posted).

        Only asks something waited on are looked up (a post makes an ask watched), so an
        answer to a plain ask costs no read. A lookup that fails labels them ``unknown``:
        the answer committed, and its metric must not fail it.
        """
        if not answered:
            return {}
        ids = [ask.id for ask in answered]
        try:
            with self._store.transaction() as tx:
                posts = tx.channels.posts_of(ids)
        except Exception:
            return dict.fromkeys(ids, UNKNOWN_CHANNEL)
        return {ask_id: post.channel for ask_id, post in posts.items()}

    def queued(self) -> None:
        """After a commit that queued callbacks: wake the deliverers, or warn that none runs."""
        self._signal.changed(Change.OUTBOX)
        if not self._delivering():
            self._undelivered.check()


def _answered(ask: Ask) -> bool:
    return ask.status is AskStatus.ANSWERED and ask.answered_at is not None


def _expiry_record(ask: Ask, idle_minutes: float) -> dict[str, object]:
    """The ``ask_expired`` log line's fields."""
    return {
        "event": "ask_expired",
        "ask_id": ask.id,
        "conversation_id": ask.conversation_id,
        "run_id": ask.run_id,
        "idle_minutes": round(idle_minutes, 1),
        "ttl_seconds": ask.ttl_seconds,
        "default_answer": ask.answer,
    }


class UndeliveredWarning:
    """Logs once per gateway when it queues callbacks while no deliverer runs on its database."""

    def __init__(self, store: Store, clock: Clock) -> None:
        self._store = store
        self._clock = clock
        self._lock = threading.Lock()
        self._next_check = 0.0
        self._warned = False

    def check(self) -> None:
        with self._lock:
            if self._warned or time.monotonic() < self._next_check:
                return
            self._next_check = time.monotonic() + UNDELIVERED_CHECK_SECONDS
        try:
            with self._store.transaction() as tx:
                last = tx.heartbeats.last_beat()
        except Exception:  # a warning must never fail the call that queued the callback
            return
        now = self._clock.now()
        if is_fresh(last, now):
            return
        with self._lock:
            self._warned = True
        log.warning(
            "callbacks were queued in the outbox at %s but no deliverer runs on this database: "
            "nothing will send them. Run one: Gateway(..., deliver=True), `parkgate deliver --db URL`, "
            "or `parkgate serve`",
            self._store.url,
        )


def pause_before_reading(ask: Ask, now: datetime, remaining: float) -> float:
    """How long a waiter on open ``ask`` sleeps before its next read unless signalled: until
    its due time (a hair after, so the read finds it past its TTL), the end of its wait
    (``remaining`` seconds), or the fallback read, whichever comes first."""
    due_in = (ask.due_at - now).total_seconds() + DUE_MARGIN_SECONDS
    return max(0.0, min(remaining, due_in, FALLBACK_READ_SECONDS))
