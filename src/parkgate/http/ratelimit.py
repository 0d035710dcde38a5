"""Requests a second per token: a token bucket for each, in this server process.

Each token's bucket holds up to one second's worth of requests (at least one) and
refills at its rate; a request that finds it empty is refused with the seconds until
the next one fits. With several worker processes each keeps its own buckets.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable


class RateLimiter:
    """Token buckets by name; ``monotonic`` is injectable (a test's clock)."""

    def __init__(self, monotonic: Callable[[], float] = time.monotonic) -> None:
        self._now = monotonic
        self._buckets: dict[str, tuple[float, float]] = {}  # name -> (requests left, when)
        self._lock = threading.Lock()

    def take(self, name: str, rate: float) -> int | None:
        """Spend one request of ``name``'s bucket: ``None`` if it fits, else whole seconds to wait (at least 1)."""
        burst = max(1.0, rate)
        with self._lock:
            now = self._now()
            left, then = self._buckets.get(name, (burst, now))
            left = min(burst, left + (now - then) * rate)
            if left >= 1.0:
                self._buckets[name] = (left - 1.0, now)
                return None
            self._buckets[name] = (left, now)
            return max(1, math.ceil((1.0 - left) / rate))
