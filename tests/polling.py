"""Waiting, bounded, for something another thread or process makes true: the one poll loop.

A test that cannot be told when a thing happens (a server process writes a row, a
receiver gets a request, a watcher thread announces an ask) asks again until it has
happened or a deadline passes. Every such loop in the suite is :func:`until`; what a
test waits on is named, so a timeout says what never happened. Nothing here asserts how
long anything took: the timeout is a bound on a hang, never a speed claim.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

#: How often :func:`until` asks again, in seconds.
INTERVAL = 0.05


def until(
    condition: Callable[[], T],
    timeout: float,
    what: str,
    interval: float = INTERVAL,
    retry_on: tuple[type[BaseException], ...] = (),
) -> T:
    """Call ``condition()`` until it returns something truthy, and return that.

    Args:
        condition: asked again every ``interval`` seconds.
        timeout: the bound, in seconds, after which the wait fails.
        what: what is waited for, for the failure's message.
        interval: the pause between two asks.
        retry_on: exceptions that mean "not yet" (a server still starting); after the
            timeout the last one is raised.

    Returns:
        The first truthy value ``condition()`` returned.

    Raises:
        AssertionError: when ``timeout`` seconds pass first.
    """
    deadline = time.monotonic() + timeout
    while True:
        try:
            value = condition()
        except retry_on:
            if time.monotonic() > deadline:
                raise
        else:
            if value:
                return value
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")
        # Real time is what is waited on here: another thread or process does the work.
        time.sleep(interval)


def holds(thread: threading.Thread, seconds: float) -> bool:
    """Whether ``thread`` is still running after ``seconds`` of real time.

    For a request to a live server that should hold (a long-poll on an open ask): a server
    process shows no "the waiter is asleep" state, so what is asserted is that real time
    passed and the request did not come back. In process, use
    :meth:`parkgate.store.signal.CloseSignal.wait_until_asleep` instead.

    Args:
        thread: the thread that makes the request.
        seconds: how long it must hold.

    Returns:
        ``True`` when the thread is still running (the request holds).
    """
    thread.join(seconds)  # real time is what is under test: the request holds this long
    return thread.is_alive()
