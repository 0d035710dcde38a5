"""A posted ask's reminders and escalation reach its thread: the due read that fires them
queues one line each in the same commit, naming whom the ask waits on, how long it has
waited and when it expires; nothing is posted for an ask that closed first."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta
from typing import Any

from recording_channel import RecordingChannel

from parkgate import Gateway, ManualClock, ReplyKind
from parkgate.channels import ChannelTarget
from parkgate.channels.base import ChannelReply
from parkgate.channels.deliver import ChannelDeliverer
from parkgate.core.model import Ask


class TextRecordingChannel(RecordingChannel):
    """The recording channel, keeping each thread line's text too."""

    def __init__(self) -> None:
        super().__init__()
        self.lines: list[tuple[str, str]] = []

    def reply(self, ask: Ask, location: Mapping[str, Any], reply: ChannelReply) -> None:
        super().reply(ask, location, reply)
        self.lines.append((reply.kind.value, reply.shown(lambda user: f"@{user}")))  # named its way


def deliver(gateway: Gateway) -> int:
    return ChannelDeliverer(gateway.store, gateway.clock, gateway.channels, draw=lambda: 0.0).run_due()


def posted(gateway: Gateway, channel: RecordingChannel, **fields: Any) -> str:
    gateway.add_channel(channel)
    reply = gateway.ask(
        "c1", "Deploy 1.4.2?", ["Deploy", "Hold"], post_to=ChannelTarget("recorder", {"room": "r1"}), **fields
    )
    assert reply.ask_id is not None
    deliver(gateway)
    return reply.ask_id


def test_a_reminder_and_an_escalation_are_posted_in_the_thread(gateway: Gateway, clock: ManualClock) -> None:
    channel = TextRecordingChannel()
    ask_id = posted(
        gateway,
        channel,
        ttl=3600,
        responders=["U_ALICE"],
        remind_after=600,
        escalate_after=1200,
        escalate_to=["U_CAROL"],
    )
    clock.advance(timedelta(seconds=601))
    assert gateway.read_due(10) == 1
    deliver(gateway)
    assert channel.lines == [
        ("ask.reminder", "Still waiting on @U_ALICE: Deploy 1.4.2? (asked 10 min ago; it expires in 50 min).")
    ]
    clock.advance(timedelta(seconds=600))
    assert gateway.read_due(10) == 1
    deliver(gateway)
    assert channel.lines[-1] == (
        "ask.escalated",
        "Now also asking @U_CAROL: Deploy 1.4.2? (asked 20 min ago; it expires in 40 min).",
    )
    assert gateway.handle_in_channel("c1", "1", "e1", "U_CAROL", ask_id=ask_id).kind is ReplyKind.SELECTED


def test_nothing_is_posted_for_an_ask_that_closed_before_its_reminder(gateway: Gateway, clock: ManualClock) -> None:
    channel = TextRecordingChannel()
    ask_id = posted(gateway, channel, ttl=3600, remind_after=600)
    gateway.handle_in_channel("c1", "2", "e1", "U_BOB", ask_id=ask_id)
    clock.advance(timedelta(seconds=601))
    assert gateway.read_due(10) == 0
    deliver(gateway)
    assert channel.lines == []
    assert [call[0] for call in channel.calls] == ["post", "closed"]


def test_an_ask_without_responders_waits_on_anyone(gateway: Gateway, clock: ManualClock) -> None:
    channel = TextRecordingChannel()
    posted(gateway, channel, ttl=7200, remind_after=[1800, 3600])
    clock.advance(timedelta(seconds=1801))
    gateway.read_due(10)
    deliver(gateway)
    assert channel.lines == [
        ("ask.reminder", "Still waiting on anyone here: Deploy 1.4.2? (asked 30 min ago; it expires in 90 min).")
    ]
