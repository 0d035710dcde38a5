"""Hearing that the server is stopping, so that requests that would stream for a long time
(the event stream, :mod:`parkgate.http.event_stream`) end at once.

uvicorn's graceful shutdown stops accepting connections, then waits for every response
in progress to finish before it tells the app (the lifespan's end): a response that
streams until its client leaves would hold the shutdown for as long as it streams. So
while the app is up, :class:`Stopping` wraps the process's ``SIGTERM`` and ``SIGINT``
handlers (uvicorn's, which start the shutdown) and sets :attr:`Stopping.event` before
handing each signal on. A server run from a thread other than the main one (an
in-process test server) has no signal handlers of its own: its streams end when their
client leaves or their hold runs out, as a long-poll's does.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import threading
from collections.abc import Callable
from types import FrameType
from typing import Any

#: The signals that stop a server (uvicorn's own, and its workers' from their manager).
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)


class Stopping:
    """Whether the server this app runs in is stopping: :attr:`event` is set from the first
    stop signal on (see the module's text). Made per app; :meth:`hear` starts listening."""

    def __init__(self) -> None:
        #: Set once a stop signal arrived; ``None`` until :meth:`hear` ran on the serving loop.
        self.event: asyncio.Event | None = None
        self._restore: list[tuple[int, Any, Callable[[int, FrameType | None], Any]]] = []

    def hear(self) -> None:
        """Set :attr:`event` on the running loop when a stop signal arrives, the handler
        already installed still called (only in the main thread, where signals are handled)."""
        loop = asyncio.get_running_loop()
        self.event = asyncio.Event()
        if threading.current_thread() is not threading.main_thread():
            return
        event = self.event
        for number in STOP_SIGNALS:
            before = signal.getsignal(number)
            if not callable(before):
                continue  # the default or an ignored signal: nothing to hand on, nothing to hear

            def heard(signum: int, frame: FrameType | None, before: Callable[..., Any] = before) -> None:
                with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
                    loop.call_soon_threadsafe(event.set)
                before(signum, frame)

            signal.signal(number, heard)
            self._restore.append((number, before, heard))

    def forget(self) -> None:
        """Put back the handlers :meth:`hear` wrapped (where nothing replaced them since)."""
        if threading.current_thread() is not threading.main_thread():
            return
        restore, self._restore = self._restore, []
        for number, before, heard in restore:
            if signal.getsignal(number) is heard:
                signal.signal(number, before)

    @property
    def stopping(self) -> bool:
        """Whether a stop signal has arrived."""
        return self.event is not None and self.event.is_set()
