"""The channel jobs: their names, which replies are posted, and the queued value a unit
of work writes (:class:`~parkgate.store.writes.QueuedChannelJob`).

Jobs are queued in the same transaction as the ask's event, by
:meth:`WritePlan.queue_channel_job <parkgate.gateway.runs.WritePlan.queue_channel_job>`:
``post`` when an ask with a ``post_to`` target is parked, ``reply`` for a message's reply
that is shown in the thread. ``closed`` is queued by the store, by a trigger on the asks
table (migration 13), for every close of an ask that was posted: a selection, a cancel
word, an operator's cancel, a quorum, a replacement, an expiry by any read (the due
read's included), whatever statement writes it, so a message's one-statement step on
PostgreSQL stays one statement and a close added later cannot forget it. The deliverer
runs them (:class:`~parkgate.channels.deliver.ChannelDeliverer`).
"""

from __future__ import annotations

from datetime import datetime

from parkgate.channels.base import ChannelTarget
from parkgate.core.kinds import ReplyKind
from parkgate.store.writes import QueuedChannelJob

#: Post an open ask.
POST = "post"
#: Update a posted ask once it closed.
CLOSED = "closed"
#: Post a message's reply in the ask's thread.
REPLY = "reply"

#: The replies to a message posted in the ask's thread. A close (selected, answered,
#: cancelled) is shown by the ``closed`` job's update of the message instead.
POSTED_REPLIES: frozenset[ReplyKind] = frozenset(
    {ReplyKind.RETRY, ReplyKind.ESCALATED, ReplyKind.RESHOWN, ReplyKind.VOTED, ReplyKind.NOT_YOURS}
)


def queued_job(
    ask_id: str, job: str, at: datetime, payload: str = "{}", post_to: ChannelTarget | None = None
) -> QueuedChannelJob:
    """The value that queues ``job`` for ``ask_id``: to ``post_to``'s channel (and records
    the post's target) when given, else to the channel the ask was posted to, if any."""
    if post_to is None:
        return QueuedChannelJob(ask_id, job, payload, at)
    return QueuedChannelJob(ask_id, job, payload, at, post_to.channel, post_to.to_json())
