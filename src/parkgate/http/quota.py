"""A token's cap on what it holds (``max_open_asks`` in the tokens file): its open asks
and its undelivered callbacks.

Before a capped token parks, its open asks and its callbacks still to deliver (queued,
neither delivered nor given up on) are counted, each on a partial index by owner; at
the cap, its asks past their TTL are closed first (the read that would close them
anyway), and if it is still at the cap the park is refused with :class:`QuotaExceeded`
(a 429 with ``Retry-After``). The callbacks count because each close of an ask with a
``callback_url`` queues one: a token that parks with ``replace`` in a loop closes an ask
per park, and without them its outbox rows (and the deliveries they cost every other
tenant) would grow without bound while its receiver does not take them. Parks of one token take turns in a
server process, so the cap is exact there; with several processes each counts what the
store holds, so a burst that reaches them at the same moment may pass it by at most one
ask per other process.
"""

from __future__ import annotations

import asyncio
import contextlib
import weakref
from collections.abc import AsyncIterator

from parkgate.errors import QuotaExceeded as QuotaExceeded
from parkgate.gateway.async_gateway import AsyncGateway
from parkgate.http.tokens import Caller

#: What a refused park's ``Retry-After`` says, in seconds: the cap frees up only as the
#: token's asks are answered, cancelled or expire.
RETRY_AFTER_SECONDS = 60
#: Asks read at a time while closing a capped token's asks past their TTL, oldest first.
EXPIRY_PAGE = 50


class OpenAskCap:
    """Checks a caller's cap before it parks; see the module docstring.

    The turns are asyncio locks, one per owner on each event loop (a server process runs
    one loop; an asyncio lock serves the loop it first waited on).
    """

    def __init__(self, gateway: AsyncGateway) -> None:
        self.gateway = gateway
        self._locks: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, asyncio.Lock]] = (
            weakref.WeakKeyDictionary()
        )

    @contextlib.asynccontextmanager
    async def room(self, caller: Caller) -> AsyncIterator[None]:
        """Hold the caller's turn while it parks; :class:`QuotaExceeded` when it is at its cap."""
        cap, owner = caller.max_open_asks, caller.owner
        if cap is None or owner is None:
            yield
            return
        turns = self._locks.setdefault(asyncio.get_running_loop(), {})
        async with turns.setdefault(owner, asyncio.Lock()):
            if await self._held(owner) >= cap:
                await self.gateway.open_asks(EXPIRY_PAGE, owner=owner)  # closes the oldest past their TTL
                if await self._held(owner) >= cap:
                    raise QuotaExceeded(caller.name, cap, RETRY_AFTER_SECONDS)
            yield

    async def _held(self, owner: str) -> int:
        """The owner's open asks and callbacks still to deliver: what its cap bounds."""
        return await self.gateway.count_open_asks(owner) + await self.gateway.count_pending_callbacks(owner)
