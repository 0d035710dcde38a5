"""SQLite: a message that finds nothing to change takes no write lock; one that writes does.

Each gateway here has a store of its own (its own connections, as another process has),
and a plain ``sqlite3`` connection holds the file's write lock as any other writer would.
A ``pass`` without ``message_id`` is answered while that lock is held; a message that
records its ``message_id``, or that lands on a parked ask, waits for the lock (bounded by
``busy_timeout``) and is then answered in one order with the other writers.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from parkgate import AskStatus, Gateway, ManualClock, Reply, ReplyKind
from parkgate.store import sqlite
from parkgate.store.sql import STALE
from polling import holds

if TYPE_CHECKING:
    from conftest import MakeStore, StoreLocation, StoreUrlFactory

OPTIONS = ["Deploy", "Hold"]
#: Real time a message must stay unanswered behind the lock (well inside busy_timeout).
HELD = 0.5


@pytest.fixture
def location(store_url_factory: StoreUrlFactory) -> StoreLocation:
    return store_url_factory("sqlite")


@pytest.fixture
def processes(location: StoreLocation, make_store: MakeStore, clock: ManualClock) -> tuple[Gateway, Gateway]:
    """Two gateways on one file, each with its own store: two processes' view of it."""
    return Gateway(store=make_store(location), clock=clock), Gateway(store=make_store(location), clock=clock)


@contextmanager
def write_lock(path: Path | None) -> Iterator[sqlite3.Connection]:
    """Another writer on ``path``: ``BEGIN IMMEDIATE`` and a write, held until the block ends."""
    assert path is not None
    holder = sqlite3.connect(path, isolation_level=None)
    try:
        holder.execute("BEGIN IMMEDIATE")
        holder.execute("UPDATE runs SET updated_at = updated_at")
        yield holder
    finally:
        holder.execute("ROLLBACK")
        holder.close()


def in_thread(call: Callable[[], Reply]) -> tuple[threading.Thread, list[Reply | BaseException]]:
    """Run ``call`` on a thread of its own (started); its reply or error lands in the list."""
    outcome: list[Reply | BaseException] = []

    def run() -> None:
        try:
            outcome.append(call())
        except BaseException as error:  # the test asserts on it
            outcome.append(error)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, outcome


def stored_replies(location: StoreLocation) -> int:
    return int(location.raw_query("SELECT count(*) FROM inbound_messages")[0][0])


def test_a_pass_without_message_id_is_answered_while_another_writer_holds_the_lock(
    processes: tuple[Gateway, Gateway], location: StoreLocation
) -> None:
    here, there = processes
    there.ask("parked", "Ship it?", OPTIONS)  # the file has an open ask; these conversations do not
    with write_lock(location.path):
        # Taking the lock would wait busy_timeout and fail: these are read and answered.
        assert here.handle("c-new", "hello").kind is ReplyKind.PASS
        assert there.handle("c-other", "hello").kind is ReplyKind.PASS
        assert here.handle("c-new", "again").kind is ReplyKind.PASS
    assert stored_replies(location) == 0  # a pass without message_id writes nothing


def test_a_message_with_a_message_id_waits_for_the_lock_and_is_recorded_once(
    processes: tuple[Gateway, Gateway], location: StoreLocation
) -> None:
    here, _ = processes
    with write_lock(location.path):
        thread, outcome = in_thread(lambda: here.handle("c-new", "hello", message_id="m-1"))
        assert holds(thread, HELD), "a message that records its message_id did not wait for the lock"
        assert stored_replies(location) == 0
    thread.join(30)
    assert [reply.kind for reply in outcome if isinstance(reply, Reply)] == [ReplyKind.PASS], outcome
    assert stored_replies(location) == 1
    again = here.handle("c-new", "hello", message_id="m-1")  # a redelivery: the first reply
    assert again.kind is ReplyKind.PASS and stored_replies(location) == 1


def test_a_message_to_a_parked_ask_waits_for_the_lock_then_counts_its_miss(
    processes: tuple[Gateway, Gateway], location: StoreLocation
) -> None:
    here, there = processes
    asked = there.ask("c-1", "Ship it?", OPTIONS)  # here has not seen c-1: it reads it
    with write_lock(location.path):
        thread, outcome = in_thread(lambda: here.handle("c-1", "what?"))
        assert holds(thread, HELD), "a message that changes a parked ask did not wait for the lock"
    thread.join(30)
    assert [reply.kind for reply in outcome if isinstance(reply, Reply)] == [ReplyKind.RETRY], outcome
    assert here.get(asked.ask_id or "").mismatches == 1


def test_a_write_after_another_process_committed_since_the_read_is_retried_in_one_order(
    processes: tuple[Gateway, Gateway], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``here`` reads c-1 without the lock; ``there`` then commits a miss on it before
    ``here`` writes. ``here``'s write is refused (its read is out of date), rolled back and
    retried under the lock: it counts the second miss on top of the first, none is lost."""
    here, there = processes
    asked = there.ask("c-1", "Ship it?", OPTIONS)
    real_write = sqlite.SQLiteTransaction.write
    interleave = [lambda: there.handle("c-1", "huh")]

    def write_after_the_other(tx: sqlite.SQLiteTransaction, writes: Any) -> None:
        if interleave:
            assert interleave.pop()().kind is ReplyKind.RETRY  # commits between here's read and write
        real_write(tx, writes)

    monkeypatch.setattr(sqlite.SQLiteTransaction, "write", write_after_the_other)
    reply = here.handle("c-1", "what?")
    assert reply.kind is ReplyKind.RETRY
    ask = here.get(asked.ask_id or "")
    assert ask.status is AskStatus.OPEN and ask.mismatches == 2
    retries = here.metrics.registry.get_sample_value("parkgate_store_retries_total", {"surface": "library"})
    assert retries == 1
    # A refused upgrade is no wrong guess: here still decides c-1 from its memory.
    assert isinstance(here.store, sqlite.SQLiteStore) and here.store.recent.get("c-1") is not STALE
    assert here.handle("c-1", "2").answer == "Hold"
