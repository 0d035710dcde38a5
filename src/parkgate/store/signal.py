"""The close signal: one way for everything that waits on an ask to hear that it closed.

Every waiter subscribes here: :meth:`Gateway.wait <parkgate.Gateway.wait>`,
:meth:`AsyncGateway.wait <parkgate.AsyncGateway.wait>` (and so the HTTP long-poll and the
adapters), and the deliverer. The signal is fed from two sides:

- **this process**: the gateway reports every ask it closes, every callback it queues and
  every watched ask it parks, right after the commit;
- **other processes**: a store watcher (PostgreSQL ``LISTEN``, SQLite's
  ``PRAGMA data_version``; see :mod:`parkgate.store.watch`) reports what other processes
  committed. It runs only while something listens, and hears of each ask a waiter here
  is about to sleep on (:meth:`Watcher.waiting_on`), so another process's close of it is
  announced.

A signal carries no state of its own: a woken waiter reads the ask (the ordinary read,
which also enforces the TTL) and decides from what it finds. A lost or extra wake-up
costs a read, never a wrong answer; a waiter still reads at its ask's due time and, as a
safety net, every :data:`FALLBACK_READ_SECONDS`.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import threading
import weakref
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager

from parkgate.store.base import Watcher

#: A waiter reads its ask at least this often even if no signal comes (a signal lost to a
#: dropped connection, a store without a watcher).
FALLBACK_READ_SECONDS = 15.0


class Change(enum.Enum):
    """What a signal says happened."""

    #: An ask closed (its id comes with it).
    CLOSED = "closed"
    #: An ask something waits on was parked: the earliest due time may be earlier now.
    DUE = "due"
    #: A callback was queued in the outbox.
    OUTBOX = "outbox"
    #: An ask was parked in this process (its id comes with it): a wait for a
    #: conversation's parked ask reads again.
    PARKED = "parked"
    #: Another process committed something the watcher cannot name (SQLite): listeners
    #: look again; waiters are woken only by :data:`CLOSED` for their own ask.
    COMMITTED = "committed"
    #: Something was committed that the watcher cannot name (SQLite), or signals may have
    #: been lost (a reconnect): listeners look again.
    ANY = "any"


Listener = Callable[[Change, "str | None"], None]


class Waiter:
    """One waiter's interest in one ask: woken when that ask closes (or on :data:`Change.ANY`).

    Usable from threads (:meth:`wait`) and from asyncio (:meth:`wait_async`, on the loop it
    was made on). :meth:`clear` before each read, so a close that lands between the read
    and the wait still wakes it.
    """

    __slots__ = ("_announce", "_async", "_event", "_loop", "_sleeps", "ask_id")

    def __init__(
        self,
        ask_id: str,
        loop: asyncio.AbstractEventLoop | None,
        announce: Callable[[str], None] | None = None,
        sleeps: Callable[[Waiter, bool], None] | None = None,
    ) -> None:
        self.ask_id = ask_id
        self._event = threading.Event()
        self._loop = loop
        self._async = asyncio.Event() if loop is not None else None
        #: Called once, before the first wait: a waiter that only reads costs nothing more.
        self._announce = announce
        #: Told when this waiter goes to sleep (``True``) and wakes (``False``).
        self._sleeps = sleeps

    def _announced(self) -> None:
        announce, self._announce = self._announce, None
        if announce is not None:
            announce(self.ask_id)
        if self._sleeps is not None:
            self._sleeps(self, True)

    def _awake(self) -> None:
        if self._sleeps is not None:
            self._sleeps(self, False)

    def fire(self) -> None:
        """Wake the waiter, in its thread or on its event loop."""
        self._event.set()
        if self._loop is not None and self._async is not None:
            with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
                self._loop.call_soon_threadsafe(self._async.set)

    def clear(self) -> None:
        """Forget a signal already taken: the next :meth:`wait` waits for a new one."""
        self._event.clear()
        if self._async is not None:
            self._async.clear()

    def wait(self, timeout: float) -> bool:
        """Block up to ``timeout`` seconds; whether the signal came."""
        self._announced()
        try:
            return self._event.wait(max(0.0, timeout))
        finally:
            self._awake()

    async def wait_async(self, timeout: float) -> bool:
        """Await up to ``timeout`` seconds; whether the signal came."""
        assert self._async is not None, "made for threads: pass a loop"
        self._announced()
        try:
            # asyncio.timeout, not wait_for: on Python 3.11 wait_for can swallow a cancel
            # that lands as the event is set.
            async with asyncio.timeout(max(0.0, timeout)):
                await self._async.wait()
        except TimeoutError:
            return False
        finally:
            self._awake()
        return True


class CloseSignal:
    """The in-process hub of the close signal (one per :class:`~parkgate.Gateway`).

    ``start_watcher`` makes the store's watcher of other processes; it is called when the
    first waiter or listener arrives and the watcher stops with :meth:`close`.
    """

    def __init__(self, start_watcher: Callable[[CloseSignal], Watcher | None] | None = None) -> None:
        self._lock = threading.Lock()
        self._waiters: dict[str, set[Waiter]] = {}
        self._listeners: list[Listener] = []
        self._start_watcher = start_watcher
        self._watcher: Watcher | None = None
        self._closed = False
        #: Notified whenever someone starts waiting (the SQLite watcher sleeps while nobody does).
        self._interest = threading.Condition(self._lock)
        #: Asks whose waiters went to sleep while the watcher was being started: it is told
        #: of them once it runs (a waiter that never sleeps is never announced).
        self._unannounced: set[str] = set()
        self._starting = False
        #: The waiters asleep now, per ask (see :meth:`wait_until_asleep`).
        self._asleep: dict[str, int] = {}
        self._asleep_changed = threading.Condition(self._lock)

    # -- subscribing ---------------------------------------------------------------
    @contextmanager
    def waiting(self, ask_id: str, *, loop: asyncio.AbstractEventLoop | None = None) -> Iterator[Waiter]:
        """A :class:`Waiter` on ``ask_id`` for the ``with`` block."""
        waiter = Waiter(ask_id, loop, self._announce, self._sleeps)
        with self._lock:
            self._waiters.setdefault(ask_id, set()).add(waiter)
            self._interest.notify_all()
        self._ensure_watcher()
        try:
            yield waiter
        finally:
            with self._lock:
                group = self._waiters.get(ask_id)
                if group is not None:
                    group.discard(waiter)
                    if not group:
                        del self._waiters[ask_id]

    def listen(self, listener: Listener) -> Callable[[], None]:
        """Call ``listener(change, ask_id)`` on every signal; returns the call that removes it.

        A listener runs in the thread that sent the signal (a committing thread, or the
        watcher's): it must be quick and must not raise.
        """
        with self._lock:
            self._listeners.append(listener)
            self._interest.notify_all()
        self._ensure_watcher()

        def remove() -> None:
            """Stop calling ``listener``; removing it twice is harmless."""
            with self._lock, contextlib.suppress(ValueError):
                self._listeners.remove(listener)

        return remove

    def _announce(self, ask_id: str) -> None:
        """Tell the watcher a waiter here is about to sleep on ``ask_id`` (see :class:`Watcher`);
        while the watcher is still starting, it is told as soon as it runs."""
        with self._lock:
            watcher = self._watcher
            if watcher is None:
                if self._starting:  # another thread is starting it
                    self._unannounced.add(ask_id)
                return
        watcher.waiting_on(ask_id)

    def _sleeps(self, waiter: Waiter, asleep: bool) -> None:
        """Count ``waiter`` as asleep (or awake again) and tell whoever waits for that."""
        with self._lock:
            count = self._asleep.get(waiter.ask_id, 0) + (1 if asleep else -1)
            if count > 0:
                self._asleep[waiter.ask_id] = count
            else:
                self._asleep.pop(waiter.ask_id, None)
            self._asleep_changed.notify_all()

    def asleep(self, ask_id: str) -> int:
        """How many waiters sleep on ``ask_id`` now, blocked until a signal or their next read.

        Returns:
            The number of waiters inside :meth:`Waiter.wait` or :meth:`Waiter.wait_async`
            for that ask at this moment.
        """
        with self._lock:
            return self._asleep.get(ask_id, 0)

    def wait_until_asleep(self, ask_id: str, timeout: float, count: int = 1) -> bool:
        """Block until at least ``count`` waiters sleep on ``ask_id``, or ``timeout`` seconds pass.

        A test orders its threads with it: "the waiter has read the open ask and sleeps;
        now close it" is then a fact, not a guess made by sleeping.

        Args:
            ask_id: the ask the waiters wait on.
            timeout: the longest this call blocks, in seconds.
            count: how many sleeping waiters to wait for.

        Returns:
            Whether that many waiters were asleep before the timeout.
        """
        with self._lock:
            return self._asleep_changed.wait_for(lambda: self._asleep.get(ask_id, 0) >= count, timeout)

    def waited_ids(self) -> list[str]:
        """The asks some waiter in this process waits on now."""
        with self._lock:
            return list(self._waiters)

    def wait_for_interest(self, timeout: float) -> bool:
        """Whether anything waits or listens, blocking up to ``timeout`` seconds while nothing does."""
        with self._lock:
            if not (self._waiters or self._listeners or self._closed):
                self._interest.wait(timeout)
            return bool(self._waiters or self._listeners)

    def stir(self) -> None:
        """Wake whoever blocks in :meth:`wait_for_interest` (a watcher that is stopping)."""
        with self._lock:
            self._interest.notify_all()

    # -- signalling ----------------------------------------------------------------
    def closed(self, ask_ids: Iterable[str]) -> None:
        """Asks closed (here, or in another process): wake their waiters and every listener."""
        for ask_id in ask_ids:
            with self._lock:
                waiters = list(self._waiters.get(ask_id, ()))
                listeners = list(self._listeners)
            for waiter in waiters:
                waiter.fire()
            for listener in listeners:
                listener(Change.CLOSED, ask_id)

    def changed(self, change: Change, ask_id: str | None = None) -> None:
        """Anything but a close: listeners hear it; on :data:`Change.ANY` every waiter reads again."""
        with self._lock:
            listeners = list(self._listeners)
            waiters = [waiter for group in self._waiters.values() for waiter in group] if change is Change.ANY else []
        for waiter in waiters:
            waiter.fire()
        for listener in listeners:
            listener(change, ask_id)

    # -- the watcher of other processes ---------------------------------------------
    def _ensure_watcher(self) -> None:
        if self._start_watcher is None:
            return
        with self._lock:
            if self._watcher is not None or self._closed:
                return
            start, self._start_watcher = self._start_watcher, None
            self._starting = True
        try:
            watcher = start(self)
        except BaseException:
            with self._lock:
                self._starting = False
                self._unannounced.clear()
            raise
        with self._lock:
            self._starting = False
            if self._closed:
                stop_now = watcher
            else:
                self._watcher, stop_now = watcher, None
            sleeping = [ask_id for ask_id in self._unannounced if ask_id in self._waiters]
            self._unannounced.clear()
        if stop_now is not None:
            stop_now.stop()
        elif watcher is not None:
            for ask_id in sleeping:  # waiters that went to sleep while it started
                watcher.waiting_on(ask_id)

    def close(self) -> None:
        """Stop the watcher and wake every waiter (it then reads, and finds the store closed)."""
        with self._lock:
            self._closed = True
            watcher, self._watcher = self._watcher, None
            self._interest.notify_all()
        if watcher is not None:
            watcher.stop()
        self.changed(Change.ANY)


def hear_moves(clock: object, signal: CloseSignal) -> Callable[[], None]:
    """Wake every waiter on ``signal`` whenever ``clock`` is moved by hand.

    A clock with ``on_move`` (:class:`~parkgate.clock.ManualClock`) says when a test moves
    it; a move is :data:`Change.ANY`, so waiters and the deliverer read again at once and
    act on a TTL or a due time the move reached. The clock holds the signal weakly: a
    gateway never closed is still collected.

    Args:
        clock: The gateway's clock; one without ``on_move`` is the real one and never moves.
        signal: The gateway's close signal.

    Returns:
        The call that stops listening (a no-op for a clock without ``on_move``).
    """
    on_move = getattr(clock, "on_move", None)
    if not callable(on_move):
        return lambda: None
    hub = weakref.ref(signal)

    def moved() -> None:
        target = hub()
        if target is not None:
            target.changed(Change.ANY)

    stop: Callable[[], None] = on_move(moved)
    return stop
