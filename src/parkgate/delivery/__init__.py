"""What reaches the side that waits: due reads and callback delivery.

:class:`Deliverer` runs both for one gateway: it reads asks something waits on when their
TTL falls due (the ordinary read, which closes them as ``expired``), and POSTs the
callbacks of closed asks from the durable outbox. It sleeps until the earliest due time or
callback, or until the close signal says something changed. Run it in one of three ways:
``Gateway(..., deliver=True)`` (a background thread), ``AsyncGateway(..., deliver=True)``
(a task), or ``parkgate deliver --db URL`` (a process of its own); ``parkgate serve`` runs
one in each worker.
"""

from parkgate.delivery.deliverer import Deliverer, DelivererThread
from parkgate.delivery.outbox import OutboxDeliverer, backoff_delay

__all__ = ["Deliverer", "DelivererThread", "OutboxDeliverer", "backoff_delay"]
