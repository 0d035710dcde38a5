"""What reaches the side that waits: due reads and callback delivery.

:class:`Deliverer` runs both for one gateway: it reads asks something waits on when their
TTL falls due (the ordinary read, which closes them as ``expired``), and POSTs the
callbacks of closed asks from the durable outbox. It sleeps until the earliest due time or
callback, or until the close signal says something changed. Run it in one of three ways:
``Gateway(..., deliver=True)`` (a background thread), ``AsyncGateway(..., deliver=True)``
(a task), or ``parkgate deliver --db URL`` (a process of its own); ``parkgate serve`` runs
one in each worker. Each runs under one supervisor: a failed pass is logged once per
outage and retried with backoff, and a loop that stops on an unexpected error is
restarted; :class:`DelivererHealth` says where it stands (``/healthz`` reads it).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from parkgate.delivery.health import Backoff, DelivererHealth, DelivererState

if TYPE_CHECKING:
    from parkgate.delivery.deliverer import Deliverer, DelivererThread
    from parkgate.delivery.outbox import OutboxDeliverer, backoff_delay

#: What loads ``httpx`` (the callbacks' client), imported on first use: a gateway that
#: names the deliverer's health (``import parkgate``) loads no HTTP client library.
_SENDING = {
    "Deliverer": "parkgate.delivery.deliverer",
    "DelivererThread": "parkgate.delivery.deliverer",
    "OutboxDeliverer": "parkgate.delivery.outbox",
    "backoff_delay": "parkgate.delivery.outbox",
}


def __getattr__(name: str) -> object:
    """The deliverer's classes, imported when first named."""
    if name in _SENDING:
        return getattr(importlib.import_module(_SENDING[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "Backoff",
    "Deliverer",
    "DelivererHealth",
    "DelivererState",
    "DelivererThread",
    "OutboxDeliverer",
    "backoff_delay",
]
