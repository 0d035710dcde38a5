"""Reminders and escalation: due times kept with the ask, fired by the due
read once each, never a touch; an escalation adds responders. Time is the manual clock's."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from parkgate import Gateway, InputError, ManualClock, Phase, ReplyKind, Workflow
from parkgate.core.model import AskStatus

HOOK = "http://hooks.test/h"
T0 = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
StoreLocation = Any


def events(location: StoreLocation) -> list[tuple[str, str, int]]:
    """(type, event id, reminders_sent) of each queued callback, in order."""
    rows = location.raw_query("SELECT payload, event_id FROM outbox ORDER BY id")
    found = []
    for payload, event_id in rows:
        body = json.loads(payload)
        assert set(body) == {"type", "timestamp", "data"}
        found.append((body["type"], event_id, body["data"]["reminders_sent"]))
    return found


def test_a_reminder_fires_once_and_changes_nothing_else(
    gateway: Gateway, clock: ManualClock, store_location: StoreLocation
) -> None:
    parked = gateway.ask("c-1", "Deploy?", ["Deploy", "Hold"], ttl=4, remind_after=1, callback_url=HOOK)
    ask_id = parked.ask_id or ""
    assert gateway.next_due() == T0 + timedelta(seconds=1)  # the reminder comes before the TTL
    clock.advance(timedelta(seconds=1))
    assert gateway.read_due() == 1
    assert gateway.read_due() == 0  # once
    assert b'parkgate_reminders_total{surface="library"} 1.0' in gateway.metrics.exposition()
    ask = gateway.get(ask_id)
    assert ask.is_open and ask.reminders_sent == 1
    assert (ask.last_touched, ask.mismatches) == (T0, 0)  # no touch
    assert gateway.next_due() == T0 + timedelta(seconds=4)  # the TTL is still where it was
    clock.advance(timedelta(seconds=3, microseconds=1))
    assert gateway.read_due() == 1
    assert gateway.get(ask_id).status is AskStatus.EXPIRED
    assert events(store_location) == [
        ("ask.reminder", f"{ask_id}.reminder.1", 1),
        ("ask.closed", f"{ask_id}.closed", 1),
    ]


def test_a_message_moves_the_reminders_as_it_moves_the_ttl(gateway: Gateway, clock: ManualClock) -> None:
    parked = gateway.ask("c-1", "Deploy?", ["Deploy", "Hold"], ttl=4, remind_after=[1, 2], callback_url=HOOK)
    clock.advance(timedelta(seconds=0.5))
    assert gateway.handle("c-1", "what?").kind is ReplyKind.RETRY  # a miss touches the ask
    assert gateway.next_due() == T0 + timedelta(seconds=1.5)
    clock.advance(timedelta(seconds=0.9))
    assert gateway.read_due() == 0
    clock.advance(timedelta(seconds=0.1))
    assert gateway.read_due() == 1
    assert gateway.get(parked.ask_id or "").reminders_sent == 1
    assert gateway.next_due() == T0 + timedelta(seconds=2.5)


def test_late_reminders_fire_as_one(gateway: Gateway, clock: ManualClock, store_location: StoreLocation) -> None:
    gateway.ask("c-1", "Deploy?", ["Deploy", "Hold"], ttl=60, remind_after=[1, 2, 3], callback_url=HOOK)
    clock.advance(timedelta(seconds=2.5))  # the deliverer was away for two of them
    assert gateway.read_due() == 1
    assert [kind for kind, _, sent in events(store_location)] == ["ask.reminder"]
    assert [sent for _, _, sent in events(store_location)] == [2]


def test_nothing_fires_for_an_ask_that_closed_or_lapsed_first(
    gateway: Gateway, clock: ManualClock, store_location: StoreLocation
) -> None:
    gateway.ask("c-1", "Deploy?", ["Deploy", "Hold"], ttl=4, remind_after=2, callback_url=HOOK)
    assert gateway.handle("c-1", "1").kind is ReplyKind.SELECTED
    gateway.ask("c-2", "Ship?", ["Ship", "Hold"], ttl=4, remind_after=2, escalate_after=3, callback_url=HOOK)
    clock.advance(timedelta(seconds=5))  # past the TTL: the read closes it, nothing else fires
    assert gateway.read_due() == 1
    assert [kind for kind, _, _ in events(store_location)] == ["ask.closed", "ask.closed"]
    assert gateway.next_due() is None


def test_an_escalation_adds_its_responders_and_removes_none(
    gateway: Gateway, clock: ManualClock, store_location: StoreLocation
) -> None:
    parked = gateway.ask(
        "c-1", "Deploy?", ["Deploy", "Hold"], ttl=60, responders=["U_ALICE"], escalate_after=1, escalate_to=["U_CAROL"]
    )
    ask_id = parked.ask_id or ""
    assert gateway.handle("c-1", "1", sender="U_CAROL").kind is ReplyKind.NOT_YOURS
    clock.advance(timedelta(seconds=1))
    assert gateway.read_due() == 1
    ask = gateway.get(ask_id)
    assert ask.responders == ("U_ALICE", "U_CAROL") and ask.escalated_at == clock.now()
    assert b'parkgate_escalations_total{surface="library"} 1.0' in gateway.metrics.exposition()
    assert ask.last_touched == T0 + timedelta(seconds=0)  # the not_yours changed nothing either
    assert gateway.handle("c-1", "1", sender="U_CAROL").kind is ReplyKind.SELECTED
    assert gateway.get(ask_id).answered_by == "U_CAROL"


def test_an_escalation_is_an_event_for_the_events_subscriber(
    store_location: StoreLocation, clock: ManualClock, make_gateway: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PARKGATE_EVENTS_URL", "http://events.test/in")
    gateway = make_gateway(store_location, clock=clock)
    parked = gateway.ask("c-1", "Deploy?", ["Deploy", "Hold"], ttl=60, escalate_after=1, escalate_to=["U_CAROL"])
    clock.advance(timedelta(seconds=1))
    assert gateway.read_due() == 1
    ask_id = parked.ask_id or ""
    rows = store_location.raw_query("SELECT url, event_id FROM outbox ORDER BY id")
    assert [tuple(row) for row in rows] == [
        ("http://events.test/in", f"{ask_id}.opened"),
        ("http://events.test/in", f"{ask_id}.escalated"),
    ]
    assert gateway.get(ask_id).responders == ()  # anyone may answer: escalate_to among them


def test_each_event_of_an_ask_carries_the_next_seq(
    store_location: StoreLocation, clock: ManualClock, make_gateway: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PARKGATE_EVENTS_URL", "http://events.test/in")
    gateway = make_gateway(store_location, clock=clock)
    parked = gateway.ask(
        "c-1", "Deploy?", ["Deploy", "Hold"], ttl=60, remind_after=[1, 3], escalate_after=2, escalate_to=["U_CAROL"]
    )
    for _ in range(3):
        clock.advance(timedelta(seconds=1))
        assert gateway.read_due() == 1
    gateway.handle("c-1", "1")
    rows = store_location.raw_query("SELECT event_id, payload FROM outbox ORDER BY id")
    ask_id = parked.ask_id or ""
    events = [(event_id.removeprefix(f"{ask_id}."), json.loads(body)["data"]["seq"]) for event_id, body in rows]
    assert events == [("opened", 1), ("reminder.1", 2), ("escalated", 3), ("reminder.2", 4), ("closed", 5)]


def test_an_events_receiver_on_this_machine_needs_the_allow_list(
    store_location: StoreLocation, clock: ManualClock, make_gateway: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PARKGATE_EVENTS_URL", "http://localhost:9501/events")
    with pytest.raises(InputError, match=r"PARKGATE_EVENTS_URL points at localhost.*PARKGATE_CALLBACK_ALLOW"):
        make_gateway(store_location, clock=clock)
    monkeypatch.setenv("PARKGATE_CALLBACK_ALLOW", "localhost:9501")
    gateway = make_gateway(store_location, clock=clock)
    gateway.ask("c-1", "Deploy?", ["Deploy", "Hold"], ttl=60)
    assert [row[0] for row in store_location.raw_query("SELECT url FROM outbox")] == ["http://localhost:9501/events"]


@pytest.mark.parametrize(
    ("fields", "named"),
    [
        ({"remind_after": 60}, "remind_after"),
        ({"remind_after": [1, 90]}, "remind_after"),
        ({"escalate_after": 61}, "escalate_after"),
        ({"escalate_to": ["U_CAROL"]}, "escalate_to"),
        ({"remind_after": [1, 1]}, "remind_after"),
        ({"remind_after": []}, "remind_after"),
        ({"escalate_after": 1, "escalate_to": []}, "escalate_to"),
    ],
)
def test_a_schedule_that_cannot_fire_is_refused_parking_nothing(
    gateway: Gateway, fields: dict[str, Any], named: str
) -> None:
    with pytest.raises(InputError, match=named):
        gateway.ask("c-1", "Deploy?", ["Deploy", "Hold"], ttl=60, **fields)
    assert gateway.parked("c-1") is None


def test_an_escalation_by_another_process_is_seen_by_one_that_parked_the_ask(
    store_location: StoreLocation, clock: ManualClock, make_gateway: Any
) -> None:
    parking, delivering = make_gateway(store_location, clock=clock), make_gateway(store_location, clock=clock)
    fields: dict[str, Any] = {"responders": ["U_ALICE"], "escalate_after": 1, "escalate_to": ["U_CAROL"]}
    parking.ask("c-1", "Deploy?", ["Deploy", "Hold"], ttl=60, **fields)
    assert parking.handle("c-1", "1", sender="U_CAROL").kind is ReplyKind.NOT_YOURS
    clock.advance(timedelta(seconds=1))
    assert delivering.read_due() == 1  # the other gateway's deliverer escalates it
    assert parking.handle("c-1", "1", sender="U_CAROL").kind is ReplyKind.SELECTED


def test_a_workflow_phase_carries_its_own_schedule(store: Any, clock: ManualClock) -> None:
    flow = Workflow(
        "release",
        phases=[
            Phase("approve", "Approve 1.4.2?", ("Approve", "Reject"), escalate_after=2, escalate_to=("U_CAROL",)),
            Phase("notes", "Release notes?", remind_after=(1, 3)),
        ],
        finish=lambda answers: "ok",
    )
    gateway = Gateway(store=store, clock=clock, workflows=[flow], ttl=60)
    started = gateway.start("c-1", "release", responders=["U_ALICE"])
    clock.advance(timedelta(seconds=2))
    assert gateway.read_due() == 1
    assert gateway.get(started.ask_id or "").responders == ("U_ALICE", "U_CAROL")
    notes = gateway.handle("c-1", "1", sender="U_CAROL").next_ask
    assert notes is not None and notes.ask_id is not None
    clock.advance(timedelta(seconds=1))
    assert gateway.read_due() == 1
    assert gateway.get(notes.ask_id).reminders_sent == 1


def test_a_phase_schedule_that_cannot_be_used_is_refused_when_registered(gateway: Gateway) -> None:
    flow = Workflow("bad", phases=[Phase("only", "Ok?", ("Yes",), remind_after=(1, 1))], finish=lambda a: "")
    with pytest.raises(InputError, match="remind_after"):
        gateway.register(flow)
