"""Reminder and escalation due times in the exhaustive check: every state holds the
properties, and a firing that broke one would be caught."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest

from parkgate.core import machine
from parkgate.core.model import Ask
from parkgate.core.schedule import Fired, fire_due
from parkgate.prove import check, enumerate_cases
from parkgate.prove import schedule as proved


def test_every_state_fires_its_schedule_without_closing_touching_or_removing() -> None:
    cases = enumerate_cases()
    assert {case.expired for case in cases} == {False, True}
    memo: dict[object, list[str]] = {}
    failures = [f for case in cases for f in proved.schedule_failures(case, machine.DEFAULT_ESCALATE_AFTER, memo)]
    assert failures == []
    assert check().failures == []


def touching(ask: Ask, now: datetime) -> Fired | None:
    fired = fire_due(ask, now)
    return None if fired is None else Fired(fired.ask.evolve(last_touched=now), fired.reminded, fired.escalated)


def replacing_responders(ask: Ask, now: datetime) -> Fired | None:
    fired = fire_due(ask, now)
    return None if fired is None else Fired(fired.ask.evolve(responders=ask.escalate_to), True, True)


def counting_one_reminder(ask: Ask, now: datetime) -> Fired | None:
    fired = fire_due(ask, now)
    if fired is None:
        return None
    return Fired(fired.ask.evolve(reminders_sent=min(fired.ask.reminders_sent, 1)), fired.reminded, fired.escalated)


def firing_when_lapsed(ask: Ask, now: datetime) -> Fired | None:
    return fire_due(ask, now - timedelta(microseconds=2))


@pytest.mark.parametrize(
    ("broken", "says"),
    [
        (touching, "touched the ask"),
        (replacing_responders, "removed a responder"),
        (firing_when_lapsed, "past its TTL fired"),
        (counting_one_reminder, "is still due after firing"),
    ],
)
def test_a_firing_that_breaks_a_property_is_caught(monkeypatch: pytest.MonkeyPatch, broken: object, says: str) -> None:
    monkeypatch.setattr(proved, "fire_due", broken)
    memo: dict[object, list[str]] = {}
    failures = [failure for case in enumerate_cases() for failure in proved.schedule_failures(case, 3, memo)]
    assert any(says in failure for failure in failures)
