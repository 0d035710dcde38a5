"""What one unit of work writes, stated by intent.

The gateway describes everything a unit writes as one :class:`Writes` value and hands it
to :meth:`MessageTransaction.write <parkgate.store.base.MessageTransaction.write>`. Each engine maps
the value to its fastest form: PostgreSQL sends :meth:`Writes.usual_step` as the one
statement ``parkgate_step`` and a lone :attr:`Writes.park` as one statement, SQLite checks
a remembered ask in the ``UPDATE`` of its step. The engine never infers intent from a
sequence of writes: the value says what the writes are. The values are named tuples:
immutable, and cheap to make once a message.
"""

from __future__ import annotations

from datetime import datetime
from typing import NamedTuple

from parkgate.core.events import NewEvent
from parkgate.core.model import Ask, Run, RunStatus


class RunChange(NamedTuple):
    """A run's new status, outcome and pending ask, written without reading the run first
    (its workflow and answers stay as they are; an unknown run id changes nothing)."""

    run_id: str
    status: RunStatus
    outcome: str | None
    pending_ask_id: str | None
    at: datetime


class AskStep(NamedTuple):
    """An existing ask's new state (after a message, an expiry, a cancel) and its run's change."""

    ask: Ask
    run: RunChange | None = None


class NewAsk(NamedTuple):
    """A new ask and its run as it stands with that ask pending (inserted, or updated if it
    exists); ``follow_up`` records that a waiter follows the ask up once it closes, and
    ``watcher`` which one, when named."""

    ask: Ask
    run: Run
    follow_up: bool = False
    watcher: str | None = None


class StoredReply(NamedTuple):
    """The reply to a message with a ``message_id``: a redelivery returns it unchanged."""

    conversation_id: str
    message_id: str
    reply: str
    at: datetime


class QueuedCallback(NamedTuple):
    """A closed ask's callback, queued in the outbox in the same commit as the close.

    ``host`` is the receiver's host (deliverers take turns between hosts); ``owner`` the
    ask's owner (its undelivered callbacks count against the owner's cap); ``event_id``
    the event's id, its ``webhook-id`` on every attempt.
    """

    ask_id: str
    url: str
    payload: str
    at: datetime
    host: str | None = None
    owner: str | None = None
    event_id: str | None = None


class QueuedChannelJob(NamedTuple):
    """A channel job (:mod:`parkgate.channels`) queued in the same commit as the ask's event.

    With ``channel`` and ``target`` (a park's post job), the ask's ``channel_posts`` row is
    written too. Without them the job goes to the channel the ask was posted to, and is
    queued only if it was (an ask never posted to a channel queues nothing).
    """

    ask_id: str
    job: str
    payload: str
    at: datetime
    channel: str | None = None
    target: str | None = None


class Writes(NamedTuple):
    """Everything one unit of work writes, applied in this order: the steps of existing
    asks, whole runs, the new ask, the stored reply, the queued callbacks, the queued
    channel jobs, the asks whose reminder or escalation fired (their schedule and
    responders, never a touch), and the events that record all of it
    (:mod:`parkgate.core.events`), in the order they happened.

    The order matters once: a step that closes a conversation's open ask comes before the
    new ask parked there (a conversation has at most one open ask).
    """

    steps: tuple[AskStep, ...] = ()
    runs: tuple[Run, ...] = ()
    park: NewAsk | None = None
    reply: StoredReply | None = None
    callbacks: tuple[QueuedCallback, ...] = ()
    channel_jobs: tuple[QueuedChannelJob, ...] = ()
    fired: tuple[Ask, ...] = ()
    events: tuple[NewEvent, ...] = ()

    def usual_step(self) -> AskStep | None:
        """The one step of the usual message: an ask's new state, its run's change and the
        stored reply and its events, and nothing else (no whole run, no new ask, no
        callback, no channel job, no fired schedule)."""
        if (
            len(self.steps) != 1
            or self.runs
            or self.park is not None
            or self.callbacks
            or self.channel_jobs
            or self.fired
        ):
            return None
        return self.steps[0]

    def lone_park(self) -> NewAsk | None:
        """The new ask when it is all there is to write with its events (nothing closed, no
        reply, no callback, no channel job)."""
        if self.steps or self.runs or self.reply is not None or self.callbacks or self.channel_jobs or self.fired:
            return None
        return self.park
