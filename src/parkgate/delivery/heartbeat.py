"""How a deliverer shows it runs: the heartbeat it stamps in the store, and how old one
may be before nobody counts as delivering.

The deliverer (:mod:`parkgate.delivery.deliverer`) stamps it; the gateway
(:mod:`parkgate.gateway.closing`) reads it to warn when queued callbacks have nobody to
send them. Both layers share the period through this module, below both.
"""

from __future__ import annotations

from datetime import datetime

#: A deliverer stamps its heartbeat this often; one not seen for three times as long is gone.
HEARTBEAT_SECONDS = 10.0
#: How many periods a heartbeat stays fresh.
BEATS_BEFORE_GONE = 3


def is_fresh(last: datetime | None, now: datetime) -> bool:
    """Whether a heartbeat stamped at ``last`` (``None``: never) still says a deliverer runs.

    Args:
        last: the latest heartbeat in the store, or ``None`` when none was stamped.
        now: the time to judge it at.

    Returns:
        True while ``last`` is less than three periods old.
    """
    return last is not None and (now - last).total_seconds() < BEATS_BEFORE_GONE * HEARTBEAT_SECONDS
