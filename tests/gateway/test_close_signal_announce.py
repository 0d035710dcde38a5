"""The close signal tells the store's watcher about a waiter only once it goes to sleep.

On PostgreSQL an announced ask is flagged ``waited`` so that its close sends a NOTIFY
(migration 9); a wait that only reads (``Gateway.wait(id, 0)``, a GET without ``wait``)
must announce nothing, even when it is the first waiter and starts the watcher. A waiter
that goes to sleep while another thread is still starting the watcher is announced as
soon as the watcher runs.
"""

from __future__ import annotations

import threading

from parkgate.store.signal import CloseSignal
from polling import until


class RecordingWatcher:
    """A watcher that records what it is told."""

    def __init__(self) -> None:
        self.announced: list[str] = []
        self.stopped = False

    def waiting_on(self, ask_id: str) -> None:
        self.announced.append(ask_id)

    def stop(self) -> None:
        self.stopped = True


def test_a_waiter_that_only_reads_is_not_announced_even_when_it_starts_the_watcher() -> None:
    watcher = RecordingWatcher()
    signal = CloseSignal(lambda _signal: watcher)
    with signal.waiting("ask-1"):
        pass  # read once, never slept
    assert watcher.announced == []
    with signal.waiting("ask-2") as waiter:
        assert waiter.wait(0.01) is False
        assert waiter.wait(0.01) is False
    assert watcher.announced == ["ask-2"]  # once, when it first slept
    signal.close()
    assert watcher.stopped


def test_a_waiter_that_sleeps_while_the_watcher_starts_is_announced_once_it_runs() -> None:
    watcher = RecordingWatcher()
    starting, release = threading.Event(), threading.Event()

    def start(_signal: CloseSignal) -> RecordingWatcher:
        starting.set()
        assert release.wait(5)
        return watcher

    signal = CloseSignal(start)
    first_done = threading.Event()

    def first() -> None:  # starts the watcher, and only reads
        with signal.waiting("reader"):
            first_done.set()

    sleeper_asleep = threading.Event()
    woken: list[bool] = []

    def sleeper() -> None:
        with signal.waiting("sleeper") as waiter:
            sleeper_asleep.set()
            woken.append(waiter.wait(5))

    starter = threading.Thread(target=first)
    starter.start()
    assert starting.wait(5)
    other = threading.Thread(target=sleeper)
    other.start()
    assert sleeper_asleep.wait(5)
    assert watcher.announced == []  # the watcher is not running yet
    release.set()
    assert first_done.wait(5)
    starter.join(5)
    until(lambda: watcher.announced, 5, "the watcher to hear of the sleeper")
    assert watcher.announced == ["sleeper"]  # told once it ran; the reader never
    signal.closed(["sleeper"])
    other.join(5)
    assert woken == [True]
    signal.close()
