"""The one supervisor of a deliverer's loop: restarted after any unexpected stop, until cancelled.

:meth:`Deliverer.run <parkgate.delivery.Deliverer.run>` runs its loop under
:func:`supervise`, so every way of running a deliverer (``parkgate serve``'s workers,
``Gateway(deliver=True)``'s thread, ``AsyncGateway(deliver=True)``'s task and
``parkgate deliver``) is restarted the same way. The loop itself survives a failed pass
(the store away); what reaches the supervisor is an error the loop did not expect (a bug,
or a failure outside a pass, such as the close signal's watcher not starting). It is
logged with its traceback (once per outage), ``/healthz`` reports the deliverer as
``restarting`` meanwhile, and the loop starts again after the backoff.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from datetime import datetime

from parkgate.delivery.health import DelivererHealth


class _LoopEnded(RuntimeError):
    """The deliverer's loop returned although it runs until cancelled."""


async def supervise(loop: Callable[[], Awaitable[None]], health: DelivererHealth, now: Callable[[], datetime]) -> None:
    """Run ``loop()`` until cancelled; after it raises (or returns), wait the backoff and run it again.

    Args:
        loop: starts one run of the deliverer's loop (a new coroutine each call).
        health: records the stop (and logs it once per outage) and gives the backoff.
        now: the gateway's clock.
    """
    try:
        while True:
            try:
                await loop()
            except asyncio.CancelledError:
                raise
            except Exception as error:
                delay = health.crashed(error, now())
            else:
                delay = health.crashed(_LoopEnded("the deliverer's loop returned"), now())
            await asyncio.sleep(delay)
    finally:
        health.stopped()
