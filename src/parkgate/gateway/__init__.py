"""The gateway: one store transaction per inbound message, decided by the pure core.

- :mod:`~parkgate.gateway.calls`: the public :class:`Gateway` and its calls' checks;
  :mod:`~parkgate.gateway.reads`: its reads and operator calls.
- :mod:`~parkgate.gateway.runs`: the run life cycle and workflows inside a transaction.
- :mod:`~parkgate.gateway.unit`: one unit of work, its writes, its retry on a conflict.
- :mod:`~parkgate.gateway.closing`: what follows a close (metrics, the expiry log, the
  close signal, the undelivered warning) and how long a waiter sleeps.
- :mod:`~parkgate.gateway.shapes`: the public JSON shape of an ask and the replies.
"""

from __future__ import annotations

from parkgate.gateway.calls import DEFAULT_TTL, Gateway
from parkgate.gateway.closing import (
    DUE_MARGIN_SECONDS,
    UNDELIVERED_CHECK_SECONDS,
    ClosedAsk,
    pause_before_reading,
)
from parkgate.gateway.shapes import ask_to_dict, asked_reply
from parkgate.gateway.unit import CONFLICT_RETRIES
from parkgate.heartbeat import HEARTBEAT_SECONDS
from parkgate.signal import FALLBACK_READ_SECONDS

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
