"""Long-polls (``GET /v1/asks/{id}?wait=S``) counted and capped apart from other requests.

Each waiting request holds a connection for up to a minute, and every connection counts
against ``--max-connections``. So a server process admits at most :attr:`LongPolls.cap`
waits at once (``PARKGATE_MAX_LONG_POLLS``; ``parkgate serve`` defaults it to four fifths
of ``--max-connections``): one more is refused at once with 429 ``too_many_long_polls``,
``Retry-After`` and ``Connection: close`` (:class:`TooManyLongPolls`), which leaves the
other slots to ordinary requests and ``/healthz``. A wait of 0 is an ordinary read.

Waits that end together (2,000 polls started in one burst time out in one loop turn)
would all read the store at once and queue every other request behind those reads on the
process's gateway threads: their reads take :meth:`LongPolls.turns`, at most
:data:`READS_AT_ONCE` at a time, so other requests always find a free thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import weakref
from collections.abc import AsyncIterator, Mapping

from parkgate.errors import TooManyLongPolls as TooManyLongPolls

ENV_MAX_LONG_POLLS = "PARKGATE_MAX_LONG_POLLS"
#: The cap when nothing sets one: four fifths of ``--max-connections``' default of 500.
DEFAULT_MAX_LONG_POLLS = 400
#: Long-poll store reads (and their answers' reads) running at once in a process: well
#: under the gateway's 40 threads (:data:`parkgate.gateway.async_gateway.GATEWAY_THREADS`).
READS_AT_ONCE = 8
#: What a refused long-poll's ``Retry-After`` says, in seconds.
RETRY_AFTER_SECONDS = 2


def max_long_polls_from_env(environ: Mapping[str, str] | None = None) -> int:
    """The cap ``PARKGATE_MAX_LONG_POLLS`` names (default :data:`DEFAULT_MAX_LONG_POLLS`).

    Raises :class:`ValueError` for one that is not a whole number of at least 1.
    """
    env = os.environ if environ is None else environ
    text = env.get(ENV_MAX_LONG_POLLS, "").strip()
    if not text:
        return DEFAULT_MAX_LONG_POLLS
    try:
        cap = int(text)
    except ValueError:
        cap = 0
    if cap < 1:
        raise ValueError(f"{ENV_MAX_LONG_POLLS} must be a whole number of at least 1, not {text!r}")
    return cap


class LongPolls:
    """The long-polls a server process holds: admitted up to ``cap``, reading in turns."""

    def __init__(self, cap: int = DEFAULT_MAX_LONG_POLLS, reads_at_once: int = READS_AT_ONCE) -> None:
        self.cap = cap
        self.reads_at_once = reads_at_once
        self.active = 0
        self._turns: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Semaphore] = (
            weakref.WeakKeyDictionary()
        )

    @contextlib.asynccontextmanager
    async def admit(self) -> AsyncIterator[asyncio.Semaphore]:
        """Hold one of the ``cap`` places for a wait; :class:`TooManyLongPolls` when all are
        taken. Yields the loop's read turns (:meth:`turns`)."""
        if self.active >= self.cap:
            raise TooManyLongPolls(self.cap, ENV_MAX_LONG_POLLS, RETRY_AFTER_SECONDS)
        self.active += 1
        try:
            yield self.turns()
        finally:
            self.active -= 1

    def turns(self) -> asyncio.Semaphore:
        """The running loop's semaphore of ``reads_at_once`` turns to read the store."""
        loop = asyncio.get_running_loop()
        turns = self._turns.get(loop)
        if turns is None:
            turns = self._turns[loop] = asyncio.Semaphore(self.reads_at_once)
        return turns
