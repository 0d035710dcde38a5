"""The deliverer's health: whether its passes succeed, since when they fail, and why.

A deliverer's passes touch the store (its heartbeat, the due reads, claiming callbacks),
and the store can be away for a while: PostgreSQL stopped, the SQLite file held by
another writer, a full disk. :class:`DelivererHealth` turns such an *outage* into one
warning when it starts (naming the step and the cause) and one info line when a pass
succeeds again, never a line per failed try, and gives the delay before the next try
(:class:`Backoff`). ``/healthz`` reads it (:attr:`DelivererHealth.healthy`), and each
successful pass sets the ``parkgate_deliverer_last_pass_timestamp_seconds`` gauge.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

log = logging.getLogger("parkgate.deliver")

#: The first retry after a failed pass comes this many seconds later, doubled per failure...
RETRY_FIRST_SECONDS = 1.0
#: ...up to this: a deliverer resumes within this long of its store coming back.
RETRY_CAP_SECONDS = 5.0


class DelivererState(StrEnum):
    """Where a deliverer stands; ``/healthz`` names it."""

    #: Started, no pass finished yet.
    STARTING = "starting"
    #: Its last pass succeeded.
    RUNNING = "running"
    #: Its last pass failed (the store is away, say): it retries with backoff.
    FAILING = "failing"
    #: Its loop stopped on an unexpected error: it is restarted after a backoff.
    RESTARTING = "restarting"
    #: Stopped on purpose (its gateway or server is closing).
    STOPPED = "stopped"


#: The states in which due reads and callbacks are not happening.
UNHEALTHY = frozenset({DelivererState.FAILING, DelivererState.RESTARTING})


@dataclass(frozen=True)
class Backoff:
    """Retry delays: ``first`` seconds, doubled per consecutive failure, never over ``cap``."""

    first: float = RETRY_FIRST_SECONDS
    cap: float = RETRY_CAP_SECONDS

    def delay(self, failures: int) -> float:
        """The wait after the ``failures``-th failure in a row (1 for the first).

        Args:
            failures: consecutive failures so far, at least 1.

        Returns:
            Seconds to wait before the next try.
        """
        return min(self.cap, self.first * 2.0 ** min(max(0, failures - 1), 32))


#: The backoff of a deliverer given none (``Gateway(deliver=True)``, ``parkgate serve``).
DEFAULT_BACKOFF = Backoff()


def cause_of(error: BaseException) -> str:
    """An error as one line for the log: its class and message."""
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0]}" if text else type(error).__name__


class DelivererHealth:
    """The state of one deliverer across its outages and restarts (see the module doc).

    ``on_pass`` is called with each successful pass's time (the gateway's metrics set
    the last-pass gauge with it).
    """

    def __init__(self, backoff: Backoff | None = None, on_pass: Callable[[datetime], None] | None = None) -> None:
        self.backoff = backoff or DEFAULT_BACKOFF
        self.on_pass = on_pass
        self.state = DelivererState.STARTING
        #: When the last successful pass ended (the gateway's clock), if any did.
        self.last_pass: datetime | None = None
        #: When the current outage began (``None`` while healthy).
        self.failing_since: datetime | None = None
        #: The failures in a row of the current outage.
        self.failures = 0
        #: Times the loop was restarted after an unexpected error.
        self.restarts = 0
        self._crash_logged = False  # a crash is logged once per outage, even amid failed passes

    @property
    def healthy(self) -> bool:
        """False while passes fail or the loop waits to be restarted."""
        return self.state not in UNHEALTHY

    def passed(self, now: datetime) -> None:
        """A pass succeeded: end an outage (one info line) and note the time."""
        if self.failing_since is not None:
            seconds = max(0.0, (now - self.failing_since).total_seconds())
            log.info(
                "the deliverer recovered: due reads and callbacks resume after %d failed %s in %.1f s",
                self.failures,
                "try" if self.failures == 1 else "tries",
                seconds,
            )
        self.state = DelivererState.RUNNING
        self.failing_since = None
        self.failures = 0
        self._crash_logged = False
        self.last_pass = now
        if self.on_pass is not None:
            self.on_pass(now)

    def failed(self, step: str, error: BaseException, now: datetime) -> float:
        """A pass failed at ``step``: log it if it starts an outage; return the delay before the next try.

        Args:
            step: what failed (``"heartbeat"``, ``"pass"``).
            error: the cause; its class and message are logged once per outage.
            now: the gateway's time.

        Returns:
            Seconds to wait before trying again (:class:`Backoff`).
        """
        self.failures += 1
        delay = self.backoff.delay(self.failures)
        if self.failing_since is None:
            self.failing_since = now
            log.warning(
                "the deliverer's %s failed (%s): due reads and callbacks wait; retrying every %g s at most "
                "until it succeeds (logged once per outage)",
                step,
                cause_of(error),
                self.backoff.cap,
            )
        self.state = DelivererState.FAILING
        return delay

    def crashed(self, error: BaseException, now: datetime) -> float:
        """The loop stopped on an unexpected error: log it (with its traceback, once per
        outage) and return the delay before it is restarted."""
        self.failures += 1
        self.restarts += 1
        delay = self.backoff.delay(self.failures)
        self.failing_since = self.failing_since or now
        if not self._crash_logged:
            self._crash_logged = True
            log.error(
                "the deliverer stopped on an unexpected error (%s); restarting it in %g s",
                cause_of(error),
                delay,
                exc_info=error,
            )
        self.state = DelivererState.RESTARTING
        return delay

    def stopped(self) -> None:
        """The deliverer was stopped on purpose."""
        self.state = DelivererState.STOPPED
