"""Time, injected. Nothing in parkgate reads the wall clock except :class:`SystemClock`."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta
from typing import Protocol


class Clock(Protocol):
    def now(self) -> datetime:
        """The current time, timezone-aware UTC."""
        ...


class SystemClock:
    """The real clock."""

    def now(self) -> datetime:
        return datetime.now(UTC)


class ManualClock:
    """A clock that moves only when told: tests expire asks without sleeping."""

    def __init__(self, start: datetime | None = None) -> None:
        self._now = start or datetime(2026, 1, 1, 9, 0, tzinfo=UTC)
        if self._now.tzinfo is None:
            raise ValueError("ManualClock needs a timezone-aware start time")
        self._lock = threading.Lock()

    def now(self) -> datetime:
        with self._lock:
            return self._now

    def advance(self, by: timedelta | float) -> datetime:
        step = by if isinstance(by, timedelta) else timedelta(seconds=by)
        with self._lock:
            self._now += step
            return self._now

    def set(self, moment: datetime) -> None:
        with self._lock:
            self._now = moment
