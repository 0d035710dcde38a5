"""Clock faults: TTLs that pass while the process is down; a clock that goes backwards.

The process is "down" between closing one Gateway and opening another on the same
database; the ManualClock moves in between. Nothing sleeps.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

import pytest

from parkgate import Gateway
from parkgate.clock import ManualClock
from parkgate.core.kinds import AskStatus, ReplyKind
from parkgate.core.model import Ask

from ._support import StoreSpec

TTL = timedelta(hours=1)


def _raw_status(spec: StoreSpec, ask_id: str) -> tuple[str, int]:
    rows = spec.query("SELECT status, mismatches FROM asks WHERE id = ?", (ask_id,))
    return str(rows[0][0]), int(rows[0][1])


def _park_then_stop(spec: StoreSpec, clock: ManualClock, **options: object) -> Ask:
    """Park an ask, bounce once, and shut the process down."""
    with spec.gateway(clock=clock, ttl=TTL) as gateway:
        reply = gateway.ask("down-1", "Deploy now?", ["Deploy", "Hold"], run_id="run-down", **options)  # type: ignore[arg-type]
        assert reply.ask_id
        clock.advance(timedelta(minutes=20))
        assert gateway.handle("down-1", "what?").kind is ReplyKind.RETRY
        return gateway.get(reply.ask_id)


def _via_handle(gateway: Gateway, ask: Ask) -> Ask:
    reply = gateway.handle(ask.conversation_id, "1")  # would have selected "Deploy"
    assert reply.kind is ReplyKind.PASS and reply.expired_ask_id == ask.id and not reply.parked
    return gateway.get(ask.id)


def _via_get(gateway: Gateway, ask: Ask) -> Ask:
    return gateway.get(ask.id)


def _via_open_asks(gateway: Gateway, ask: Ask) -> Ask:
    assert [a.id for a in gateway.open_asks()] == []
    return gateway.get(ask.id)


def _via_cancel(gateway: Gateway, ask: Ask) -> Ask:
    return gateway.cancel(ask.id)  # an expiry is never reported as a cancel


def _via_new_ask(gateway: Gateway, ask: Ask) -> Ask:
    fresh = gateway.ask(ask.conversation_id, "Next question?", ["A", "B"])  # no replace needed
    assert fresh.kind is ReplyKind.ASKED
    return gateway.get(ask.id)


READS: dict[str, Callable[[Gateway, Ask], Ask]] = {
    "handle": _via_handle,
    "get": _via_get,
    "open_asks": _via_open_asks,
    "cancel": _via_cancel,
    "ask": _via_new_ask,
}


@pytest.mark.parametrize("read", sorted(READS))
def test_ttl_passing_while_down_expires_on_the_first_read_after_start(
    spec: StoreSpec, clock: ManualClock, read: str
) -> None:
    parked = _park_then_stop(spec, clock)
    clock.advance(TTL + timedelta(seconds=1))  # the TTL passes while nothing runs
    with spec.gateway(clock=clock, ttl=TTL) as gateway:
        # Starting decides nothing: the row is exactly as it was left.
        assert _raw_status(spec, parked.id) == ("open", 1)
        assert [a.id for a in gateway.audit()] == [parked.id]
        closed = READS[read](gateway, parked)
    assert closed.status is AskStatus.EXPIRED and closed.outcome == "expired"
    assert closed.answer is None and closed.option_index is None
    assert closed.mismatches == 1  # the read did not also count the message as a miss
    assert _raw_status(spec, parked.id) == ("expired", 1)
    with spec.gateway(clock=clock, ttl=TTL) as gateway:
        run = gateway.run("run-down")
        assert run is not None and run.status == "complete" and run.outcome == "expired"


def test_the_ttl_counts_from_the_last_touch_across_a_restart(spec: StoreSpec, clock: ManualClock) -> None:
    parked = _park_then_stop(spec, clock)
    clock.advance(TTL)  # exactly the TTL idle: not yet "older than" it
    with spec.gateway(clock=clock, ttl=TTL) as gateway:
        assert gateway.get(parked.id).status is AskStatus.OPEN
    clock.advance(timedelta(microseconds=1))
    with spec.gateway(clock=clock, ttl=TTL) as gateway:
        assert gateway.get(parked.id).status is AskStatus.EXPIRED


def test_a_default_is_recorded_when_the_ttl_passes_while_down(spec: StoreSpec, clock: ManualClock) -> None:
    parked = _park_then_stop(spec, clock, default="Hold")
    clock.advance(TTL * 3)
    with spec.gateway(clock=clock, ttl=TTL) as gateway:
        reply = gateway.handle("down-1", "Deploy")
        assert reply.kind is ReplyKind.PASS and reply.expired_ask_id == parked.id
        closed = gateway.get(parked.id)
    assert (closed.status, closed.answer, closed.option_index) == (AskStatus.EXPIRED, "Hold", 2)


def _close(gateway: Gateway, clock: ManualClock, how: str) -> Ask:
    reply = gateway.ask("back-1", "Ship it?", ["Ship", "Wait"], run_id="run-back")
    assert reply.ask_id
    if how == "expired":
        clock.advance(TTL + timedelta(minutes=1))
        gateway.get(reply.ask_id)
    elif how == "cancelled":
        gateway.handle("back-1", "/cancel", message_id="first")
    else:
        gateway.handle("back-1", "2", message_id="first")
    closed = gateway.get(reply.ask_id)
    assert closed.status.value == how
    return closed


@pytest.mark.parametrize("how", ["expired", "cancelled", "answered"])
@pytest.mark.parametrize("back", [timedelta(minutes=30), timedelta(days=3)])
def test_a_clock_going_backwards_never_reopens_a_closed_ask(
    spec: StoreSpec, clock: ManualClock, how: str, back: timedelta
) -> None:
    with spec.gateway(clock=clock, ttl=TTL) as gateway:
        closed = _close(gateway, clock, how)
    clock.set(clock.now() - back)  # before the ask was even parked, for the 3-day jump
    with spec.gateway(clock=clock, ttl=TTL) as gateway:
        assert gateway.get(closed.id) == closed
        for text in ("1", "Ship", "menu", "/cancel", "what?"):
            reply = gateway.handle("back-1", text)
            assert reply.kind is ReplyKind.PASS and reply.expired_ask_id is None and not reply.parked
        assert gateway.open_asks() == [] and gateway.audit() == []
        assert gateway.cancel(closed.id) == closed
        fresh = gateway.ask("back-1", "Again?", ["Yes", "No"])  # the conversation is free
        assert fresh.ask_id and fresh.ask_id != closed.id
        assert gateway.handle("back-1", "yes").kind is ReplyKind.SELECTED
        assert gateway.get(closed.id) == closed
    assert _raw_status(spec, closed.id)[0] == how


def test_an_ask_touched_while_the_clock_was_behind_still_expires(spec: StoreSpec, clock: ManualClock) -> None:
    """A backwards jump cannot keep an ask alive: it expires one TTL after its last touch."""
    with spec.gateway(clock=clock, ttl=TTL) as gateway:
        reply = gateway.ask("back-2", "Ship it?", ["Ship", "Wait"])
        assert reply.ask_id
        clock.advance(timedelta(minutes=10))
        clock.set(clock.now() - timedelta(hours=2))  # the clock jumps back
        assert gateway.handle("back-2", "hmm").kind is ReplyKind.RETRY
        touched = gateway.get(reply.ask_id)
    assert touched.is_open
    clock.set(max(touched.last_touched, touched.asked_at) + TTL + timedelta(seconds=1))
    with spec.gateway(clock=clock, ttl=TTL) as gateway:
        assert gateway.handle("back-2", "1").expired_ask_id == reply.ask_id
        assert gateway.get(reply.ask_id).status is AskStatus.EXPIRED
