"""PostgreSQL's close NOTIFY goes out when something may wait on the ask, and only then.

Migration 9: a close notifies for an ask with a due time (a callback, ``watched``) or one
a waiter flagged ``waited``; a plain ask nobody waits on commits without a NOTIFY (such
commits are not serialised on PostgreSQL's notification queue). A waiter in another
process still wakes on the commit, not on its fallback read.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from parkgate import Gateway
from parkgate.store.postgres import PostgresStore
from parkgate.store.signal import FALLBACK_READ_SECONDS, CloseSignal
from parkgate.store.watch import WaitRegistrar
from polling import until

SRC = Path(__file__).resolve().parents[2] / "src"


@pytest.fixture
def listener(pg_url: str) -> Iterator[psycopg.Connection[tuple[object, ...]]]:
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("LISTEN parkgate")
        yield conn


def _heard(conn: psycopg.Connection[tuple[object, ...]], schema: str, seconds: float = 0.5) -> list[str]:
    """The events (``closed <id>`` ...) notified for ``schema`` within ``seconds``."""
    found = []
    for note in conn.notifies(timeout=seconds):
        where, _, rest = note.payload.partition(" ")
        if where == schema:
            found.append(rest)
    return found


def test_a_plain_ask_closes_without_a_notify_and_a_waited_on_one_with_one(
    pg_url: str, pg_schema: str, listener: psycopg.Connection[tuple[object, ...]]
) -> None:
    with Gateway(store=PostgresStore(pg_url, schema=pg_schema)) as gateway:
        plain = gateway.ask("c-plain", "Deploy?", ["Deploy", "Hold"]).ask_id or ""
        assert gateway.wait(plain, 0).is_open  # a read that does not sleep flags nothing
        assert gateway.handle("c-plain", "1").kind.value == "selected"
        assert _heard(listener, pg_schema) == []  # nothing waits: no NOTIFY

        watched = gateway.ask("c-watched", "Ship?", ["Ship", "Wait"], watched=True).ask_id
        assert _heard(listener, pg_schema) == [f"due {watched}"]
        gateway.handle("c-watched", "1")
        assert _heard(listener, pg_schema) == [f"closed {watched}"]

        hooked = gateway.ask("c-hook", "Merge?", ["Merge", "Wait"], callback_url="http://hooks.test/h").ask_id or ""
        assert _heard(listener, pg_schema) == [f"due {hooked}"]
        gateway.cancel(hooked)
        assert [event.split()[0] for event in sorted(_heard(listener, pg_schema))] == ["closed", "outbox"]

        waited = gateway.ask("c-waited", "Go?", ["Go", "Stop"]).ask_id or ""
        assert gateway.wait(waited, 0.3).is_open  # the wait flags it
        gateway.handle("c-waited", "1")
        assert _heard(listener, pg_schema) == [f"closed {waited}"]
    with psycopg.connect(pg_url) as conn:
        conn.execute(f'SET search_path TO "{pg_schema}"')
        flags: dict[object, object] = dict(conn.execute("SELECT id, waited FROM asks").fetchall())
    assert flags[plain] is False and flags[waited] is True


def test_a_flag_that_finds_the_ask_closed_wakes_its_waiter_at_once(pg_url: str, pg_schema: str) -> None:
    with Gateway(store=PostgresStore(pg_url, schema=pg_schema)) as gateway:
        closed = gateway.ask("c-1", "Deploy?", ["Deploy", "Hold"]).ask_id or ""
        still_open = gateway.ask("c-2", "Ship?", ["Ship", "Wait"]).ask_id or ""
        gateway.handle("c-1", "1")  # closed before any waiter elsewhere flags it
    signal = CloseSignal()
    registrar = WaitRegistrar(pg_url, pg_schema, signal)
    try:
        with signal.waiting(closed) as late, signal.waiting(still_open) as early:
            registrar.add(closed)
            registrar.add(still_open)
            assert late.wait(5)  # the flag found it closed: no NOTIFY needed
            assert not early.wait(0.3)
    finally:
        registrar.stop()
    with psycopg.connect(pg_url) as conn:
        conn.execute(f'SET search_path TO "{pg_schema}"')
        assert conn.execute("SELECT waited FROM asks WHERE id = %s", (still_open,)).fetchone() == (True,)


_WAITER = textwrap.dedent(
    """
    import sys, time
    from parkgate import Gateway
    from parkgate.store.postgres import PostgresStore
    url, schema, ask_id = sys.argv[1:4]
    with Gateway(store=PostgresStore(url, schema=schema)) as gateway:
        gateway.get(ask_id)  # connected and migrated before it says so
        print("waiting", flush=True)
        started = time.monotonic()
        ask = gateway.wait(ask_id, 60)
        print(ask.status.value, time.monotonic() - started, flush=True)
    """
)


def _waited(pg_url: str, pg_schema: str, ask_id: str) -> bool:
    """Whether ``ask_id`` carries the ``waited`` flag a waiter in another process sets."""
    with psycopg.connect(pg_url) as conn:
        conn.execute(f'SET search_path TO "{pg_schema}"')
        return conn.execute("SELECT waited FROM asks WHERE id = %s", (ask_id,)).fetchone() == (True,)


def test_a_waiter_in_another_process_wakes_on_the_commit_of_a_plain_ask(
    pg_url: str, pg_schema: str, listener: psycopg.Connection[tuple[object, ...]]
) -> None:
    with Gateway(store=PostgresStore(pg_url, schema=pg_schema)) as gateway:
        ask_id = gateway.ask("c-1", "Deploy?", ["Deploy", "Hold"]).ask_id or ""
        child = subprocess.Popen(
            [sys.executable, "-c", _WAITER, pg_url, pg_schema, ask_id],
            stdout=subprocess.PIPE,
            text=True,
            env={"PYTHONPATH": str(SRC), "PATH": "/usr/bin:/bin"},
        )
        try:
            assert child.stdout is not None
            assert child.stdout.readline().strip() == "waiting"
            until(lambda: _waited(pg_url, pg_schema, ask_id), 10, "the waiter's flag (set before it sleeps)")
            answered_at = time.monotonic()
            assert gateway.handle("c-1", "1").kind.value == "selected"
            status, _, waited = child.stdout.readline().partition(" ")
            woke_after = time.monotonic() - answered_at
            assert child.wait(timeout=30) == 0
        finally:
            if child.poll() is None:
                child.kill()
                child.wait()
    assert status == "answered" and float(waited) > 0
    assert _heard(listener, pg_schema) == [f"closed {ask_id}"]
    assert woke_after < FALLBACK_READ_SECONDS / 2  # the NOTIFY woke it, not a fallback read
