"""Database faults at the library level: a locked SQLite file, a full disk, a read-only file.

Each fault must surface as a :class:`parkgate.store.StoreError` (``StoreUnavailable``
for a lock that outlasted the busy timeout) naming what is wrong, never as a raw
``sqlite3`` error, and must leave no partial row: every table is byte-for-byte as
before the failed call, and the same message sent again later applies once.

Disk full is simulated twice: with SQLite's ``max_page_count`` pragma (runs
everywhere) and, where this process may mount file systems (root with
CAP_SYS_ADMIN), with a real tiny tmpfs filled to the brim. A read-only database is
a tmpfs remounted read-only (where mounting works) and SQLite's ``query_only``
pragma (everywhere; root ignores file permission bits, so chmod proves nothing).
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

import parkgate.store.sqlite_file as sqlite_file
from parkgate import Gateway
from parkgate.clock import ManualClock
from parkgate.core.kinds import AskStatus, ReplyKind
from parkgate.store import StoreError, StoreUnavailable
from parkgate.store.sqlite import SQLiteStore

from ._support import StoreSpec, bounded, check_against_replay, interleaved_plan, park_conversations, run_in_processes

TABLES = ("runs", "asks", "inbound_messages", "outbox", "schema_migrations")


def dump(spec: StoreSpec) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of every parkgate table, in a stable order."""
    return {table: sorted(spec.query(f"SELECT * FROM {table}"), key=repr) for table in TABLES}


def _cannot_mount(reason: str) -> None:
    pytest.fail(f"{reason}: the real disk-full test cannot run here", pytrace=False)


@contextmanager
def tmpfs(size_kb: int) -> Iterator[Path]:
    """A freshly mounted tmpfs of ``size_kb`` KiB (the test fails where mounting is not allowed)."""
    if os.geteuid() != 0:
        _cannot_mount("mounting a tmpfs needs root (run the suite as root)")
    folder = Path(tempfile.mkdtemp(prefix="parkgate-tmpfs-"))
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size_kb}k", "tmpfs", str(folder)], capture_output=True, text=True
    )
    if done.returncode != 0:
        folder.rmdir()
        _cannot_mount(f"mount -t tmpfs failed ({done.stderr.strip()})")
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], capture_output=True)
        folder.rmdir()


# -- database is locked ----------------------------------------------------------------


@pytest.fixture
def short_busy_timeout(monkeypatch: pytest.MonkeyPatch) -> int:
    """Make every new SQLite connection give up on a held lock after 50 ms."""
    monkeypatch.setattr(sqlite_file, "BUSY_TIMEOUT_MS", 50)
    return 50


