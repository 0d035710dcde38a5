"""A token's cap on its open asks (``max_open_asks`` in the tokens file).

Before a capped token parks, its open asks are counted (on the partial index of open
asks by owner); at the cap, its asks past their TTL are closed first (the read that
would close them anyway), and if it is still at the cap the park is refused with
:class:`QuotaExceeded` (a 429 with ``Retry-After``). Parks of one token take turns in a
server process, so the cap is exact there; with several processes each counts what the
store holds, so a burst that reaches them at the same moment may pass it by at most one
ask per other process.
"""

from __future__ import annotations

import asyncio
import contextlib
import weakref
from collections.abc import AsyncIterator

from parkgate.async_gateway import AsyncGateway
from parkgate.errors import ParkgateError
from parkgate.http.tokens import Caller

#: What a refused park's ``Retry-After`` says, in seconds: the cap frees up only as the
#: token's asks are answered, cancelled or expire.
RETRY_AFTER_SECONDS = 60
#: Asks read at a time while closing a capped token's asks past their TTL, oldest first.
EXPIRY_PAGE = 50


class QuotaExceeded(ParkgateError):
    """The caller has as many open asks as its token allows."""

    def __init__(self, caller: Caller, cap: int) -> None:
        self.retry_after = RETRY_AFTER_SECONDS
        super().__init__(
            f"the token {caller.name!r} has {cap} open asks, its max_open_asks: answer, cancel or let some "
            "expire before parking more"
        )


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
            if await self.gateway.count_open_asks(owner) >= cap:
                await self.gateway.open_asks(EXPIRY_PAGE, owner=owner)  # closes the oldest past their TTL
                if await self.gateway.count_open_asks(owner) >= cap:
                    raise QuotaExceeded(caller, cap)
            yield
