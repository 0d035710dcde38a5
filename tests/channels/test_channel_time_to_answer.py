"""``/metrics``' time-to-answer histogram by channel: an answer to an ask posted on a
channel is observed under that channel's name, an answer to an ask posted nowhere under
``none``, from parking to the answer; a cancel is no answer and observes nothing."""

from __future__ import annotations

import re
from datetime import timedelta

from recording_channel import RecordingChannel

from parkgate import Gateway, ManualClock
from parkgate.channels import ChannelTarget
from parkgate.channels.deliver import ChannelDeliverer


def histogram(gateway: Gateway, part: str, channel: str, **labels: str) -> float:
    """One sample of ``parkgate_time_to_answer_seconds`` as the exposition writes it."""
    text = gateway.metrics.exposition().decode()
    extra = "".join(f',{name}="{value}"' for name, value in labels.items())
    name = f'parkgate_time_to_answer_seconds_{part}{{channel="{channel}"{extra},surface="library"}}'
    found = re.search(rf"^{re.escape(name)} (\S+)$", text, re.MULTILINE)
    return float(found.group(1)) if found else 0.0


def test_an_answer_is_timed_under_the_channel_its_ask_was_posted_to(gateway: Gateway, clock: ManualClock) -> None:
    gateway.add_channel(RecordingChannel())
    posted = ChannelTarget("recorder", {"room": "r1"})
    gateway.ask("c-posted", "Deploy 1.4.2?", ["Deploy", "Hold"], post_to=posted)
    gateway.ask("c-plain", "Rotate the keys?", ["Yes", "No"])
    gateway.ask("c-cancelled", "Scale up?", ["Yes", "No"], post_to=ChannelTarget("recorder", {"room": "r2"}))
    ChannelDeliverer(gateway.store, gateway.clock, gateway.channels, draw=lambda: 0.0).run_due()
    clock.advance(timedelta(seconds=100))
    gateway.handle("c-posted", "Deploy")
    clock.advance(timedelta(seconds=900))
    gateway.handle("c-plain", "1")
    gateway.handle("c-cancelled", "/cancel")

    assert histogram(gateway, "count", "recorder") == 1
    assert histogram(gateway, "sum", "recorder") == 100
    assert histogram(gateway, "bucket", "recorder", le="120.0") == 1
    assert histogram(gateway, "count", "none") == 1
    assert histogram(gateway, "sum", "none") == 1000  # asked_at to the answer's moment
    assert histogram(gateway, "bucket", "none", le="900.0") == 0
