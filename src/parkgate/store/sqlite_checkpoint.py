"""Checkpoints of a SQLite file's WAL, made off the commit path.

SQLite checkpoints a WAL file inside the commit that crosses ``wal_autocheckpoint``
pages: that commit copies every page changed since the last checkpoint into the database
file and syncs it, and the message it carries waits for all of it (a stall of tens to
hundreds of milliseconds in a run of 5 ms messages). Here a background thread of this
process makes the checkpoint instead, ``PASSIVE`` (it never blocks a writer or a reader),
every :data:`CHECKPOINT_EVERY_COMMITS` group commits; the commit path only counts.
``wal_autocheckpoint`` stays set, far higher (:data:`WAL_AUTOCHECKPOINT_PAGES`), as the
bound on the WAL if the thread ever falls behind.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
from pathlib import Path

#: Group commits between background checkpoints: a message changes a handful of pages,
#: so about 2,000-4,000 WAL pages (8-16 MB) are copied by each.
CHECKPOINT_EVERY_COMMITS = 500
#: How long the checkpoint's connection waits for SQLite's checkpoint lock (another
#: process's checkpoint) before it gives up this turn.
CHECKPOINT_BUSY_MS = 1_000

log = logging.getLogger("parkgate")


class Checkpointer:
    """The background checkpoints of one file in this process.

    Args:
        path: The database file.
        every: Group commits between checkpoints.
    """

    def __init__(self, path: Path, every: int = CHECKPOINT_EVERY_COMMITS) -> None:
        self.path = path
        self.every = every
        self._commits = 0
        self._running = threading.Lock()
        #: Checkpoints made, and the last one's ``(busy, WAL frames, frames checkpointed)``.
        self.passes = 0
        self.last: tuple[int, int, int] | None = None

    def committed(self) -> None:
        """Count one group commit (called with the file's writer lock held); every
        :attr:`every` commits, start a checkpoint unless one is still running."""
        self._commits += 1
        if self._commits < self.every:
            return
        if not self._running.acquire(blocking=False):
            return  # the last one is still copying: count on, try at the next commit
        self._commits = 0
        threading.Thread(target=self._checkpoint, name="parkgate-checkpoint", daemon=True).start()

    def _checkpoint(self) -> None:
        try:
            conn = sqlite3.connect(str(self.path), isolation_level=None, timeout=CHECKPOINT_BUSY_MS / 1000)
            try:
                row = conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
                self.last = (int(row[0]), int(row[1]), int(row[2]))
                self.passes += 1
            finally:
                conn.close()
        except sqlite3.Error as error:  # the next turn tries again; the commit path's bound still holds
            log.debug("background checkpoint of %s failed: %s", self.path, error)
        finally:
            self._running.release()

    def join(self, timeout: float | None = None) -> bool:
        """Wait for a running checkpoint to end; ``False`` if it did not in ``timeout``."""
        if not self._running.acquire(timeout=-1 if timeout is None else timeout):
            return False
        self._running.release()
        return True
