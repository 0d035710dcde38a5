"""Bad input gets a clear error naming what is wrong, and nothing already stored changes.

Runs on SQLite: input is refused before a store is reached. One part covers database
files that cannot be used: read-only ones, and ones that are not parkgate databases; the
file must come out of it byte for byte as it went in.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from parkgate import Gateway, InputError, ManualClock, ReplyKind, StoppingPointError, StoreError

if TYPE_CHECKING:
    from conftest import StoreLocation

ONE_MB = 1024 * 1024

BAD_MESSAGES: list[tuple[str, Any, str]] = [
    ("invalid UTF-8 bytes", b"\xff\xfe\xfd 1", "UTF-8"),
    ("a NUL character", "1\x00", "NUL"),
    ("a 1 MB message", "1" * ONE_MB, "limit"),
    ("a lone surrogate", "\ud800", "Unicode"),
    ("not text at all", 12, "text"),
]
BAD_CONVERSATIONS: list[tuple[str, Any, str]] = [
    ("an empty conversation id", "", "empty"),
    ("a blank conversation id", "   ", "empty"),
    ("a NUL in the conversation id", "conv\x00", "control character"),
    ("an over-long conversation id", "c" * 10_000, "limit"),
]


def _snapshot(gateway: Gateway, location: StoreLocation, ask_id: str) -> tuple[object, ...]:
    """Everything a bad message could have disturbed: the ask, the audit, the raw tables."""
    return (
        gateway.get(ask_id),
        gateway.audit(),
        location.raw_query("SELECT count(*) FROM inbound_messages"),
        location.raw_query("SELECT count(*) FROM asks"),
        location.raw_query("SELECT id, status, pending_ask_id FROM runs ORDER BY id"),
    )


@pytest.fixture
def parked(gateway: Gateway) -> str:
    """A choice ask parked in conversation ``conv`` with one miss already counted."""
    reply = gateway.ask("conv", "Deploy?", ["Yes", "No"])
    assert gateway.handle("conv", "hmm").kind is ReplyKind.RETRY
    assert reply.ask_id is not None
    return reply.ask_id


@pytest.mark.parametrize("what, message, named", BAD_MESSAGES, ids=[case[0] for case in BAD_MESSAGES])
def test_a_bad_message_is_refused_and_the_parked_ask_is_unchanged(
    gateway: Gateway, store_location: StoreLocation, parked: str, what: str, message: Any, named: str
) -> None:
    before = _snapshot(gateway, store_location, parked)
    with pytest.raises(InputError) as raised:
        gateway.handle("conv", message, message_id="msg-bad")
    assert named in str(raised.value), f"{what}: the error does not say what is wrong: {raised.value}"
    assert _snapshot(gateway, store_location, parked) == before
    # The refused message left no trace: its id is still new, and the ask still counts from 1.
    retry = gateway.handle("conv", "nope", message_id="msg-bad")
    assert retry.kind is ReplyKind.RETRY
    assert gateway.get(parked).mismatches == 2


@pytest.mark.parametrize("what, conversation, named", BAD_CONVERSATIONS, ids=[case[0] for case in BAD_CONVERSATIONS])
def test_a_bad_conversation_id_is_refused_everywhere(
    gateway: Gateway, store_location: StoreLocation, parked: str, what: str, conversation: Any, named: str
) -> None:
    before = _snapshot(gateway, store_location, parked)
    calls = [
        lambda: gateway.handle(conversation, "1"),
        lambda: gateway.ask(conversation, "Deploy?", ["Yes", "No"]),
        lambda: gateway.ask_from_text(conversation, "[[ask]]\nDeploy?\n1. Yes\n2. No\n[[/ask]]"),
        lambda: gateway.start(conversation, "uml"),
    ]
    for call in calls:
        with pytest.raises(InputError) as raised:
            call()
        assert "conversation_id" in str(raised.value) and named in str(raised.value), what
    assert _snapshot(gateway, store_location, parked) == before


def test_bytes_that_are_utf8_are_read_as_text(gateway: Gateway, parked: str) -> None:
    reply = gateway.handle("conv", b"2")
    assert reply.kind is ReplyKind.SELECTED and reply.answer == "No"


def test_a_bad_message_id_is_refused_before_anything_is_read(
    gateway: Gateway, store_location: StoreLocation, parked: str
) -> None:
    before = _snapshot(gateway, store_location, parked)
    for message_id in ["", "id\x00", "x" * 10_000]:
        with pytest.raises(InputError, match="message_id"):
            gateway.handle("conv", "1", message_id=message_id)
    assert _snapshot(gateway, store_location, parked) == before


@pytest.mark.parametrize("count", [0, 1000])
def test_an_option_list_of_0_or_1000_is_refused_and_nothing_is_stored(
    gateway: Gateway, store_location: StoreLocation, count: int
) -> None:
    options = [f"Option {n}" for n in range(1, count + 1)]
    with pytest.raises(StoppingPointError) as raised:
        gateway.ask("conv-o", "Pick one", options)
    assert "option" in str(raised.value)
    assert store_location.raw_query("SELECT count(*) FROM asks")[0][0] == 0
    assert store_location.raw_query("SELECT count(*) FROM runs")[0][0] == 0
    assert gateway.handle("conv-o", "1").kind is ReplyKind.PASS


def test_a_refused_replacement_leaves_the_open_ask_open(
    gateway: Gateway, store_location: StoreLocation, parked: str
) -> None:
    before = _snapshot(gateway, store_location, parked)
    with pytest.raises(StoppingPointError):
        gateway.ask("conv", "Pick one", [], replace=True)
    with pytest.raises(StoppingPointError, match="repeats"):
        gateway.ask("conv", "Pick one", ["Same", "same"], replace=True)
    assert _snapshot(gateway, store_location, parked) == before


def test_a_malformed_stopping_point_names_the_line_and_stores_nothing(
    gateway: Gateway, store_location: StoreLocation
) -> None:
    output = "Some thoughts.\n[[ask]]\nWhich one?\n1. Red\n3. Blue\n[[/ask]]"
    with pytest.raises(StoppingPointError) as raised:
        gateway.ask_from_text("conv-sp", output)
    assert raised.value.line == 5 and "gap" in str(raised.value)
    with pytest.raises(StoppingPointError, match="never closed"):
        gateway.ask_from_text("conv-sp", "[[ask]]\nWhich one?\n1. Red\n")
    assert store_location.raw_query("SELECT count(*) FROM asks")[0][0] == 0


def test_a_bad_ttl_or_default_is_refused(gateway: Gateway, store_location: StoreLocation) -> None:
    with pytest.raises(InputError, match="ttl"):
        gateway.ask("conv-ttl", "Deploy?", ["Yes", "No"], ttl=-5)
    with pytest.raises(InputError, match="default"):
        gateway.ask("conv-ttl", "Deploy?", ["Yes", "No"], default="Maybe")
    assert store_location.raw_query("SELECT count(*) FROM asks")[0][0] == 0


# -- SQLite files that cannot be used --------------------------------------------------


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@contextmanager
def _read_only(*paths: Path) -> Iterator[None]:
    """Make ``paths`` really unwritable, also for root (which ignores chmod): ``chattr +i``."""
    if os.geteuid() != 0:
        modes = {path: path.stat().st_mode for path in paths}
        for path in paths:
            path.chmod(0o555 if path.is_dir() else 0o444)
        try:
            yield
        finally:
            for path, mode in modes.items():
                path.chmod(mode)
        return
    done = subprocess.run(["chattr", "+i", *map(str, paths)], capture_output=True, text=True)
    if done.returncode != 0:
        subprocess.run(["chattr", "-i", *map(str, paths)], capture_output=True)
        pytest.fail(
            f"running as root, and chattr +i (the only way to make a file read-only for root) "
            f"failed here ({done.stderr.strip()})",
            pytrace=False,
        )
    try:
        yield
    finally:
        subprocess.run(["chattr", "-i", *map(str, paths)], check=True)


def _parked_database(path: Path, clock: ManualClock) -> str:
    with Gateway(f"sqlite:///{path}", clock=clock) as gateway:
        reply = gateway.ask("conv", "Deploy?", ["Yes", "No"])
        gateway.handle("conv", "hmm")
    assert reply.ask_id is not None
    return reply.ask_id


@pytest.mark.parametrize("locked", ["file and folder", "file only"])
def test_a_read_only_database_gives_a_clear_error_and_is_untouched(
    tmp_path: Path, clock: ManualClock, locked: str
) -> None:
    path = tmp_path / "parkgate.db"
    ask_id = _parked_database(path, clock)
    digest = _digest(path)
    with _read_only(*([path, tmp_path] if locked == "file and folder" else [path])):
        # Opening may already fail (no room for the WAL index); if not, the first write does.
        with pytest.raises(StoreError) as raised:
            gateway = Gateway(f"sqlite:///{path}", clock=clock)
            try:
                gateway.handle("conv", "2")
            finally:
                gateway.close()
        assert "read-only" in str(raised.value) and str(path) in str(raised.value)
        assert _digest(path) == digest
    with Gateway(f"sqlite:///{path}", clock=clock) as gateway:
        ask = gateway.get(ask_id)
        assert ask.is_open and ask.mismatches == 1  # nothing lost, nothing half-written
        assert gateway.handle("conv", "2").kind is ReplyKind.SELECTED


def _foreign_sqlite(path: Path) -> None:
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT)")
    conn.execute("INSERT INTO users (name) VALUES ('ada')")
    conn.commit()
    conn.close()


@pytest.mark.parametrize("kind", ["random bytes", "a SQLite file with other tables"])
def test_a_file_that_is_not_a_parkgate_database_is_refused_and_untouched(tmp_path: Path, kind: str) -> None:
    path = tmp_path / "data.db"
    if kind == "random bytes":
        path.write_bytes(os.urandom(3 * 4096))
    else:
        _foreign_sqlite(path)
    digest = _digest(path)
    with pytest.raises(StoreError) as raised:
        Gateway(f"sqlite:///{path}")
    message = str(raised.value)
    assert "not a parkgate database" in message and str(path) in message
    if kind != "random bytes":
        assert "users" in message  # it names what it found
    assert _digest(path) == digest
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data.db"]  # no -wal/-shm left behind


def test_a_folder_or_a_missing_folder_is_named(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="folder"):
        Gateway(f"sqlite:///{tmp_path}")
    with pytest.raises(StoreError, match="does not exist"):
        Gateway(f"sqlite:///{tmp_path / 'missing' / 'p.db'}")
