"""SQLite: the WAL is checkpointed by a background thread, never inside a message's commit.

A commit that crosses ``wal_autocheckpoint`` copies every changed page into the file and
syncs it before the message it carries is answered. The store's connections set that
bound far out, and a thread checkpoints ``PASSIVE`` every few hundred group commits.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from parkgate import Gateway, ManualClock
from parkgate.store import sqlite, sqlite_file
from parkgate.store.sqlite import SQLiteStore


def test_the_commits_leave_checkpoints_to_the_background_thread(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'c.db'}"
    with Gateway(url, clock=ManualClock(datetime(2026, 1, 5, tzinfo=UTC))) as gateway:
        store = gateway.store
        assert isinstance(store, SQLiteStore)
        conn = store._connection()
        assert conn.execute("PRAGMA wal_autocheckpoint").fetchone()[0] == sqlite_file.WAL_AUTOCHECKPOINT_PAGES
        checkpointer = sqlite.file_writers(store.path).checkpointer
        assert checkpointer is not None
        checkpointer.every = 20
        before = checkpointer.passes
        gateway.ask("c", "Describe the change")
        for n in range(45):
            gateway.handle("c", " ", message_id=f"m{n}")  # a miss that writes, 46 commits in all
        assert checkpointer.join(timeout=10)
        assert checkpointer.passes - before == 2  # at the 20th and the 40th commit
        assert checkpointer.last is not None
        busy, frames, copied = checkpointer.last
        assert busy == 0 and frames > 0 and copied > 0  # it copied the WAL's frames into the file
