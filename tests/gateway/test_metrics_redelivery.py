"""A redelivered message changes nothing, the metrics included; copies that race run
on both engines, whose locking decides which one applies."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest

from parkgate import Gateway, ReplyKind


def replies(gateway: Gateway, kind: ReplyKind) -> float:
    labels = {"kind": kind.value, "surface": gateway.metrics.surface}
    return gateway.metrics.registry.get_sample_value("parkgate_replies_total", labels) or 0.0


def closed(gateway: Gateway, outcome: str) -> float:
    labels = {"outcome": outcome, "surface": gateway.metrics.surface}
    return gateway.metrics.registry.get_sample_value("parkgate_asks_closed_total", labels) or 0.0


def test_a_redelivered_message_is_counted_once(gateway: Gateway) -> None:
    gateway.ask("c", "Deploy?", ["Yes", "No"])
    for _ in range(3):
        assert gateway.handle("c", "what?", message_id="m1").kind is ReplyKind.RETRY
    for _ in range(3):
        assert gateway.handle("c", "2", message_id="m2").kind is ReplyKind.SELECTED
    assert replies(gateway, ReplyKind.RETRY) == 1
    assert replies(gateway, ReplyKind.SELECTED) == 1
    assert closed(gateway, "selected") == 1


@pytest.mark.engines("copies race on several pooled connections: the engine's locking applies one")
def test_concurrent_copies_of_one_message_are_counted_once(gateway: Gateway) -> None:
    gateway.ask("c", "Deploy?", ["Yes", "No"])
    with ThreadPoolExecutor(max_workers=4) as pool:
        kinds = list(pool.map(lambda _: gateway.handle("c", "1", message_id="m").kind, range(8)))
    assert kinds == [ReplyKind.SELECTED] * 8
    assert replies(gateway, ReplyKind.SELECTED) == 1
    assert closed(gateway, "selected") == 1


def test_a_redelivered_pass_is_counted_once(gateway: Gateway) -> None:
    for _ in range(2):
        assert gateway.handle("nobody", "hello", message_id="m").kind is ReplyKind.PASS
    assert replies(gateway, ReplyKind.PASS) == 1
