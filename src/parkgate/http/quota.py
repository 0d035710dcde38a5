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

import contextlib
import threading
from collections.abc import Iterator

from parkgate.errors import ParkgateError
from parkgate.gateway import Gateway
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
    """Checks a caller's cap before it parks; see the module docstring."""

    def __init__(self, gateway: Gateway) -> None:
        self.gateway = gateway
        self._locks: dict[str, threading.Lock] = {}
        self._guard = threading.Lock()

    @contextlib.contextmanager
    def room(self, caller: Caller) -> Iterator[None]:
        """Hold the caller's turn while it parks; :class:`QuotaExceeded` when it is at its cap."""
        cap, owner = caller.max_open_asks, caller.owner
        if cap is None or owner is None:
            yield
            return
        with self._guard:
            lock = self._locks.setdefault(owner, threading.Lock())
        with lock:
            if self.gateway.count_open_asks(owner) >= cap:
                self.gateway.open_asks(EXPIRY_PAGE, owner=owner)  # closes the oldest past their TTL
                if self.gateway.count_open_asks(owner) >= cap:
                    raise QuotaExceeded(caller, cap)
            yield
