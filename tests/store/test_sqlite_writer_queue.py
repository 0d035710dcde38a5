"""SQLite: writers in one process queue in the process, not in SQLite's busy handler.

SQLite's busy handler sleeps in growing steps (up to 100 ms each) and is not woken when
the lock comes free: a thread that waits there for another thread of the same process
adds a stall to a person's message. The store's writers take the file's process lock
first (:func:`parkgate.store.sqlite.writer_lock`), so with the busy handler turned off
(``busy_timeout`` 0: a writer that finds SQLite's lock taken fails at once) threads
writing on one file still all succeed, each in its turn.
"""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from parkgate import Gateway, ManualClock, ReplyKind
from parkgate.store import sqlite, sqlite_file
from parkgate.store.sqlite import SQLiteStore

THREADS = 8
MESSAGES = 25


def hammer(gateway: Gateway, threads: int, messages: int) -> list[BaseException]:
    """``threads`` threads each park an ask in a conversation of its own and send it
    ``messages`` misses with a ``message_id`` (every one writes); the errors they met."""
    errors: list[BaseException] = []
    start = threading.Barrier(threads)

    def run(n: int) -> None:
        try:
            start.wait()
            gateway.ask(f"c{n}", "Deploy?", options=["Deploy", "Hold"])
            for m in range(messages):
                reply = gateway.handle(f"c{n}", "what?", message_id=f"m{n}-{m}")
                assert reply.kind in {ReplyKind.RETRY, ReplyKind.ESCALATED}, reply
        except BaseException as error:  # the test reports it
            errors.append(error)

    workers = [threading.Thread(target=run, args=(n,)) for n in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    return errors


class NoQueue:
    """A process queue that never makes anyone wait (the control)."""

    def acquire(self, timeout: float = -1) -> bool:
        return True

    def release(self) -> None:
        pass


@pytest.fixture
def no_busy_handler(monkeypatch: pytest.MonkeyPatch) -> None:
    """Connections made from now on fail at once on a lock another connection holds."""
    monkeypatch.setattr(sqlite_file, "BUSY_TIMEOUT_MS", 0)


def test_threads_writing_one_file_never_meet_each_others_lock(
    tmp_path: Path, no_busy_handler: None, clock: ManualClock
) -> None:
    gateway = Gateway(store=SQLiteStore(f"sqlite:///{tmp_path / 'queue.db'}"), clock=clock)
    try:
        assert hammer(gateway, THREADS, MESSAGES) == []
    finally:
        gateway.close()


def test_without_the_process_queue_the_same_threads_meet_the_lock(
    tmp_path: Path, no_busy_handler: None, clock: ManualClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The control: with a process queue that lets everyone through, the writers meet in
    # SQLite's lock alone (its busy handler off here): the same load fails with "database
    # is locked".
    monkeypatch.setattr(sqlite, "writer_lock", lambda path: NoQueue())
    gateway = Gateway(store=SQLiteStore(f"sqlite:///{tmp_path / 'queue.db'}"), clock=clock)
    try:
        errors = hammer(gateway, THREADS, MESSAGES)
    finally:
        gateway.close()
    assert errors, "eight threads writing with no busy handler and no queue all succeeded"
    assert all("locked" in str(error) for error in errors), errors
