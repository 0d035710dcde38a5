"""Reminder and escalation due times, checked in every state of the enumeration.

Each state of :func:`~parkgate.prove.cases.enumerate_cases` is given every schedule of
:data:`SCHEDULES` (a reminder due, several reminders due at once, an escalation due,
both), with and without responders, and fired at the case's moment
(:func:`parkgate.core.schedule.fire_due`). Then:

- a reminder never closes, touches or reopens an ask: the fired ask is open with the
  same last touch, misses and TTL, and a closed ask fires nothing;
- an escalation never removes a responder (and an ask anyone may answer stays so);
- expiry still happens at the TTL whatever fired before it: an ask past its TTL fires
  nothing, and the fired ask falls due when the ask did;
- the case's input does the same to the fired ask as to the ask before it (only the
  added responders may change who may answer; these inputs carry no sender).
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from parkgate.core.kinds import AskStatus
from parkgate.core.model import Ask
from parkgate.core.schedule import SCHEDULE_KEYS, fire_due

from .cases import TTL, Case
from .outcome import COMPARED_FIELDS, pure_outcome

_SECONDS = TTL.total_seconds()
#: The responders an escalation adds.
ADDED = ("U_CAROL", "U_ALICE")
#: Each schedule, as checked: (reminder offsets, escalation offset, the responders it
#: adds), in the order :data:`~parkgate.core.schedule.SCHEDULE_KEYS` names them; every
#: offset due by the case's moment.
SCHEDULES: tuple[tuple[tuple[float, ...], float | None, tuple[str, ...]], ...] = (
    ((_SECONDS / 2,), None, ()),
    ((60.0, _SECONDS / 2, _SECONDS - 1), None, ()),
    ((), _SECONDS / 3, ADDED),
    ((60.0,), _SECONDS / 3, ADDED),
)
#: Responders before the escalation (none: anyone may answer).
RESPONDERS: tuple[tuple[str, ...], ...] = ((), ("U_ALICE",))


def scheduled_asks(case: Case) -> list[tuple[str, Ask]]:
    """The case's open ask with each schedule and responders set, each with a label naming its schedule."""
    base = case.open_ask()
    found: list[tuple[str, Ask]] = []
    for schedule in SCHEDULES:
        fields: dict[str, Any] = dict(zip(SCHEDULE_KEYS, schedule, strict=True))
        label = ", ".join(f"{key}={value}" for key, value in fields.items())
        found.extend((label, base.evolve(**fields, responders=responders)) for responders in RESPONDERS)
    return found


def schedule_failures(case: Case, escalate_after: int, memo: dict[object, list[str]] | None = None) -> list[str]:
    """Every property above that one case breaks, for each schedule (empty: none).

    Args:
        case: The case; its sender plays no part (the schedule's inputs carry none).
        escalate_after: The misses before the escalation step.
        memo: Shared over one run: cases that differ only in their sender share the work
            (the enumeration sends each input from four sender classes).

    Returns:
        One line a broken property, each starting with the case's description.
    """
    key = (case.state, case.message, escalate_after)
    problems = memo.get(key) if memo is not None else None
    if problems is None:
        problems = _schedule_problems(case, escalate_after)
        if memo is not None:
            memo[key] = problems
    label = case.describe()
    return [f"{label}, {problem}" for problem in problems]


def _schedule_problems(case: Case, escalate_after: int) -> list[str]:
    """:func:`schedule_failures`' lines without the case's description in front."""
    failures: list[str] = []
    for label, ask in scheduled_asks(case):
        now = case.moment(ask.last_touched)
        fired = fire_due(ask, now)
        closed = ask.evolve(status=AskStatus.ANSWERED, answered_at=now, closed_at=now)
        if fire_due(closed, now) is not None:
            failures.append(f"{label}: a closed ask fired")
        if case.expired:
            if fired is not None:
                failures.append(f"{label}: an ask past its TTL fired instead of expiring")
            continue
        if fired is None:
            failures.append(f"{label}: nothing fired though every due time had passed")
            continue
        failures.extend(_fired_failures(label, ask, fired.ask, now))
        if not ask.responders:  # a sender-less input means the same to both
            before = pure_outcome(ask, case.message, now, escalate_after)
            after = pure_outcome(fired.ask, case.message, now, escalate_after)
            for name in COMPARED_FIELDS:
                if name != "unchanged" and getattr(before, name) != getattr(after, name):
                    failures.append(f"{label}: after firing, {name} is {getattr(after, name)!r}")
    return failures


def _fired_failures(label: str, ask: Ask, fired: Ask, now: datetime) -> list[str]:
    failures = []
    if not fired.is_open:
        failures.append(f"{label}: firing closed the ask")
    if (fired.last_touched, fired.mismatches, fired.ttl_seconds) != (ask.last_touched, ask.mismatches, ask.ttl_seconds):
        failures.append(f"{label}: firing touched the ask")
    if fired.due_at != ask.due_at:
        failures.append(f"{label}: firing moved the expiry from {ask.due_at} to {fired.due_at}")
    if not set(ask.responders) <= set(fired.responders) or (not ask.responders and fired.responders):
        failures.append(f"{label}: the escalation removed a responder ({ask.responders} -> {fired.responders})")
    if fired.next_event_at is not None and fired.next_event_at <= now:
        failures.append(f"{label}: something is still due after firing ({fired.reminders_sent} sent)")
    if fired.next_event_at is not None and fired.next_event_at <= fired.last_touched + timedelta(0):
        failures.append(f"{label}: the next due time is not after the last touch")
    return failures
