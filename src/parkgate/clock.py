"""Time, injected. Nothing in parkgate reads the wall clock except :class:`SystemClock`."""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Protocol


class Clock(Protocol):
    """What the gateway reads the time from: anything with ``now()``."""

    def now(self) -> datetime:
        """The current time, timezone-aware UTC."""
        ...


class SystemClock:
    """The real clock."""

    def now(self) -> datetime:
        """The wall clock's time, in UTC."""
        return datetime.now(UTC)


class ManualClock:
    """A clock that moves only when told: tests expire asks without sleeping.

    Moving it wakes whoever waits on a :class:`~parkgate.Gateway` that reads it (a
    :meth:`~parkgate.Gateway.wait`, a long-poll, the deliverer): they read again at once,
    so a TTL or a reminder made due by :meth:`advance` is acted on then, not at the next
    real-time read.
    """

    def __init__(self, start: datetime | None = None) -> None:
        self._now = start or datetime(2026, 1, 1, 9, 0, tzinfo=UTC)
        if self._now.tzinfo is None:
            raise ValueError("ManualClock needs a timezone-aware start time")
        self._lock = threading.Lock()
        self._listeners: list[Callable[[], None]] = []

    def on_move(self, listener: Callable[[], None]) -> Callable[[], None]:
        """Call ``listener()`` after every :meth:`advance` and :meth:`set`.

        Args:
            listener: Called in the thread that moved the clock; it must be quick and must
                not raise.

        Returns:
            The call that removes it (removing twice is harmless).
        """
        with self._lock:
            self._listeners.append(listener)

        def remove() -> None:
            with self._lock:
                if listener in self._listeners:
                    self._listeners.remove(listener)

        return remove

    def _moved(self) -> None:
        with self._lock:
            listeners = list(self._listeners)
        for listener in listeners:
            listener()

    def now(self) -> datetime:
        """Its start time, moved only by :meth:`advance` and :meth:`set`."""
        with self._lock:
            return self._now

    def advance(self, by: timedelta | float) -> datetime:
        """Move the clock on by a timedelta or a number of seconds; the new time."""
        step = by if isinstance(by, timedelta) else timedelta(seconds=by)
        with self._lock:
            self._now += step
            now = self._now
        self._moved()
        return now

    def set(self, moment: datetime) -> None:
        """Put the clock at ``moment``."""
        with self._lock:
            self._now = moment
        self._moved()


class _AwareClock:
    """Adapts a user's clock (an object with ``now()`` or a bare callable) to UTC-aware times."""

    def __init__(self, source: Callable[[], datetime]) -> None:
        self._source = source

    def now(self) -> datetime:
        """The source's time; a naive one is taken as UTC."""
        moment = self._source()
        if not isinstance(moment, datetime):
            raise TypeError(f"the clock returned {type(moment).__name__}, not a datetime")
        # A naive time is taken as UTC: stored stamps are compared as UTC.
        return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment


def as_clock(clock: Clock | Callable[[], datetime] | None) -> Clock:
    """The clock to use: ours as they are, anything else with ``now()`` or callable, adapted."""
    if clock is None:
        return SystemClock()
    if isinstance(clock, (SystemClock, ManualClock)):
        return clock
    now = getattr(clock, "now", None)
    if callable(now):
        return _AwareClock(now)
    if callable(clock):
        return _AwareClock(clock)
    raise TypeError("clock must have a now() method or be callable")


def as_timedelta(value: timedelta | float, what: str) -> timedelta:
    """A duration given as a timedelta or a number of seconds; must be positive."""
    if isinstance(value, bool) or not isinstance(value, (timedelta, int, float)):
        raise ValueError(f"{what} must be a timedelta or a number of seconds")
    try:
        duration = value if isinstance(value, timedelta) else timedelta(seconds=value)
    except (OverflowError, ValueError):
        raise ValueError(f"{what} of {value!r} seconds is out of range") from None
    if duration <= timedelta(0):
        if isinstance(value, timedelta) or value <= 0:
            raise ValueError(f"{what} must be positive")
        # Durations count whole microseconds: a smaller positive number rounds to nothing.
        raise ValueError(f"{what} of {value!r} seconds is below the smallest TTL, one microsecond (1e-06)")
    return duration
