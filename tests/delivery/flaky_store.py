"""Stand-ins for an outage, for the deliverer's unit tests: a store whose heartbeat write
fails a number of times, a callback receiver behind ``httpx.MockTransport``, and waits
bounded by a timeout (a bound on the test, never a speed claim)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest

from parkgate.delivery.health import Backoff
from parkgate.store import Store, StoreUnavailable

#: Retries in the unit tests: milliseconds, so an outage of a few tries costs no real time.
QUICK = Backoff(first=0.001, cap=0.004)
#: How long a test waits for the deliverer to get somewhere before it fails.
BOUND_SECONDS = 20.0
HOOK = "http://hooks.test/h"


class FailingBeats:
    """Makes ``store``'s heartbeat writes raise :class:`StoreUnavailable`, ``failures`` at a time.

    ``fail(n)`` arms the next ``n`` beats to fail (a new outage); ``tries`` counts every
    beat attempted, failed or not. Everything else the store does is untouched.
    """

    def __init__(self, store: Store, monkeypatch: pytest.MonkeyPatch, failures: int = 0) -> None:
        self.left = failures
        self.tries = 0
        original = store.transaction

        @contextlib.contextmanager
        def transaction(*intent: Any) -> Iterator[Any]:
            with original(*intent) as tx:
                yield _Beats(tx, self)

        monkeypatch.setattr(store, "transaction", transaction)

    def fail(self, failures: int) -> None:
        """The next ``failures`` beats fail."""
        self.left = failures

    def beat(self) -> None:
        self.tries += 1
        if self.left > 0:
            self.left -= 1
            raise StoreUnavailable("the database is locked (another process is writing it)")


class _Beats:
    """A transaction whose heartbeats' ``beat`` may fail first; the rest is the real transaction's."""

    def __init__(self, tx: Any, beats: FailingBeats) -> None:
        self._tx = tx
        self.heartbeats = _FailingHeartbeats(tx.heartbeats, beats)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._tx, name)


class _FailingHeartbeats:
    """The transaction's heartbeats, whose ``beat`` asks :class:`FailingBeats` first."""

    def __init__(self, heartbeats: Any, beats: FailingBeats) -> None:
        self._heartbeats = heartbeats
        self._beats = beats

    def beat(self, deliverer_id: str, now: Any) -> None:
        self._beats.beat()
        self._heartbeats.beat(deliverer_id, now)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._heartbeats, name)


class Hook:
    """A callback receiver behind ``httpx.MockTransport`` that answers 200 and keeps the bodies."""

    def __init__(self) -> None:
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        return httpx.Response(200)

    def client(self) -> httpx.AsyncClient:
        return httpx.AsyncClient(transport=httpx.MockTransport(self))

    def statuses(self) -> list[str]:
        return [json.loads(request.content)["data"]["status"] for request in self.requests]


async def until(condition: Callable[[], object], what: str) -> None:
    """Wait (bounded by :data:`BOUND_SECONDS`) until ``condition()`` is truthy."""
    try:
        async with asyncio.timeout(BOUND_SECONDS):
            while not condition():
                await asyncio.sleep(0.005)
    except TimeoutError:
        raise AssertionError(f"timed out after {BOUND_SECONDS:g} s waiting for {what}") from None


def lines(caplog: pytest.LogCaptureFixture, level: int) -> list[str]:
    """The deliverer's log lines at ``level``."""
    return [r.getMessage() for r in caplog.records if r.name == "parkgate.deliver" and r.levelno == level]


WARNING, INFO, ERROR = logging.WARNING, logging.INFO, logging.ERROR
