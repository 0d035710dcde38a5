"""The gateway: one store transaction per inbound message, decided by the pure core.

- :mod:`~parkgate.gateway.calls`: the public :class:`Gateway`, one class: its calls to
  park, take a message, read and wait, act on runs and channels, and gate a function
  (:mod:`~parkgate.gateway.approval` makes that decorator);
  :mod:`~parkgate.gateway.async_gateway`: the same calls for asyncio code.
- :mod:`~parkgate.gateway.runs`: the unit of work every call runs its body in (a
  transaction, its retry on a conflict, the report of what it closed), the run life
  cycle and workflows inside it, what it writes, and the replies.
- :mod:`~parkgate.gateway.closing`: what follows a close (metrics, the expiry log, the
  close signal, the undelivered warning) and how long a waiter sleeps.
- :mod:`~parkgate.gateway.shapes`: the public JSON shape of an ask.
"""

from __future__ import annotations

from parkgate.delivery.heartbeat import HEARTBEAT_SECONDS
from parkgate.gateway.calls import DEFAULT_TTL, Gateway
from parkgate.gateway.closing import (
    DUE_MARGIN_SECONDS,
    UNDELIVERED_CHECK_SECONDS,
    ClosedAsk,
    pause_before_reading,
)
from parkgate.gateway.runs import CONFLICT_RETRIES, asked_reply
from parkgate.gateway.shapes import ask_to_dict
from parkgate.store.signal import FALLBACK_READ_SECONDS

__all__ = [
    "CONFLICT_RETRIES",
    "DEFAULT_TTL",
    "DUE_MARGIN_SECONDS",
    "FALLBACK_READ_SECONDS",
    "HEARTBEAT_SECONDS",
    "UNDELIVERED_CHECK_SECONDS",
    "ClosedAsk",
    "Gateway",
    "ask_to_dict",
    "asked_reply",
    "pause_before_reading",
]
