"""Due reads on both stores: an ask something waits on is read when its TTL falls due.

The due read is the ordinary read, made on time: it closes only what a read would close
(an ask past its TTL), exactly as a read closes it. Time is the manual clock's.
"""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from parkgate import Gateway, ManualClock, ReplyKind
from parkgate.core.model import AskStatus

HOOK = "http://hooks.test/h"
#: The manual clock's start (the ``clock`` fixture's).
T0 = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
StoreLocation = MakeGateway = Any


def outbox_rows(location: StoreLocation) -> list[tuple[str, str]]:
    rows = location.raw_query("SELECT ask_id, payload FROM outbox ORDER BY id")
    return [(row[0], json.loads(row[1])["data"]["status"]) for row in rows]


def test_a_due_read_closes_a_waited_on_ask_exactly_as_a_read_would(
    gateway: Gateway, clock: ManualClock, store_location: StoreLocation, caplog: pytest.LogCaptureFixture
) -> None:
    parked = gateway.ask("c-1", "Deploy?", ["Deploy", "Hold"], ttl=60, callback_url=HOOK)
    ask_id = parked.ask_id or ""
    assert gateway.next_due() == T0 + timedelta(seconds=60)
    clock.advance(timedelta(seconds=60))
    assert gateway.read_due() == 0  # at the due instant the ask is not past its TTL yet
    clock.advance(timedelta(microseconds=1))
    with caplog.at_level(logging.INFO, logger="parkgate"):
        assert gateway.read_due() == 1
    ask = gateway.get(ask_id)
    assert ask.status is AskStatus.EXPIRED and ask.outcome == "expired"
    run = gateway.run(parked.run_id or "")
    assert run is not None and (run.status, run.outcome, run.pending_ask_id) == ("complete", "expired", None)
    assert outbox_rows(store_location) == [(ask_id, "expired")]  # its callback, queued once
    expired_lines = [json.loads(r.getMessage()) for r in caplog.records if "ask_expired" in r.getMessage()]
    assert [line["ask_id"] for line in expired_lines] == [ask_id]
    assert gateway.next_due() is None
    assert gateway.read_due() == 0  # nothing more to read: it is closed
    # The person's next message finds nothing parked.
    assert gateway.handle("c-1", "1").kind is ReplyKind.PASS


def test_a_due_read_records_the_default_and_leaves_its_run_running(gateway: Gateway, clock: ManualClock) -> None:
    parked = gateway.ask("c-1", "Deploy?", ["Deploy", "Hold"], ttl=10, default="Hold", callback_url=HOOK)
    clock.advance(timedelta(seconds=11))
    assert gateway.read_due() == 1
    ask = gateway.get(parked.ask_id or "")
    assert (ask.status, ask.answer) == (AskStatus.EXPIRED, "Hold")
    run = gateway.run(parked.run_id or "")
    assert run is not None and (run.status, run.pending_ask_id) == ("running", None)


def test_a_touch_moves_the_due_time_later_and_the_due_read_leaves_the_ask_open(
    gateway: Gateway, clock: ManualClock
) -> None:
    parked = gateway.ask("c-1", "Deploy?", ["Deploy", "Hold"], ttl=60, watched=True)
    clock.advance(timedelta(seconds=45))
    assert gateway.handle("c-1", "what?").kind is ReplyKind.RETRY  # a miss touches the ask
    assert gateway.next_due() == T0 + timedelta(seconds=105)
    clock.advance(timedelta(seconds=30))  # 75 s after parking, 30 s after the touch
    assert gateway.read_due() == 0
    assert gateway.get(parked.ask_id or "").is_open
    clock.advance(timedelta(seconds=31))
    assert gateway.read_due() == 1
    assert gateway.get(parked.ask_id or "").status is AskStatus.EXPIRED


def test_only_asks_something_waits_on_are_read_when_due(gateway: Gateway, clock: ManualClock) -> None:
    plain = gateway.ask("c-plain", "Deploy?", ["Deploy", "Hold"], ttl=10)
    watched = gateway.ask("c-watched", "Ship?", ["Ship", "Wait"], ttl=10, watched=True)
    assert not gateway.get(plain.ask_id or "").watched
    assert gateway.get(watched.ask_id or "").watched
    clock.advance(timedelta(seconds=11))
    assert gateway.read_due() == 1
    # The plain ask is past its TTL but nobody waits on it: the next read of it closes it.
    assert gateway.audit()[0].id == plain.ask_id
    assert gateway.handle("c-plain", "1").expired_ask_id == plain.ask_id


