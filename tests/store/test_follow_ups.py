"""Follow-ups: an ask parked with ``follow_up=True`` is listed once it closes, until the
waiter that acts on its close says it is done; one waiter in any process claims it.

The follow-up list, its claims and leases are a store interface with SQL of each engine's
own, so these run in the store conformance suite, on both engines."""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING

import pytest

from parkgate import Gateway, InputError, ManualClock

if TYPE_CHECKING:
    from conftest import Reopen


def test_a_closed_follow_up_is_listed_until_it_is_done(gateway: Gateway) -> None:
    asked = gateway.ask("chat-1", "Deploy?", ["Deploy", "Hold"], follow_up=True)
    plain = gateway.ask("chat-2", "Ship?", ["Yes", "No"])
    ask_id = asked.ask_id or ""
    assert gateway.closed_follow_ups() == []  # open: nothing to follow up yet

    gateway.handle("chat-1", "1")
    gateway.handle("chat-2", "1")
    [closed] = gateway.closed_follow_ups()
    assert closed.id == ask_id and closed.answer == "Deploy"
    assert plain.ask_id not in [ask.id for ask in gateway.closed_follow_ups()]

    gateway.follow_up_done(ask_id)
    assert gateway.closed_follow_ups() == []
    assert not gateway.claim_follow_up(ask_id, 60)  # done is done


def test_one_claim_wins_across_processes_until_its_lease_runs_out(
    gateway: Gateway, reopen: Reopen, clock: ManualClock
) -> None:
    ask_id = gateway.ask("chat-1", "Deploy?", ["Deploy", "Hold"], follow_up=True).ask_id or ""
    gateway.cancel(ask_id)
    other = reopen()

    assert gateway.claim_follow_up(ask_id, timedelta(minutes=10))
    assert not other.claim_follow_up(ask_id, timedelta(minutes=10))
    assert other.closed_follow_ups() == []  # claimed: not listed while the claim holds

    clock.advance(timedelta(minutes=10, seconds=1))  # the claimer died: its lease ran out
    assert [ask.id for ask in other.closed_follow_ups()] == [ask_id]
    assert other.claim_follow_up(ask_id, timedelta(minutes=10))
    assert not gateway.claim_follow_up(ask_id, timedelta(minutes=10))


def test_an_ask_without_a_follow_up_is_never_claimed(gateway: Gateway) -> None:
    ask_id = gateway.ask("chat-1", "Deploy?", ["Deploy", "Hold"]).ask_id or ""
    gateway.cancel(ask_id)
    assert not gateway.claim_follow_up(ask_id, 60)
    with pytest.raises(InputError):
        gateway.claim_follow_up(ask_id, 0)


def test_parked_reads_the_open_ask_as_stored_and_closes_nothing(gateway: Gateway, clock: ManualClock) -> None:
    assert gateway.parked("chat-1") is None
    ask_id = gateway.ask("chat-1", "Deploy?", ["Deploy", "Hold"], ttl=60).ask_id
    clock.advance(timedelta(seconds=61))
    seen = gateway.parked("chat-1")
    assert seen is not None and seen.id == ask_id and seen.is_open  # past its TTL, still as stored
    assert gateway.handle("chat-1", "1").expired_ask_id == ask_id  # the read that enforces it
    assert gateway.parked("chat-1") is None


def test_an_owner_lists_only_the_closed_follow_ups_it_parked(gateway: Gateway) -> None:
    mine = gateway.ask("chat-1", "Deploy?", ["Deploy", "Hold"], follow_up=True, owner="agent").ask_id
    theirs = gateway.ask("chat-2", "Ship?", ["Yes", "No"], follow_up=True, owner="other-agent").ask_id
    gateway.handle("chat-1", "1")
    gateway.handle("chat-2", "1")
    assert [ask.id for ask in gateway.closed_follow_ups(owner="agent")] == [mine]
    assert [ask.id for ask in gateway.closed_follow_ups(owner="other-agent")] == [theirs]
    assert {ask.id for ask in gateway.closed_follow_ups()} == {mine, theirs}


def test_a_watcher_lists_only_the_asks_named_for_it_a_page_after_another(gateway: Gateway, clock: ManualClock) -> None:
    mine = []
    for n in range(3):
        theirs = gateway.ask(f"chat-theirs-{n}", "Ship?", ["Yes", "No"], follow_up="billing").ask_id or ""
        plain = gateway.ask(f"chat-plain-{n}", "Ship?", ["Yes", "No"], follow_up=True).ask_id or ""
        mine.append(gateway.ask(f"chat-mine-{n}", "Deploy?", ["Deploy", "Hold"], follow_up="deploys").ask_id)
        for ask_id in (theirs, plain, mine[-1] or ""):
            gateway.cancel(ask_id)
            clock.advance(timedelta(seconds=1))

    assert [ask.id for ask in gateway.closed_follow_ups(watcher="deploys")] == mine
    first = gateway.closed_follow_ups(2, watcher="deploys")
    rest = gateway.closed_follow_ups(2, watcher="deploys", after=first[-1].id)
    assert [ask.id for ask in first + rest] == mine
    assert len(gateway.closed_follow_ups()) == 9  # without a watcher: every follow-up, as before


@pytest.mark.parametrize("follow_up", ["", " ", 1, None])
def test_a_follow_up_that_is_neither_a_flag_nor_a_name_is_refused(gateway: Gateway, follow_up: object) -> None:
    with pytest.raises(InputError, match="follow_up"):
        gateway.ask("chat-1", "Deploy?", ["Deploy", "Hold"], follow_up=follow_up)  # type: ignore[arg-type]
    assert gateway.open_asks() == []
