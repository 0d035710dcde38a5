"""The event log on both engines: every state change of an ask is an event written with
it, numbered per ask, in order, with its sender; what people typed is kept only when it
answered or voted; the log is read per ask, followed by id, and pruned without touching
an open ask's events. Time is the manual clock's."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta
from typing import Any

from parkgate import EventKind, Gateway, ManualClock, ReplyKind
from parkgate.core import events as event_log
from parkgate.core.kinds import AskStatus

T0 = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
StoreLocation = Any


def timeline(gateway: Gateway, ask_id: str) -> list[tuple[str, str | None]]:
    return [(event.type.value, event.sender) for event in gateway.events(ask_id)]


def test_a_voted_escalated_ask_has_exactly_its_events_in_order_with_their_senders(
    gateway: Gateway, clock: ManualClock
) -> None:
    parked = gateway.ask(
        "c-1",
        "Ship 1.4.3?",
        ["Ship", "Hold"],
        responders=["alice", "bob"],
        quorum=2,
        ttl=600,
        remind_after=60,
        escalate_after=120,
        escalate_to=["carol"],
    )
    ask_id = parked.ask_id or ""
    assert gateway.handle("c-1", "ship it?", sender="alice").kind is ReplyKind.RETRY
    assert gateway.handle("c-1", "maybe", sender="bob").kind is ReplyKind.RETRY
    # The misses moved the schedule: the reminder falls due 60 s after the last touch.
    clock.advance(timedelta(seconds=60))
    assert gateway.read_due() == 1
    clock.advance(timedelta(seconds=60))
    assert gateway.read_due() == 1
    assert gateway.handle("c-1", "1", sender="alice").kind is ReplyKind.VOTED
    assert gateway.handle("c-1", "1", sender="carol").kind is ReplyKind.SELECTED

    assert timeline(gateway, ask_id) == [
        ("parked", None),
        ("touched", "alice"),
        ("touched", "bob"),
        ("reminded", None),
        ("escalated", None),
        ("voted", "alice"),
        ("voted", "carol"),
        ("closed", "carol"),
    ]
    events = gateway.events(ask_id)
    assert [event.seq for event in events] == list(range(1, 9))
    assert all(earlier.at <= later.at for earlier, later in itertools.pairwise(events))
    parked_event, miss, _, reminded, escalated, first_vote, second_vote, closed = events
    assert parked_event.data["responders"] == ["alice", "bob"] and parked_event.data["quorum"] == 2
    assert parked_event.data["ttl_seconds"] == 600
    assert miss.data == {"kind": "retry"}  # a miss records its kind, never its text
    assert reminded.data == {"number": 1, "to": ["alice", "bob"]}
    assert escalated.data == {"to": ["carol"]}
    assert (first_vote.data["answer"], first_vote.data["votes"], first_vote.data["quorum"]) == ("Ship", 1, 2)
    assert (second_vote.data["answer"], second_vote.data["votes"]) == ("Ship", 2)
    assert closed.data["status"] == "answered" and closed.data["closed_by"] == "carol"


def test_a_refusal_is_logged_without_its_text_and_changes_nothing(gateway: Gateway) -> None:
    parked = gateway.ask("c-1", "Deploy?", ["Deploy", "Hold"], responders=["alice"])
    assert gateway.handle("c-1", "my password is hunter2", sender="mallory").kind is ReplyKind.NOT_YOURS
    ask = gateway.get(parked.ask_id or "")
    assert ask.mismatches == 0 and ask.last_touched == parked_at(gateway, ask.id)
    refused = gateway.events(ask.id)[-1]
    assert (refused.type, refused.sender, refused.data) == (EventKind.REFUSED, "mallory", {"kind": "not_yours"})
    assert "hunter2" not in str([event.to_json() for event in gateway.events(ask.id)])


def parked_at(gateway: Gateway, ask_id: str) -> datetime:
    return gateway.events(ask_id)[0].at


def test_an_answer_keeps_its_text_and_a_cancel_its_closer(gateway: Gateway) -> None:
    first = gateway.ask("c-1", "Name the release", kind="text")
    assert gateway.handle("c-1", "Orca", sender="dana").kind is ReplyKind.ANSWERED
    touched, closed = gateway.events(first.ask_id or "")[1:]
    assert touched.data["text"] == "Orca" and touched.data["kind"] == "answered"
    assert closed.data["status"] == "answered" and closed.sender == "dana"
    second = gateway.ask("c-1", "Deploy?", ["Deploy", "Hold"])
    assert gateway.handle("c-1", "/cancel", sender="erin").kind is ReplyKind.CANCELLED
    assert timeline(gateway, second.ask_id or "")[-2:] == [("touched", "erin"), ("closed", "erin")]
    third = gateway.ask("c-1", "Again?", ["Yes", "No"])
    gateway.cancel(third.ask_id or "")
    assert timeline(gateway, third.ask_id or "")[-1] == ("closed", "operator")


def test_an_expiry_found_by_a_read_is_one_closed_event(gateway: Gateway, clock: ManualClock) -> None:
    parked = gateway.ask("c-1", "Deploy?", ["Deploy", "Hold"], ttl=60)
    clock.advance(timedelta(seconds=90))
    assert gateway.events(parked.ask_id or "")[-1].data["status"] == "expired"  # the timeline's read closed it
    assert gateway.get(parked.ask_id or "").status is AskStatus.EXPIRED
    assert timeline(gateway, parked.ask_id or "") == [("parked", None), ("closed", None)]


def test_a_late_answer_is_logged_and_leaves_the_ask_as_it_closed(gateway: Gateway, clock: ManualClock) -> None:
    parked = gateway.ask("c-1", "Deploy?", ["Deploy", "Hold"], ttl=60)
    clock.advance(timedelta(seconds=61))
    ask = gateway.record_late(parked.ask_id or "", "alice", "slack", "Deploy")
    assert ask.status is AskStatus.EXPIRED
    closed, late = gateway.events(ask.id)[-2:]
    assert (closed.type, late.type, late.sender) == (EventKind.CLOSED, EventKind.LATE, "alice")
    assert late.data["surface"] == "slack" and late.data["status"] == "expired"
    assert gateway.get(ask.id).status is AskStatus.EXPIRED


def test_the_log_is_followed_by_id_and_pruned_around_open_asks(gateway: Gateway, clock: ManualClock) -> None:
    old = gateway.ask("c-1", "Old?", ["Yes", "No"])
    gateway.handle("c-1", "1")
    still_open = gateway.ask("c-2", "Open?", ["Yes", "No"])
    first = gateway.events_after(0, 100)
    assert [(event.ask_id, event.type.value) for event in first] == [
        (old.ask_id, "parked"),
        (old.ask_id, "touched"),
        (old.ask_id, "closed"),
        (still_open.ask_id, "parked"),
    ]
    assert [event.id for event in first] == sorted(event.id for event in first)
    assert gateway.events_after(first[1].id, 100) == first[2:]
    assert gateway.last_event_id() == first[-1].id
    clock.advance(timedelta(days=91))
    assert gateway.prune_events(timedelta(days=90)) == 3  # the open ask's parked event stays
    assert gateway.events(old.ask_id or "") == []
    assert timeline(gateway, still_open.ask_id or "")[0] == ("parked", None)


def test_an_operators_cancel_keeps_its_reason_with_the_close(gateway: Gateway) -> None:
    parked = gateway.ask("c-1", "Deploy?", ["Deploy", "Hold"])
    gateway.cancel(parked.ask_id or "", outcome="abandoned", reason="  the release was pulled  ")
    closed = gateway.events(parked.ask_id or "")[-1]
    assert (closed.sender, closed.data["outcome"], closed.data["reason"]) == (
        "operator",
        "abandoned",
        "the release was pulled",
    )


def test_events_recorded_outside_a_change_are_numbered_after_their_asks_and_owned_as_they_are(
    gateway: Gateway, clock: ManualClock
) -> None:
    first = gateway.ask("c1", "Deploy?", ["Deploy", "Hold"], owner="team-a").ask_id or ""
    second = gateway.ask("c2", "Ship?", ["Ship"]).ask_id or ""
    now = clock.now()
    posts = [event_log.posted(first, now, "slack", job, "ok") for job in ("post", "reply", "closed")]
    with gateway.store.transaction() as tx:  # a deliverer's batch: several asks, several events of one
        tx.events.record([posts[0], event_log.posted(second, now, "slack", "post", "retrying"), *posts[1:]])
    logged = gateway.events(first)
    assert [(event.seq, event.type, event.data["job"]) for event in logged[1:]] == [
        (2, EventKind.POSTED, "post"),
        (3, EventKind.POSTED, "reply"),
        (4, EventKind.POSTED, "closed"),
    ]
    assert {event.owner for event in logged} == {"team-a"}  # the ask's, read with its row
    (_parked, retried) = gateway.events(second)
    assert (retried.seq, retried.owner, retried.data["result"]) == (2, None, "retrying")


def test_pruning_every_closed_event_keeps_the_newest_so_ids_count_on(gateway: Gateway, clock: ManualClock) -> None:
    done = gateway.ask("c-1", "Old?", ["Yes", "No"])
    gateway.handle("c-1", "1")
    last = gateway.last_event_id()
    clock.advance(timedelta(days=91))
    assert gateway.prune_events(timedelta(days=90)) == 2  # parked and touched; the close stays
    assert [event.type for event in gateway.events(done.ask_id or "")] == [EventKind.CLOSED]
    later = gateway.ask("c-2", "New?", ["Yes", "No"])
    assert gateway.events(later.ask_id or "")[0].id > last  # a follower's Last-Event-ID still holds
