"""The channel interface on both stores: a park's post, every close's update and a
message's reply are queued in the commit of their event and run by the deliverer's
channel pass, retried with backoff, kept across a restart and visible when given up."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from recording_channel import RecordingChannel

from parkgate import Gateway, ManualClock, ReplyKind
from parkgate.channels import ChannelTarget
from parkgate.channels.deliver import ChannelDeliverer
from parkgate.core.events import EventKind
from parkgate.delivery.outbox import MAX_ATTEMPTS

StoreLocation = Any
Reopen = Any


def deliver(gateway: Gateway) -> int:
    """One channel pass on ``gateway``'s channels, as the deliverer runs it (no jitter)."""
    return ChannelDeliverer(gateway.store, gateway.clock, gateway.channels, draw=lambda: 0.0).run_due()


def posts(gateway: Gateway, ask_id: str) -> list[tuple[str, str, str]]:
    """The ask's ``posted`` events: each job's channel, name and result, in order."""
    logged = [event.data for event in gateway.events(ask_id) if event.type is EventKind.POSTED]
    return [(data["channel"], data["job"], data["result"]) for data in logged]


def posted_ask(gateway: Gateway, channel: RecordingChannel, **fields: Any) -> str:
    gateway.add_channel(channel)
    target = ChannelTarget(channel.name, {"room": "r1"})
    reply = gateway.ask("c1", "Deploy?", ["Deploy", "Hold"], post_to=target, **fields)
    assert reply.ask_id is not None
    return reply.ask_id


def test_a_posted_ask_is_posted_routed_by_its_thread_and_updated_when_answered(gateway: Gateway) -> None:
    channel = RecordingChannel()
    ask_id = posted_ask(gateway, channel)
    assert deliver(gateway) == 1
    assert channel.calls == [("post", ask_id, {"room": "r1"})]
    post = gateway.channel_post(ask_id)
    assert post is not None and post.location is not None and '"room": "r1"' in post.location
    assert gateway.ask_in_thread("recorder", f"r1/{ask_id}") == (ask_id, "c1")
    reply = gateway.handle_in_channel("c1", "2", "e1", "U_ALICE", ask_id=ask_id)
    assert reply.kind is ReplyKind.SELECTED
    assert deliver(gateway) == 1
    assert channel.calls[-1] == ("closed", ask_id, "answered", "Hold", "U_ALICE")
    assert deliver(gateway) == 0


def test_a_miss_is_replied_in_the_thread_once_however_often_it_is_redelivered(gateway: Gateway) -> None:
    channel = RecordingChannel()
    ask_id = posted_ask(gateway, channel, responders=["U_ALICE"])
    deliver(gateway)
    assert gateway.handle_in_channel("c1", "maybe", "e1", "U_ALICE").kind is ReplyKind.RETRY
    assert gateway.handle_in_channel("c1", "maybe", "e1", "U_ALICE").kind is ReplyKind.RETRY  # a retry of e1
    assert gateway.handle_in_channel("c1", "1", "e2", "U_MALLORY").kind is ReplyKind.NOT_YOURS
    deliver(gateway)
    assert channel.calls[1:] == [
        ("reply", ask_id, "retry", "U_ALICE", f"m-{ask_id[:6]}"),
        ("reply", ask_id, "not_yours", "U_MALLORY", f"m-{ask_id[:6]}"),
    ]
    assert gateway.get(ask_id).is_open
    assert posts(gateway, ask_id) == [
        ("recorder", "post", "ok"),
        ("recorder", "reply", "ok"),
        ("recorder", "reply", "ok"),
    ]


def test_a_click_on_an_older_ask_leaves_the_open_one_alone(gateway: Gateway) -> None:
    channel = RecordingChannel()
    first = posted_ask(gateway, channel)
    second = gateway.ask("c1", "Again?", ["Yes", "No"], replace=True, post_to=ChannelTarget("recorder", {"room": "r1"}))
    reply = gateway.handle_in_channel("c1", "1", "e1", "U_ALICE", ask_id=first)
    # Late for the replaced ask (told how and when it closed, logged so); the open one stands.
    assert (reply.kind, reply.ask_id, reply.parked) == (ReplyKind.LATE, first, True)
    assert reply.text.startswith("This question is already closed (replaced by a newer question at ")
    late = gateway.events(first)[-1]
    assert (late.type, late.sender, late.data["surface"], late.data["text"]) == (
        "late",
        "U_ALICE",
        "recorder",
        "Deploy",
    )
    assert second.ask_id is not None and gateway.get(second.ask_id).is_open
    assert gateway.handle_in_channel("c1", "1", "e1", "U_ALICE", ask_id=first) == reply  # a redelivery: the same
    assert [event.type for event in gateway.events(first)].count("late") == 1  # and logged once
    deliver(gateway)
    # The first ask was posted, then updated as replaced; the second was posted.
    assert [call[:3] for call in channel.calls if call[1] == first] == [
        ("post", first, {"room": "r1"}),
        ("closed", first, "cancelled"),
    ]
    assert [call[:3] for call in channel.calls if call[1] == second.ask_id] == [("post", second.ask_id, {"room": "r1"})]


