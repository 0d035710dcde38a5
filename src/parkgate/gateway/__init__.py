"""The gateway: one store transaction per inbound message, decided by the pure core.

- :mod:`~parkgate.gateway.calls`: the public :class:`Gateway` and its calls' checks;
  :mod:`~parkgate.gateway.reads`: its reads and operator calls;
  :mod:`~parkgate.gateway.run_calls`: its calls on runs.
- :mod:`~parkgate.gateway.messages`: an inbound message's call, and the unit of work
  every call runs in (a transaction, its retry on a conflict).
- :mod:`~parkgate.gateway.runs`: the run life cycle and workflows inside a transaction,
  what a unit of work writes, and the replies.
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
from parkgate.gateway.messages import CONFLICT_RETRIES
from parkgate.gateway.runs import asked_reply
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
