"""Where a gateway's deliverer is assembled: the one place that hands a
:class:`~parkgate.delivery.Deliverer` the parts of a gateway it needs.

The deliverer knows nothing of :class:`~parkgate.Gateway`: it takes a store, a clock, a
close signal and the due reads. ``Gateway(..., deliver=True)``, ``AsyncGateway(...,
deliver=True)``, ``parkgate serve`` and ``parkgate deliver`` all build theirs here, from
whatever gateway they assembled. This module imports the deliverer (and so ``httpx``): a
gateway imports it only when it delivers.
"""

from __future__ import annotations

from datetime import datetime
from typing import Protocol

import httpx

from parkgate.channels.base import Channel
from parkgate.channels.deliver import ChannelDeliverer
from parkgate.clock import Clock
from parkgate.core.fence import AllowList
from parkgate.delivery.deliverer import Deliverer, DelivererThread
from parkgate.delivery.health import Backoff
from parkgate.metrics import Metrics
from parkgate.store import Store
from parkgate.store.signal import CloseSignal


class Delivering(Protocol):
    """What a deliverer is assembled from: the parts of a :class:`~parkgate.Gateway`."""

    store: Store
    clock: Clock
    signal: CloseSignal
    metrics: Metrics
    #: Whether a deliverer runs on it (the undelivered-callback warning reads it).
    delivering: bool
    #: The channels whose jobs it runs, by name (channels added later are run too).
    channels: dict[str, Channel]

    def read_due(self, limit: int) -> int:
        """Read up to ``limit`` asks whose TTL has fallen due; return how many closed."""
        ...

    def next_due(self) -> datetime | None:
        """The earliest due time among open asks something waits on."""
        ...


def deliverer_for(
    gateway: Delivering,
    *,
    allow: AllowList | None = None,
    client: httpx.AsyncClient | None = None,
    backoff: Backoff | None = None,
) -> Deliverer:
    """A deliverer for ``gateway``'s store: its due reads, clock, signal and metrics, and
    the jobs of its channels.

    Args:
        gateway: the gateway whose asks' due reads and callbacks it makes.
        allow: the callback allow-list (default: ``PARKGATE_CALLBACK_ALLOW``).
        client: the HTTP client for callbacks (tests pass one with a mock transport).
        backoff: the delays between tries while passes fail.

    Returns:
        A :class:`~parkgate.delivery.Deliverer`; ``await deliverer.run()`` runs it, and
        ``gateway.delivering`` is true while it does.
    """

    def running(now: bool) -> None:
        gateway.delivering = now

    return Deliverer(
        gateway.store,
        gateway.clock,
        gateway.signal,
        gateway,
        on_pass=gateway.metrics.deliverer_passed,
        on_running=running,
        allow=allow,
        client=client,
        backoff=backoff,
        jobs=[ChannelDeliverer(gateway.store, gateway.clock, gateway.channels, on_job=gateway.metrics.channel_job)],
    )


def start_thread(gateway: Delivering) -> DelivererThread:
    """Start ``gateway``'s deliverer in a daemon thread of its own (``Gateway(deliver=True)``).

    Args:
        gateway: the gateway to deliver for.

    Returns:
        The running :class:`~parkgate.delivery.DelivererThread`; its ``stop()`` ends it.
    """
    return DelivererThread(deliverer_for(gateway))
