"""SQLite: writers in one process queue in the process, not in SQLite's busy handler.

SQLite's busy handler sleeps in growing steps (up to 100 ms each) and is not woken when
the lock comes free: a thread that waits there for another thread of the same process
adds a stall to a person's message. The store's writers take the file's process lock
first (:func:`parkgate.store.sqlite.writer_lock`), so with the busy handler turned off
(``busy_timeout`` 0: a writer that finds SQLite's lock taken fails at once) threads
writing on one file still all succeed, each in its turn.

The writes that queue while a commit is in flight share the next transaction (group
commit): one sync for all of them, each answered only after it; a failure is its own
unit's alone, and a group whose COMMIT fails has each unit retried alone.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable
from functools import partial
from pathlib import Path

import pytest

from parkgate import Gateway, ManualClock, ReplyKind
from parkgate.store import StoreConflict, sqlite, sqlite_file
from parkgate.store.sqlite import SQLiteStore
from polling import until

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


class HeldCommits:
    """Holds the first group commit of a file until released, and counts the groups' commits."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.release = threading.Event()
        self.entered = threading.Event()
        self.sizes: list[int] = []
        real = sqlite.FileWriters.commit

        def commit(writers: sqlite.FileWriters) -> None:
            if writers.group is not None:
                self.sizes.append(writers.group.members)
                if len(self.sizes) == 1:
                    self.entered.set()
                    assert self.release.wait(30), "the held commit was never released"
            real(writers)

        monkeypatch.setattr(sqlite.FileWriters, "commit", commit)


def in_threads(calls: list[Callable[[], object]]) -> list[object]:
    """Run each call on a thread of its own; what each returned or raised."""
    results: list[object] = [None] * len(calls)

    def run(n: int) -> None:
        try:
            results[n] = calls[n]()
        except BaseException as error:  # the test reads it
            results[n] = error

    threads = [threading.Thread(target=run, args=(n,)) for n in range(len(calls))]
    for thread in threads:
        thread.start()
    return [thread.join(60) for thread in threads] and results


def test_messages_that_arrive_during_a_commit_share_the_next_one(
    tmp_path: Path, clock: ManualClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    gateway = Gateway(store=SQLiteStore(f"sqlite:///{tmp_path / 'group.db'}"), clock=clock)
    try:
        for n in range(THREADS):
            gateway.ask(f"c{n}", "Deploy?", options=["Deploy", "Hold"])
        held = HeldCommits(monkeypatch)
        writers = sqlite.file_writers(tmp_path / "group.db")
        first = threading.Thread(target=gateway.handle, args=("c0", "what?", "m0"))
        first.start()
        assert held.entered.wait(30)
        # While the first message's commit is in flight, seven more queue behind it ...
        later = [partial(gateway.handle, f"c{n}", "1", f"m{n}") for n in range(1, THREADS)]
        results: list[object] = []
        sender = threading.Thread(target=lambda: results.extend(in_threads(later)))
        sender.start()
        until(lambda: writers.waiting == THREADS - 1, 30, "seven writers queued behind the commit")
        assert not results, "a message was answered before the commit that holds it"
        held.release.set()
        first.join(30)
        sender.join(60)
        # ... and share the next transaction: one commit (one sync) for the seven.
        assert held.sizes == [1, THREADS - 1]
        assert all(getattr(reply, "kind", None) is ReplyKind.SELECTED for reply in results), results
        assert gateway.handle("c3", "2", message_id="m3").kind is ReplyKind.SELECTED  # the stored reply, redelivered
    finally:
        gateway.close()


def test_a_failure_in_a_group_is_its_own_units_alone(
    tmp_path: Path, clock: ManualClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = SQLiteStore(f"sqlite:///{tmp_path / 'alone.db'}")
    insert = "INSERT INTO inbound_messages (conversation_id, message_id, reply, received_at) VALUES (?, ?, '{}', 'x')"

    def record(message_id: str) -> str:
        with store.transaction() as tx:
            tx.send(insert, ("c", message_id))
        return message_id

    try:
        record("taken")
        held = HeldCommits(monkeypatch)
        writers = sqlite.file_writers(tmp_path / "alone.db")
        first = threading.Thread(target=record, args=("m0",))
        first.start()
        assert held.entered.wait(30)
        results: list[object] = []
        calls = [partial(record, name) for name in ("m1", "taken", "m2", "m3")]
        sender = threading.Thread(target=lambda: results.extend(in_threads(calls)))
        sender.start()
        until(lambda: writers.waiting == len(calls), 30, "four writers queued behind the commit")
        held.release.set()
        first.join(30)
        sender.join(60)
        # The duplicate is refused to its own caller; the others of its group are stored.
        assert isinstance(results[1], StoreConflict), results
        assert [results[0], *results[2:]] == ["m1", "m2", "m3"]
        assert held.sizes == [1, 3]
        with store.transaction() as tx:
            stored = tx.query("SELECT message_id FROM inbound_messages ORDER BY message_id").fetchall()
        assert [row[0] for row in stored] == ["m0", "m1", "m2", "m3", "taken"]
    finally:
        store.close()


def test_a_group_whose_commit_fails_has_each_message_retried_alone(
    tmp_path: Path, clock: ManualClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    gateway = Gateway(store=SQLiteStore(f"sqlite:///{tmp_path / 'retry.db'}"), clock=clock)
    try:
        for n in range(4):
            gateway.ask(f"c{n}", "Deploy?", options=["Deploy", "Hold"])
        held = HeldCommits(monkeypatch)
        real = sqlite.FileWriters.commit
        failed: list[int] = []

        def failing_commit(writers: sqlite.FileWriters) -> None:
            group = writers.group
            if group is not None and group.members > 1 and not failed:
                # The COMMIT of a group of several fails (as an I/O error would): nothing of it is kept.
                failed.append(group.members)
                writers.group = None
                group.conn.execute("ROLLBACK")
                group.failed, group.error = True, sqlite3.OperationalError("disk I/O error")
                group.end()
                return
            real(writers)

        monkeypatch.setattr(sqlite.FileWriters, "commit", failing_commit)
        writers = sqlite.file_writers(tmp_path / "retry.db")
        first = threading.Thread(target=gateway.handle, args=("c0", "what?", "m0"))
        first.start()
        assert held.entered.wait(30)
        results: list[object] = []
        calls = [partial(gateway.handle, f"c{n}", "1", f"m{n}") for n in range(1, 4)]
        sender = threading.Thread(target=lambda: results.extend(in_threads(calls)))
        sender.start()
        until(lambda: writers.waiting == 3, 30, "three writers queued behind the commit")
        held.release.set()
        first.join(30)
        sender.join(60)
        # Each was retried alone and answered once: selected, its ask answered.
        assert failed == [3]
        assert all(getattr(reply, "kind", None) is ReplyKind.SELECTED for reply in results), results
        assert all(
            gateway.get(gateway.handle(f"c{n}", "1", message_id=f"m{n}").ask_id or "").answer == "Deploy"
            for n in range(1, 4)
        )
    finally:
        gateway.close()
