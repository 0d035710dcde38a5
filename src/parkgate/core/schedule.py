"""Reminders and escalation: which of an ask's due times have passed, and the ask after
they fire.

An ask may carry reminders (offsets in seconds from its last touch) and an escalation
(an offset, and the responders it adds). Each is a due time kept with the ask; when it
passes, the deliverer's due read fires it. Firing is no touch: the TTL, the miss counter
and the status stay as they are, so an ask expires at its TTL whatever fired before it.
An escalation only adds responders (an ask anyone may answer stays so). An ask that is
closed, or past its TTL (its next read closes it), fires nothing.

The schedule a caller gives is declared once, :class:`ScheduleFields`: every park, a
workflow's phase (``Phase(..., **schedule)``) and an adapter's payload take it.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Annotated, TypedDict

from parkgate.core.model import Ask
from parkgate.core.shape import Form, Option


class ScheduleFields(TypedDict, total=False):
    """An ask's reminders and escalation, as a caller gives them (checked when it is parked)."""

    #: Reminders: seconds from the last touch (or a timedelta), or a list of such offsets
    #: (each shorter than the TTL).
    remind_after: Annotated[
        timedelta | float | list[timedelta | float] | tuple[timedelta | float, ...] | None,
        Option(
            Form.OFFSETS, "Seconds from the last touch to a reminder, or a list of them (each shorter than the TTL)."
        ),
    ]
    #: Seconds from the last touch to the escalation (shorter than the TTL).
    escalate_after: Annotated[
        timedelta | float | None,
        Option(Form.SECONDS, "Seconds from the last touch to the escalation (shorter than the TTL)."),
    ]
    #: The responders the escalation adds (with ``escalate_after`` only).
    escalate_to: Annotated[
        list[str] | tuple[str, ...] | None, Option(Form.SENDERS, "The responders the escalation adds.")
    ]


#: The keys of a schedule, in the order they are declared.
SCHEDULE_KEYS: tuple[str, ...] = tuple(ScheduleFields.__annotations__)


@dataclass(frozen=True, slots=True)
class Fired:
    """What fired for one ask: the ask after it, and which events."""

    ask: Ask
    #: A reminder fired (``ask.reminders_sent`` is its number; late reminders fire as one).
    reminded: bool
    #: The escalation fired (``ask.escalated_at`` is when).
    escalated: bool


def escalated_to(ask: Ask) -> tuple[str, ...]:
    """Whom ``ask``'s escalation added: its ``escalate_to`` once the escalation fired,
    nobody before (what a channel names, pings or mails for it)."""
    return ask.escalate_to if ask.escalated_at is not None else ()


def fire_due(ask: Ask, now: datetime) -> Fired | None:
    """The reminders and escalation of ``ask`` due at ``now``, fired; ``None`` when none is.

    Args:
        ask: The ask as stored.
        now: The time of the read.

    Returns:
        The ask with its reminder count, escalation time and responders moved on, and
        what fired; ``None`` for an ask that is closed, past its TTL, or has nothing due.
    """
    if not ask.is_open or ask.is_expired(now):
        return None
    sent = ask.reminders_sent
    while sent < len(ask.remind_after) and ask.last_touched + timedelta(seconds=ask.remind_after[sent]) <= now:
        sent += 1
    escalate = (
        ask.escalate_after is not None
        and ask.escalated_at is None
        and ask.last_touched + timedelta(seconds=ask.escalate_after) <= now
    )
    if sent == ask.reminders_sent and not escalate:
        return None
    responders = ask.responders
    if escalate and responders:  # no responders: anyone may answer, escalate_to among them
        responders += tuple(name for name in ask.escalate_to if name not in responders)
    fired = ask.evolve(reminders_sent=sent, escalated_at=now if escalate else ask.escalated_at, responders=responders)
    return Fired(fired, sent > ask.reminders_sent, escalate)
