"""The tokens file, watched: a server notices when ``PARKGATE_TOKENS_FILE`` changes.

Removing a token from the file revokes it, adding one grants it, without a restart. Each
server process (each worker) looks at the file's size, modification time and inode at
most once every :data:`CHECK_EVERY_SECONDS`, on a request that presents a token, and
re-reads it only when one of them changed: the hot path costs a clock read. A file that
becomes unreadable or invalid keeps the last good tokens in use and logs an error (once
per change of the file), so a half-written edit never locks every caller out.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable
from pathlib import Path

from parkgate.http.tokens import Caller, TokenFileError, Tokens

log = logging.getLogger("parkgate.http")

#: The longest a server process goes without looking at its tokens file for a change.
CHECK_EVERY_SECONDS = 1.0

#: What tells a changed file from the one read: (inode, size, modification time in ns);
#: ``None`` when the file cannot be looked at.
_Stamp = tuple[int, int, int] | None


def _stamp(path: Path) -> _Stamp:
    try:
        facts = os.stat(path)
    except OSError:
        return None
    return facts.st_ino, facts.st_size, facts.st_mtime_ns


class WatchedTokens(Tokens):
    """Named tokens from a file that is re-read when it changes (see the module docstring).

    Args:
        path: the tokens file (``PARKGATE_TOKENS_FILE``).
        check_every: the least time, in seconds, between two looks at the file.
        monotonic: the clock that paces the looks (injected by tests).

    Raises:
        TokenFileError: the file cannot be used when the server starts (it must not start).
    """

    def __init__(
        self,
        path: str | Path,
        *,
        check_every: float = CHECK_EVERY_SECONDS,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self._path = Path(path)
        self._seen = _stamp(self._path)  # before the read: a write during it is seen next time
        super().__init__(dict(Tokens.from_file(self._path).by_digest))
        self._check_every = check_every
        self._monotonic = monotonic
        self._next_look = monotonic() + check_every

    def identify(self, presented: bytes) -> Caller | None:
        """The caller whose token is ``presented`` in the file as it is now (to within
        :data:`CHECK_EVERY_SECONDS`), or ``None``."""
        now = self._monotonic()
        if now >= self._next_look:
            self._next_look = now + self._check_every
            self.refresh()
        return super().identify(presented)

    def refresh(self) -> bool:
        """Re-read the file if it changed since the last look; True when new tokens are in use."""
        stamp = _stamp(self._path)
        if stamp == self._seen:
            return False
        self._seen = stamp
        try:
            fresh = Tokens.from_file(self._path)
        except TokenFileError as error:
            log.error("%s; the server keeps the tokens it last read from it", error)
            return False
        self._by_digest = dict(fresh.by_digest)
        log.info("re-read the tokens file %s: %d tokens", self._path, len(fresh.by_digest))
        return True
