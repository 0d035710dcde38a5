"""A workflow on a channel, on both stores: a run started with a channel target posts its
first phase there, and every later phase where (and in the thread where) the phase
before it was posted, read from that post alone."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from recording_channel import RecordingChannel
from slack_stand_in import BOT_TOKEN, SlackWebApi

from parkgate import Gateway, ManualClock, ReplyKind
from parkgate.channels import ChannelTarget
from parkgate.channels.deliver import ChannelDeliverer
from parkgate.channels.slack import SlackChannel
from parkgate.channels.slack.serving import web_client
from parkgate.channels.threads import next_target
from parkgate.store.channel_tables import ChannelPost


def deliver(gateway: Gateway) -> int:
    """One channel pass on ``gateway``'s channels, as the deliverer runs it (no jitter)."""
    return ChannelDeliverer(gateway.store, gateway.clock, gateway.channels, draw=lambda: 0.0).run_due()


@pytest.fixture
def slack_api() -> Iterator[SlackWebApi]:
    api = SlackWebApi().start()
    yield api
    api.stop()


def test_each_phase_of_a_run_started_on_a_channel_is_posted_there(gateway: Gateway) -> None:
    channel = RecordingChannel()
    gateway.add_channel(channel)
    first = gateway.start("c1", "uml", post_to=ChannelTarget("recorder", {"room": "r1"}))
    assert first.ask_id is not None
    deliver(gateway)
    assert channel.calls == [("post", first.ask_id, {"room": "r1"})]
    following = gateway.handle_in_channel("c1", "1", "e1", "U_ALICE", ask_id=first.ask_id)
    assert following.kind is ReplyKind.SELECTED and following.parked
    second = gateway.parked("c1")
    assert second is not None and second.phase == "describe" and second.watched
    deliver(gateway)
    assert ("post", second.id, {"room": "r1"}) in channel.calls
    assert ("closed", first.ask_id, "answered", "Sequence", "U_ALICE") in channel.calls
    # The next phase's thread is its own: a reply there goes to it.
    assert gateway.ask_in_thread("recorder", f"r1/{second.id}") == (second.id, "c1")
    done = gateway.handle_in_channel("c1", "Alice logs in", "e2", "U_ALICE", ask_id=second.id)
    assert done.kind is ReplyKind.ANSWERED and not done.parked
    deliver(gateway)
    assert [call[0] for call in channel.calls].count("post") == 2  # a finished run posts nothing more


def test_a_run_started_without_a_channel_posts_no_phase(gateway: Gateway) -> None:
    channel = RecordingChannel()
    gateway.add_channel(channel)
    first = gateway.start("c1", "uml")
    assert first.ask_id is not None
    gateway.handle("c1", "1", "e1")
    assert deliver(gateway) == 0 and channel.calls == []
    second = gateway.parked("c1")
    assert second is not None and gateway.channel_post(second.id) is None and not second.watched


def test_on_slack_the_next_phase_is_posted_in_the_first_phases_thread(
    gateway: Gateway, clock: ManualClock, slack_api: SlackWebApi
) -> None:
    gateway.add_channel(SlackChannel(web_client(BOT_TOKEN, slack_api.url)))
    first = gateway.start("c1", "uml", post_to=ChannelTarget("slack", {"channel": "C1"}))
    assert first.ask_id is not None
    deliver(gateway)
    (started,) = slack_api.of("chat.postMessage")
    assert started.args["channel"] == "C1" and not started.args.get("thread_ts")
    first_post = gateway.channel_post(first.ask_id)
    assert first_post is not None and first_post.location is not None
    thread = json.loads(first_post.location)["ts"]
    clock.advance(30)  # the answer comes later than the question
    gateway.handle_in_channel("c1", "2", "e1", "UALICE", ask_id=first.ask_id)
    deliver(gateway)
    _, in_thread = slack_api.of("chat.postMessage")
    assert in_thread.args["channel"] == "C1" and in_thread.args["thread_ts"] == thread
    assert "Describe the Class diagram" in in_thread.args["text"]
    (update,) = slack_api.of("chat.update")
    assert update.args["ts"] == thread and update.args["text"] == "Answered: Class, by <@UALICE>"
    second = gateway.parked("c1")
    assert second is not None
    assert gateway.ask_in_thread("slack", f"C1:{thread}") == (second.id, "c1")  # the thread's replies go on to it


def post(channel: str, target: dict[str, Any], location: dict[str, Any] | None) -> ChannelPost:
    return ChannelPost("a1", channel, json.dumps(target), None if location is None else json.dumps(location), None)


def test_the_next_target_keeps_the_thread_once_the_platform_named_it() -> None:
    assert next_target(None) is None
    started = post("slack", {"channel": "C1"}, {"channel": "C1", "ts": "1.5"})
    assert next_target(started) == ChannelTarget("slack", {"channel": "C1", "thread_ts": "1.5"})
    threaded = post("slack", {"channel": "C1", "thread_ts": "1.1"}, {"channel": "C1", "ts": "1.5", "thread_ts": "1.1"})
    assert next_target(threaded) == ChannelTarget("slack", {"channel": "C1", "thread_ts": "1.1"})
    unposted = post("slack", {"channel": "C1"}, None)  # not posted yet: the same place, a thread of its own
    assert next_target(unposted) == ChannelTarget("slack", {"channel": "C1"})
    topic = post("telegram", {"chat_id": -5, "message_thread_id": 7}, {"chat_id": -5, "message_id": 40})
    assert next_target(topic) == ChannelTarget("telegram", {"chat_id": -5, "message_thread_id": 7})


def test_a_stopping_point_in_a_skills_output_is_posted_on_a_channel(gateway: Gateway) -> None:
    channel = RecordingChannel()
    gateway.add_channel(channel)
    output = "Ready.\n[[ask]]\nShip it?\n1. Ship\n2. Hold\n[[/ask]]"
    asked = gateway.ask_from_text("c1", output, post_to=ChannelTarget("recorder", {"room": "r2"}))
    assert asked.ask_id is not None
    deliver(gateway)
    assert channel.calls == [("post", asked.ask_id, {"room": "r2"})]