def _hold_write_lock(spec: StoreSpec) -> sqlite3.Connection:
    holder = sqlite3.connect(sqlite_file.path_from_url(spec.url), isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    holder.execute("UPDATE runs SET updated_at = updated_at")
    return holder


def test_a_held_write_lock_gives_store_unavailable_and_writes_nothing(
    sqlite_spec: StoreSpec, clock: ManualClock, short_busy_timeout: int
) -> None:
    gateway = sqlite_spec.gateway(clock=clock)
    try:
        asked = gateway.ask("locked-1", "Deploy?", ["Deploy", "Hold"], run_id="run-locked")
        assert asked.ask_id
        gateway.handle("locked-1", "nope", message_id="m-0")
        before = dump(sqlite_spec)
        holder = _hold_write_lock(sqlite_spec)
        try:
            writes: dict[str, Callable[[], object]] = {
                "handle": lambda: gateway.handle("locked-1", "1", message_id="m-1"),
                "handle, parked": lambda: gateway.handle("locked-1", "1"),
                "ask": lambda: gateway.ask("locked-2", "Other?", ["A", "B"]),
                "cancel": lambda: gateway.cancel(asked.ask_id or ""),
                "a new Gateway": lambda: Gateway(store=sqlite_spec.store(), clock=clock).close(),
            }
            for name, call in writes.items():
                error = bounded(call)
                assert isinstance(error, StoreUnavailable), f"{name}: {error!r}"
                assert "locked" in str(error) and not isinstance(error, sqlite3.Error)
            # What finds nothing to change reads without the write lock, and is answered.
            assert gateway.handle("locked-3", "hello").kind is ReplyKind.PASS
            assert gateway.get(asked.ask_id or "").status is AskStatus.OPEN
            assert [ask.id for ask in gateway.open_asks()] == [asked.ask_id]
        finally:
            holder.execute("ROLLBACK")
            holder.close()
        assert dump(sqlite_spec) == before  # no half-written row anywhere
        # The client sends the same message again: it applies exactly once.
        first = gateway.handle("locked-1", "1", message_id="m-1")
        again = gateway.handle("locked-1", "1", message_id="m-1")
        assert first.kind is ReplyKind.SELECTED and again == first
        assert gateway.get(asked.ask_id).status is AskStatus.ANSWERED
        assert len(sqlite_spec.query("SELECT 1 FROM inbound_messages WHERE message_id = 'm-1'")) == 1
    finally:
        gateway.close()


def test_contention_with_a_tiny_busy_timeout_loses_no_message(sqlite_spec: StoreSpec) -> None:
    """8 processes on one file, 1 ms busy timeout: refusals happen, re-sends apply once."""
    gateway = sqlite_spec.gateway()
    try:
        sqlite_spec.instrument_commit_order()
        initial = park_conversations(gateway, 50, "contend")
        plans = interleaved_plan(initial, 8, seed=31)
        sent = run_in_processes(sqlite_spec, plans, busy_timeout_ms=1)
        refused = sum(s.attempts - 1 for worker in sent for s in worker)
        assert refused > 0, "the busy timeout never ran out: the fault was not exercised"
        check_against_replay(sqlite_spec, gateway, initial, plans, sent)
    finally:
        gateway.close()


# -- disk full -------------------------------------------------------------------------


def _fill_until_full(gateway: Gateway, spec: StoreSpec, prefix: str) -> tuple[str, StoreError]:
    """Park big asks until the store refuses one; check that refusal wrote nothing."""
    for n in range(10_000):
        conversation = f"{prefix}-{n}"
        before = dump(spec)
        try:
            gateway.ask(conversation, "P" * 3999, ["A", "B"], run_id=f"run-{conversation}")
        except StoreError as error:
            assert dump(spec) == before, "a refused ask left rows behind"
            return conversation, error
    raise AssertionError("the store never filled up")


def _assert_full_then_recovers(gateway: Gateway, spec: StoreSpec, free: Callable[[], None], prefix: str) -> None:
    text_ask = gateway.ask(f"{prefix}-text", "Describe the change.", kind="text")
    assert text_ask.ask_id
    conversation, error = _fill_until_full(gateway, spec, prefix)
    assert "disk is full" in str(error) and not isinstance(error, sqlite3.Error)
    # A big answer cannot be stored either: refused whole, the ask stays open and unchanged.
    before = dump(spec)
    with pytest.raises(StoreError, match="disk is full"):
        gateway.handle(f"{prefix}-text", "x" * 15_000, message_id="big-answer")
    assert dump(spec) == before
    assert gateway.get(text_ask.ask_id).status is AskStatus.OPEN
    free()
    reply = gateway.ask(conversation, "P" * 3999, ["A", "B"], run_id=f"run-{conversation}")
    assert reply.kind is ReplyKind.ASKED
    answered = gateway.handle(f"{prefix}-text", "x" * 15_000, message_id="big-answer")
    assert answered.kind is ReplyKind.ANSWERED
    assert gateway.get(text_ask.ask_id).answer == "x" * 15_000
    assert len(spec.query("SELECT 1 FROM inbound_messages WHERE message_id = 'big-answer'")) == 1


def store_connections(gateway: Gateway) -> list[sqlite3.Connection]:
    """This thread's connection to the SQLite store and the one its group commits run on."""
    store = gateway.store
    assert isinstance(store, SQLiteStore)
    return [store._connection(), store._writing_connection()]


def test_disk_full_by_max_page_count_is_a_clear_error_and_no_partial_row(
    sqlite_spec: StoreSpec, clock: ManualClock
) -> None:
    gateway = sqlite_spec.gateway(clock=clock)
    try:
        conns = store_connections(gateway)
        pages = conns[0].execute("PRAGMA page_count").fetchone()[0]
        for conn in conns:  # the pragma is per connection: the writer's group commits included
            conn.execute(f"PRAGMA max_page_count = {pages + 3}")

        def free() -> None:
            for conn in conns:
                conn.execute("PRAGMA max_page_count = 1000000")

        _assert_full_then_recovers(gateway, sqlite_spec, free, "pages")
    finally:
        gateway.close()


def test_disk_full_on_a_real_tiny_tmpfs_is_a_clear_error_and_no_partial_row(clock: ManualClock) -> None:
    with tmpfs(400) as folder:
        spec = StoreSpec("sqlite", f"sqlite:///{folder / 'parkgate.db'}")
        gateway = spec.gateway(clock=clock)
        try:
            stats = os.statvfs(folder)
            filler = folder / "filler"
            filler.write_bytes(b"\0" * max(0, stats.f_bavail * stats.f_frsize - 64 * 1024))
            _assert_full_then_recovers(gateway, spec, filler.unlink, "tmpfs")
        finally:
            gateway.close()


# -- read-only -------------------------------------------------------------------------


def test_a_read_only_file_system_is_named_on_open_and_the_data_survives(clock: ManualClock) -> None:
    with tmpfs(2048) as folder:
        spec = StoreSpec("sqlite", f"sqlite:///{folder / 'parkgate.db'}")
        with spec.gateway(clock=clock) as gateway:
            asked = gateway.ask("ro-1", "Deploy?", ["Deploy", "Hold"])
            gateway.handle("ro-1", "nope")
        subprocess.run(["mount", "-o", "remount,ro", str(folder)], check=True)
        try:
            with pytest.raises(StoreError, match="read-only"):
                spec.gateway(clock=clock)
        finally:
            subprocess.run(["mount", "-o", "remount,rw", str(folder)], check=True)
        with spec.gateway(clock=clock) as gateway:
            assert asked.ask_id
            kept = gateway.get(asked.ask_id)
            assert kept.is_open and kept.mismatches == 1


def test_a_read_only_database_refuses_writes_clearly_and_no_partial_row(
    sqlite_spec: StoreSpec, clock: ManualClock
) -> None:
    gateway = sqlite_spec.gateway(clock=clock)
    try:
        asked = gateway.ask("ro-2", "Deploy?", ["Deploy", "Hold"])
        assert asked.ask_id
        before = dump(sqlite_spec)
        conns = store_connections(gateway)
        for conn in conns:  # the pragma is per connection: the writer's group commits included
            conn.execute("PRAGMA query_only = ON")
        for call in (
            lambda: gateway.handle("ro-2", "nope", message_id="ro-m"),
            lambda: gateway.ask("ro-3", "Other?", ["A", "B"]),
            lambda: gateway.cancel(asked.ask_id or ""),
        ):
            with pytest.raises(StoreError, match="read-only") as info:
                call()
            assert not isinstance(info.value, StoreUnavailable)
        assert dump(sqlite_spec) == before
        for conn in conns:
            conn.execute("PRAGMA query_only = OFF")
        assert gateway.handle("ro-2", "nope", message_id="ro-m").kind is ReplyKind.RETRY
        assert gateway.get(asked.ask_id).mismatches == 1
    finally:
        gateway.close()
