"""Nothing about a parked ask is only visible in a debugger: counters, histogram, gauge, log."""

from __future__ import annotations

import json
import logging
from datetime import timedelta
from pathlib import Path

import pytest

from parkgate import Gateway, ManualClock, ReplyKind


@pytest.fixture
def gateway(tmp_path: Path) -> Gateway:
    return Gateway(f"sqlite:///{tmp_path / 'obs.db'}", clock=ManualClock(), surface="test")


def sample(gateway: Gateway, name: str, **labels: str) -> float:
    value = gateway.metrics.registry.get_sample_value(name, labels)
    return 0.0 if value is None else value


def test_every_reply_kind_is_counted_by_surface(gateway: Gateway) -> None:
    gateway.ask("c", "Deploy?", ["Yes", "No"])
    for text in ["what", "menu", "x", "y", "1"]:
        gateway.handle("c", text)
    gateway.ask("c", "Why?")
    gateway.handle("c", "because")
    again = gateway.ask("c", "Again?", ["A"])
    gateway.handle("c", "/cancel")
    gateway.handle("c", "1", ask_id=again.ask_id)  # an answer naming the ask once it closed
    gateway.handle("nobody", "hello")
    gateway.ask_from_text("d", "Done: the diagram is saved.")  # a skill's output without a stopping point
    gateway.ask("e", "Deploy?", ["Yes", "No"], responders=["U_A", "U_B"], quorum=2)
    gateway.handle("e", "1", sender="U_Z")
    gateway.handle("e", "1", sender="U_A")
    counts = {kind: sample(gateway, "parkgate_replies_total", kind=kind.value, surface="test") for kind in ReplyKind}
    assert counts == {
        ReplyKind.ASKED: 4,
        ReplyKind.RETRY: 2,
        ReplyKind.RESHOWN: 1,
        ReplyKind.ESCALATED: 1,
        ReplyKind.SELECTED: 1,
        ReplyKind.ANSWERED: 1,
        ReplyKind.CANCELLED: 1,
        ReplyKind.PASS: 2,
        ReplyKind.NOT_YOURS: 1,
        ReplyKind.VOTED: 1,
        ReplyKind.LATE: 1,
    }
    assert sample(gateway, "parkgate_asks_closed_total", outcome="cancelled", surface="test") == 1


def test_time_to_answer_is_observed_and_open_asks_are_gauged(gateway: Gateway) -> None:
    clock = gateway.clock
    assert isinstance(clock, ManualClock)
    gateway.ask("a", "Deploy?", ["Yes", "No"])
    gateway.ask("b", "Deploy?", ["Yes", "No"])
    assert sample(gateway, "parkgate_open_asks") == 2
    clock.advance(timedelta(seconds=40))
    gateway.handle("a", "yes")
    assert sample(gateway, "parkgate_open_asks") == 1
    assert sample(gateway, "parkgate_time_to_answer_seconds_count", channel="none", surface="test") == 1
    assert sample(gateway, "parkgate_time_to_answer_seconds_sum", channel="none", surface="test") == pytest.approx(40)
    assert sample(gateway, "parkgate_time_to_answer_seconds_bucket", channel="none", surface="test", le="60.0") == 1
    assert sample(gateway, "parkgate_time_to_answer_seconds_bucket", channel="none", surface="test", le="30.0") == 0


def test_a_clock_stepped_backwards_never_records_a_negative_time_to_answer(gateway: Gateway) -> None:
    clock = gateway.clock
    assert isinstance(clock, ManualClock)
    gateway.ask("a", "Deploy?", ["Yes", "No"])
    clock.set(clock.now() - timedelta(minutes=5))  # an NTP step back between ask and answer
    reply = gateway.handle("a", "yes")
    assert reply.kind is ReplyKind.SELECTED
    assert sample(gateway, "parkgate_time_to_answer_seconds_count", channel="none", surface="test") == 1
    assert sample(gateway, "parkgate_time_to_answer_seconds_sum", channel="none", surface="test") == 0


def test_an_expiry_is_counted_and_logs_one_structured_line_with_the_idle_minutes(
    gateway: Gateway, caplog: pytest.LogCaptureFixture
) -> None:
    clock = gateway.clock
    assert isinstance(clock, ManualClock)
    asked = gateway.ask("c", "Deploy?", ["Yes", "No"])
    clock.advance(timedelta(hours=6, minutes=30))
    with caplog.at_level(logging.INFO, logger="parkgate"):
        reply = gateway.handle("c", "1")
        gateway.handle("c", "1")  # nothing left to expire: no second line
    assert reply.kind is ReplyKind.PASS and reply.expired_ask_id == asked.ask_id
    lines = [json.loads(r.getMessage()) for r in caplog.records if r.name == "parkgate"]
    assert len(lines) == 1
    assert lines[0]["event"] == "ask_expired"
    assert lines[0]["ask_id"] == asked.ask_id
    assert lines[0]["idle_minutes"] == pytest.approx(390)
    assert sample(gateway, "parkgate_asks_closed_total", outcome="expired", surface="test") == 1
