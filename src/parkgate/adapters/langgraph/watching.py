"""What a bridge's watcher needs beside its loop: the one warning (a watch with no
deliverer on its database waits for expiries that nobody reads, so threads whose asks
lapse are never resumed), and the conversations a drive is handling now (the watcher
leaves their closed asks to that drive)."""

from __future__ import annotations

import collections
import contextlib
import threading
from collections.abc import Iterator

from parkgate.adapters.langgraph.steps import log
from parkgate.delivery.heartbeat import is_fresh
from parkgate.gateway import Gateway

#: What the warning says; ``%r`` is the graph's name, ``%s`` the store's URL.
NO_DELIVERER = (
    "watching graph %r with no deliverer running on %s: an ask nobody answers is never closed as expired, "
    "so its thread is never resumed. Run one: `with bridge.running(graph):`, Gateway(..., deliver=True), "
    "`parkgate deliver --db URL` or `parkgate serve`"
)


def deliverer_runs(gateway: Gateway) -> bool:
    """Whether a deliverer runs on ``gateway``'s database: its own, or another process's
    whose heartbeat is fresh. A store that cannot be read counts as delivering (no warning)."""
    if gateway.delivering or gateway.deliverer_health is not None:
        return True
    try:
        with gateway.store.transaction() as tx:
            last = tx.heartbeats.last_beat()
    except Exception:  # a warning must never stop the watch
        return True
    return is_fresh(last, gateway.clock.now())


def warn_without_deliverer(gateway: Gateway, graph: str) -> bool:
    """Log :data:`NO_DELIVERER` once when no deliverer runs; whether it was logged."""
    if deliverer_runs(gateway):
        return False
    log.warning(NO_DELIVERER, graph, gateway.store.url)
    return True


class DrivenConversations:
    """The conversations a bridge's drives are handling now, counted across threads: a
    closed ask in one of them is resumed by its drive, which reports what it did, and the
    watcher leaves it alone."""

    def __init__(self) -> None:
        self._counts: collections.Counter[str] = collections.Counter()
        self._lock = threading.Lock()

    @contextlib.contextmanager
    def driving(self, conversation_id: str) -> Iterator[None]:
        """Count ``conversation_id`` as driven while the block runs."""
        with self._lock:
            self._counts[conversation_id] += 1
        try:
            yield
        finally:
            with self._lock:
                self._counts[conversation_id] -= 1
                if not self._counts[conversation_id]:
                    del self._counts[conversation_id]

    def __contains__(self, conversation_id: object) -> bool:
        with self._lock:
            return conversation_id in self._counts
