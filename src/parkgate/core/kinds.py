"""The core's enumerations: what a reply did, an ask's kind and status, a run's status and
outcome.

They are values as well as names: stored in the database, sent in the HTTP API's JSON,
and compared by callers (``reply.kind is ReplyKind.SELECTED``). Their wording for a
person lives apart, in :mod:`parkgate.core.phrases`.
"""

from __future__ import annotations

from enum import StrEnum


class ReplyKind(StrEnum):
    """What the gateway did with an inbound message. Never absent, never null."""

    PASS = "pass"
    ASKED = "asked"
    SELECTED = "selected"
    ANSWERED = "answered"
    RETRY = "retry"
    ESCALATED = "escalated"
    RESHOWN = "reshown"
    CANCELLED = "cancelled"
    #: The ask names responders and the sender is not one of them: nothing changes.
    NOT_YOURS = "not_yours"
    #: A responder's selection on a quorum ask that no option has reached yet.
    VOTED = "voted"
    #: An answer naming an ask that already closed: nothing changes, the sender is told
    #: how and when it closed (and it is logged as a ``late`` event).
    LATE = "late"


#: ``closed_by`` of an ask an operator cancelled (``Gateway.cancel``, ``POST /v1/asks/{id}/cancel``).
OPERATOR = "operator"


class AskStatus(StrEnum):
    """Life cycle of one ask: ``open`` then exactly one closed status."""

    OPEN = "open"
    ANSWERED = "answered"
    CANCELLED = "cancelled"
    EXPIRED = "expired"


class AskKind(StrEnum):
    """What an ask takes: one of its numbered options, or free text."""

    CHOICE = "choice"
    TEXT = "text"


class RunStatus(StrEnum):
    """Life cycle of one run: ``running`` until it ends, then ``complete`` for good."""

    RUNNING = "running"
    COMPLETE = "complete"


class RunOutcome(StrEnum):
    """How the gateway itself ends a run. A caller's ``finish_run`` may record any other id."""

    DONE = "done"
    CANCELLED = "cancelled"
    EXPIRED = "expired"
    REPLACED = "replaced"


class EventType(StrEnum):
    """What a callback event says happened to an ask (its ``type``, Standard Webhooks' style)."""

    #: An ask was parked (sent to the server-wide events subscriber only).
    OPENED = "ask.opened"
    #: One of the ask's reminders fell due; nothing about the ask changed.
    REMINDER = "ask.reminder"
    #: The ask's escalation fell due: ``escalate_to`` joined its responders.
    ESCALATED = "ask.escalated"
    #: The ask closed: answered, cancelled, replaced or expired.
    CLOSED = "ask.closed"