def test_an_operator_cancel_and_an_expiry_by_the_due_read_update_the_post(gateway: Gateway, clock: ManualClock) -> None:
    channel = RecordingChannel()
    cancelled = posted_ask(gateway, channel)
    gateway.cancel(cancelled)
    expiring = gateway.ask("c2", "Ship?", ["Ship"], ttl=60, post_to=ChannelTarget("recorder", {"room": "r2"}))
    assert expiring.ask_id is not None
    clock.advance(timedelta(seconds=61))
    assert gateway.read_due(10) == 1  # nobody reads it: the due read closes it
    deliver(gateway)
    closes = [call for call in channel.calls if call[0] == "closed"]
    assert closes == [
        ("closed", cancelled, "cancelled", None, "operator"),
        ("closed", expiring.ask_id, "expired", None, None),
    ]


def test_an_ask_never_posted_queues_nothing(gateway: Gateway, store_location: StoreLocation) -> None:
    gateway.add_channel(RecordingChannel())
    reply = gateway.ask("c1", "Deploy?", ["Deploy", "Hold"])
    gateway.handle_in_channel("c1", "nope", "e1", "U1")
    gateway.handle("c1", "1")
    assert reply.ask_id is not None and not gateway.get(reply.ask_id).is_open
    assert store_location.raw_query("SELECT count(*) FROM channel_outbox") == [(0,)]


def test_a_failing_platform_is_retried_with_backoff_then_given_up_visibly(gateway: Gateway, clock: ManualClock) -> None:
    channel = RecordingChannel(failures=1)
    ask_id = posted_ask(gateway, channel)
    gateway.handle_in_channel("c1", "1", "e1", "U1", ask_id=ask_id)
    assert deliver(gateway) == 1  # the post failed; the close waits behind it
    assert channel.calls == []
    assert posts(gateway, ask_id) == [("recorder", "post", "retrying")]
    clock.advance(timedelta(seconds=1))
    assert deliver(gateway) == 2
    assert [call[0] for call in channel.calls] == ["post", "closed"]
    assert posts(gateway, ask_id)[1:] == [("recorder", "post", "ok"), ("recorder", "closed", "ok")]
    channel.failures = MAX_ATTEMPTS
    other = gateway.ask("c2", "Ship?", ["Ship"], post_to=ChannelTarget("recorder", {"room": "r2"}))
    for _ in range(MAX_ATTEMPTS):
        clock.advance(timedelta(minutes=10))
        deliver(gateway)
    failed = gateway.failed_channel_jobs()
    assert [(job.ask_id, job.job, job.attempts) for job, _ in failed] == [(other.ask_id, "post", MAX_ATTEMPTS)]
    assert "the platform is away" in (failed[0][1] or "")
    assert other.ask_id is not None
    attempts = posts(gateway, other.ask_id)
    assert attempts == [("recorder", "post", "retrying")] * (MAX_ATTEMPTS - 1) + [("recorder", "post", "failed")]


def test_jobs_queued_before_a_restart_run_after_it(gateway: Gateway, reopen: Reopen) -> None:
    ask_id = posted_ask(gateway, RecordingChannel())
    gateway.handle_in_channel("c1", "1", "e1", "U1", ask_id=ask_id)
    gateway.close()
    again = reopen()
    channel = RecordingChannel()
    again.add_channel(channel)
    assert deliver(again) == 2
    assert [call[0] for call in channel.calls] == ["post", "closed"]
    again.close()


def test_a_target_that_is_not_a_json_object_is_refused_before_anything_is_written(gateway: Gateway) -> None:
    from parkgate.errors import InputError

    with pytest.raises(InputError, match="post_to"):
        gateway.ask("c1", "Deploy?", ["Deploy"], post_to=ChannelTarget("recorder", ["room"]))  # type: ignore[arg-type]
    assert gateway.open_asks() == []


def test_a_quorum_posts_each_vote_and_updates_the_post_once_it_is_reached(gateway: Gateway) -> None:
    channel = RecordingChannel()
    ask_id = posted_ask(gateway, channel, responders=["U_ALICE", "U_BOB"], quorum=2)
    assert gateway.handle_in_channel("c1", "1", "e1", "U_ALICE", ask_id=ask_id).kind is ReplyKind.VOTED
    assert gateway.handle_in_channel("c1", "1", "e2", "U_BOB", ask_id=ask_id).kind is ReplyKind.SELECTED
    deliver(gateway)
    # The close update goes first: it waits for the post, never for replies.
    assert [call[:3] for call in channel.calls[1:]] == [("closed", ask_id, "answered"), ("reply", ask_id, "voted")]