def test_a_due_read_never_closes_an_answered_ask(gateway: Gateway, clock: ManualClock) -> None:
    parked = gateway.ask("c-1", "Deploy?", ["Deploy", "Hold"], ttl=10, callback_url=HOOK)
    assert gateway.handle("c-1", "1").kind is ReplyKind.SELECTED
    clock.advance(timedelta(seconds=11))
    assert gateway.read_due() == 0
    ask = gateway.get(parked.ask_id or "")
    assert (ask.status, ask.answer) == (AskStatus.ANSWERED, "Deploy")


def test_due_reads_are_batched_and_each_ask_is_closed_once(
    gateway: Gateway, clock: ManualClock, store_location: StoreLocation
) -> None:
    for n in range(7):
        gateway.ask(f"c-{n}", "Deploy?", ["Deploy", "Hold"], ttl=10 + n, callback_url=HOOK)
    clock.advance(timedelta(seconds=30))
    assert gateway.read_due(limit=3) == 3  # the earliest three
    assert gateway.read_due(limit=3) == 3
    assert gateway.read_due(limit=3) == 1
    assert gateway.read_due(limit=3) == 0
    statuses = [status for _, status in outbox_rows(store_location)]
    assert statuses == ["expired"] * 7


def test_a_second_gateway_reads_what_the_first_left_due(
    store_location: StoreLocation, make_gateway: MakeGateway, clock: ManualClock
) -> None:
    first = make_gateway(store_location, clock)
    parked = first.ask("c-1", "Deploy?", ["Deploy", "Hold"], ttl=10, callback_url=HOOK)
    first.close()  # the process that parked it is gone before its due time
    clock.advance(timedelta(seconds=20))
    second = make_gateway(store_location, clock)
    assert second.next_due() == T0 + timedelta(seconds=10)
    assert second.read_due() == 1
    assert second.get(parked.ask_id or "").status is AskStatus.EXPIRED


def test_the_gauges_tell_open_overdue_and_unread_due_apart(gateway: Gateway, clock: ManualClock) -> None:
    gateway.ask("c-plain", "Deploy?", ["Deploy", "Hold"], ttl=10)
    gateway.ask("c-watched", "Ship?", ["Ship", "Wait"], ttl=20, callback_url=HOOK)
    gateway.ask("c-later", "Later?", ["Yes", "No"], ttl=3600)
    figures = gateway.gauges()
    assert (figures.open, figures.overdue, figures.oldest_unread_due_seconds) == (3, 0, 0.0)
    clock.advance(timedelta(seconds=50))
    figures = gateway.gauges()
    assert (figures.open, figures.overdue) == (1, 2)
    assert figures.oldest_unread_due_seconds == pytest.approx(30, abs=0.01)  # the watched ask fell due 30 s ago
    gateway.read_due()
    figures = gateway.gauges()
    assert (figures.open, figures.overdue, figures.oldest_unread_due_seconds) == (1, 1, 0.0)
    scraped = gateway.metrics.exposition().decode()
    assert "parkgate_open_asks 1.0" in scraped and "parkgate_asks_overdue 1.0" in scraped


def test_context_is_kept_with_the_ask_and_bad_context_is_refused(gateway: Gateway) -> None:
    parked = gateway.ask("c-1", "Deploy?", ["Deploy", "Hold"], context={"tool": "deploy", "args": {"env": "prod"}})
    ask = gateway.get(parked.ask_id or "")
    assert ask.context == {"tool": "deploy", "args": {"env": "prod"}}
    from parkgate import InputError
    from parkgate.gateway import ask_to_dict

    assert ask_to_dict(ask)["context"] == {"tool": "deploy", "args": {"env": "prod"}}
    for bad in ({1: "x"}, {"x": object()}, ["not", "a", "mapping"], {"big": "x" * 20_000}):
        with pytest.raises(InputError, match="context"):
            gateway.ask("c-2", "Again?", ["A"], context=bad)  # type: ignore[arg-type]
    assert gateway.handle("c-2", "1").kind is ReplyKind.PASS  # nothing was parked
