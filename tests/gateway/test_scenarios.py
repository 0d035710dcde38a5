"""The seed's scenarios end to end through ``Gateway``, on a SQLite file.

What the stores themselves guarantee runs on both engines in ``tests/store``; here only a
wait woken by another store object does (the wake is the engine's own). Each test
asserts what a person or a calling agent would notice: the reply kind, whether the
conversation is still parked, what the stored ask says afterwards.
"""

from __future__ import annotations

import threading
from datetime import timedelta
from typing import TYPE_CHECKING

import pytest

from parkgate import AskAlreadyOpen, AskStatus, Gateway, ManualClock, ReplyKind, UnknownAsk
from parkgate.cli.demo import DIAGRAMS
from parkgate.core import phrases as P
from parkgate.core.model import Ask

if TYPE_CHECKING:
    from conftest import MakeGateway, Reopen, StoreLocation

SIX_HOURS = timedelta(hours=6)
SEED_INPUTS = ["pick the right diagram", "did it run?", "/menu", "huh", "what"]
SEED_KINDS = [ReplyKind.RETRY, ReplyKind.RETRY, ReplyKind.RESHOWN, ReplyKind.ESCALATED, ReplyKind.ESCALATED]


def _stored_row(location: StoreLocation, ask_id: str) -> tuple[str, str | None]:
    rows = location.raw_query("SELECT status, outcome FROM asks WHERE id = ?", (ask_id,))
    assert len(rows) == 1, f"ask {ask_id} is not kept in the asks table"
    return rows[0][0], rows[0][1]


# -- the seed scenario ----------------------------------------------------------------


def test_seed_scenario_four_non_answers_then_cancel(gateway: Gateway, store_location: StoreLocation) -> None:
    parked = gateway.start("conv-seed", "uml")
    assert parked.kind is ReplyKind.ASKED and parked.parked
    assert parked.ask_id is not None and parked.run_id is not None
    for label in DIAGRAMS:
        assert label in parked.text

    kinds = []
    for text in SEED_INPUTS:
        reply = gateway.handle("conv-seed", text)
        kinds.append(reply.kind)
        assert reply.parked, f"{text!r} unparked the conversation"
        assert reply.ask_id == parked.ask_id
        assert not reply.routes_onward
    assert kinds == SEED_KINDS

    left = gateway.handle("conv-seed", "cancel")
    assert left.kind is ReplyKind.CANCELLED
    assert left.text == P.PHRASES[ReplyKind.CANCELLED]
    assert not left.parked

    ask = gateway.get(parked.ask_id)
    assert ask.status is AskStatus.CANCELLED
    assert ask.outcome == "cancelled"
    assert ask.mismatches == 4  # four non-answers; the /menu did not count
    assert _stored_row(store_location, parked.ask_id) == ("cancelled", "cancelled")

    run = gateway.run(parked.run_id)
    assert run is not None
    assert (run.status, run.outcome, run.pending_ask_id) == ("complete", "cancelled", None)

    # Unparked: the next message is not for parkgate.
    after = gateway.handle("conv-seed", "hello again")
    assert after.kind is ReplyKind.PASS and after.routes_onward and not after.parked
    assert gateway.audit() == []


def test_demo_workflow_runs_to_the_plantuml_text(gateway: Gateway) -> None:
    gateway.start("conv-uml", "uml")
    chose = gateway.handle("conv-uml", "class")
    assert chose.kind is ReplyKind.SELECTED and chose.answer == "Class" and chose.option_index == 2
    assert chose.parked and chose.next_ask is not None and chose.next_ask.kind is ReplyKind.ASKED
    assert "Describe the Class diagram" in chose.text
    done = gateway.handle("conv-uml", "Orders and their customers")
    assert done.kind is ReplyKind.ANSWERED and not done.parked
    assert "@startuml" in done.text and "title Orders and their customers" in done.text
    assert chose.run_id is not None
    run = gateway.run(chose.run_id)
    assert run is not None and (run.status, run.outcome) == ("complete", "done")


# -- restart ----------------------------------------------------------------------------


def test_restart_keeps_the_parked_ask_and_its_mismatch_count(gateway: Gateway, reopen: Reopen) -> None:
    parked = gateway.ask("conv-r", "Deploy?", ["Yes", "No"])
    assert gateway.handle("conv-r", "maybe").kind is ReplyKind.RETRY
    assert gateway.handle("conv-r", "later").kind is ReplyKind.RETRY
    gateway.close()

    again = reopen()
    assert parked.ask_id is not None
    ask = again.get(parked.ask_id)
    assert ask.is_open and ask.mismatches == 2
    third = again.handle("conv-r", "hmm")
    assert third.kind is ReplyKind.ESCALATED and third.parked  # the count went on from 2
    assert "3 tries" in third.text
    chosen = again.handle("conv-r", "2")
    assert chosen.kind is ReplyKind.SELECTED and chosen.answer == "No" and chosen.option_index == 2
    assert again.get(parked.ask_id).mismatches == 0  # a selection resets the counter


def test_restart_mid_workflow_continues_with_the_next_phase(
    gateway: Gateway, reopen: Reopen, clock: ManualClock
) -> None:
    gateway.start("conv-wf", "uml")
    gateway.handle("conv-wf", "1")
    gateway.close()
    later = ManualClock(clock.now() + timedelta(hours=1))  # the restarted process has its own clock
    again = reopen(clock=later)
    done = again.handle("conv-wf", "A user logs in")
    assert done.kind is ReplyKind.ANSWERED and not done.parked
    assert "sequence diagram" in done.text and "@startuml" in done.text


# -- expiry ----------------------------------------------------------------------------


def test_an_expired_ask_is_closed_as_expired_and_kept(
    gateway: Gateway, clock: ManualClock, store_location: StoreLocation
) -> None:
    parked = gateway.ask("conv-x", "Deploy?", ["Yes", "No"])
    assert parked.ask_id is not None
    clock.advance(SIX_HOURS)  # exactly the TTL: not yet expired (strictly longer)
    assert gateway.handle("conv-x", "menu").kind is ReplyKind.RESHOWN  # and that touched it
    clock.advance(SIX_HOURS + timedelta(seconds=1))

    assert [a.id for a in gateway.audit()] == [parked.ask_id]  # nobody has read it yet
    reply = gateway.handle("conv-x", "1")  # would have selected, but the ask is gone
    assert reply.kind is ReplyKind.PASS and not reply.parked
    assert reply.expired_ask_id == parked.ask_id
    assert reply.answer is None and reply.option_index is None

    ask = gateway.get(parked.ask_id)
    assert ask.status is AskStatus.EXPIRED and ask.answer is None
    assert _stored_row(store_location, parked.ask_id) == ("expired", "expired")
    assert parked.run_id is not None
    run = gateway.run(parked.run_id)
    assert run is not None and (run.status, run.outcome) == ("complete", "expired")
    # The next message passes plainly; the expiry is reported once.
    later = gateway.handle("conv-x", "1")
    assert later.kind is ReplyKind.PASS and later.expired_ask_id is None
    assert gateway.audit() == []


def test_reading_an_expired_ask_by_id_closes_it(gateway: Gateway, clock: ManualClock) -> None:
    parked = gateway.ask("conv-g", "Why?", ttl=timedelta(minutes=5))
    assert parked.ask_id is not None
    clock.advance(timedelta(minutes=6))
    assert gateway.get(parked.ask_id).status is AskStatus.EXPIRED
    assert gateway.audit() == []
    assert gateway.handle("conv-g", "because").kind is ReplyKind.PASS


def test_a_default_is_recorded_as_the_answer_of_an_expired_ask(gateway: Gateway, clock: ManualClock) -> None:
    parked = gateway.ask("conv-d", "Deploy?", ["Yes", "No"], default="No")
    assert parked.ask_id is not None and parked.run_id is not None
    clock.advance(SIX_HOURS + timedelta(minutes=1))
    reply = gateway.handle("conv-d", "Yes")
    assert reply.kind is ReplyKind.PASS and reply.expired_ask_id == parked.ask_id
    ask = gateway.get(parked.ask_id)
    assert ask.status is AskStatus.EXPIRED  # never reported as a cancel or a selection
    assert (ask.answer, ask.option_index) == ("No", 2)
    run = gateway.run(parked.run_id)
    assert run is not None and run.status == "running"  # the waiting run goes on with the default
    assert gateway.wait(parked.ask_id, 0).answer == "No"


def test_activity_keeps_an_ask_alive(gateway: Gateway, clock: ManualClock) -> None:
    gateway.ask("conv-alive", "Deploy?", ["Yes", "No"])
    for _ in range(3):
        clock.advance(timedelta(hours=5))
        assert gateway.handle("conv-alive", "?").parked  # each miss touches last_touched
    assert gateway.handle("conv-alive", "yes").kind is ReplyKind.SELECTED


# -- the non-answer path ---------------------------------------------------------------


def test_the_escalated_line_appears_exactly_from_miss_3(gateway: Gateway) -> None:
    gateway.ask("conv-e", "Pick one", ["Red", "Green", "Blue"])
    replies = [gateway.handle("conv-e", f"nope {i}") for i in range(1, 7)]
    assert [r.kind for r in replies] == [ReplyKind.RETRY] * 2 + [ReplyKind.ESCALATED] * 4
    for miss, reply in enumerate(replies, start=1):
        assert reply.parked
        if miss < 3:
            assert P.EXITS_HINT not in reply.text
        else:
            assert f"({miss} tries)" in reply.text  # counts the tries
            assert P.EXITS_HINT in reply.text  # names every exit
            assert "menu" in reply.text and "cancel" in reply.text


def test_escalation_threshold_is_configurable(
    store_location: StoreLocation, clock: ManualClock, make_gateway: MakeGateway
) -> None:
    gw = make_gateway(store_location, clock, escalate_after=2)
    gw.ask("conv-n2", "Pick one", ["A", "B"])
    assert [gw.handle("conv-n2", "x").kind for _ in range(3)] == [
        ReplyKind.RETRY,
        ReplyKind.ESCALATED,
        ReplyKind.ESCALATED,
    ]


def test_menu_does_not_count_as_a_miss(gateway: Gateway) -> None:
    parked = gateway.ask("conv-m", "Pick one", ["Red", "Green"])
    assert parked.ask_id is not None
    kinds = [gateway.handle("conv-m", text).kind for text in ["x", "menu", "options", "/menu", "y", "/options", "z"]]
    assert kinds == [
        ReplyKind.RETRY,
        ReplyKind.RESHOWN,
        ReplyKind.RESHOWN,
        ReplyKind.RESHOWN,
        ReplyKind.RETRY,
        ReplyKind.RESHOWN,
        ReplyKind.ESCALATED,  # the third real miss, however many menus came between
    ]
    assert gateway.get(parked.ask_id).mismatches == 3
    reshown = gateway.handle("conv-m", "MENU")
    assert reshown.kind is ReplyKind.RESHOWN and "1. Red" in reshown.text and "2. Green" in reshown.text


def test_a_selection_resets_the_counter_for_the_next_ask(gateway: Gateway) -> None:
    gateway.ask("conv-s", "First", ["A", "B"])
    gateway.handle("conv-s", "x")
    gateway.handle("conv-s", "y")
    assert gateway.handle("conv-s", "a").kind is ReplyKind.SELECTED
    gateway.ask("conv-s", "Second", ["C", "D"])
    assert gateway.handle("conv-s", "x").kind is ReplyKind.RETRY


def test_a_menu_whose_option_is_stop_selects_it_and_slash_stop_cancels(gateway: Gateway) -> None:
    first = gateway.ask("conv-stop", "Carry on?", ["Go on", "Stop"])
    chose = gateway.handle("conv-stop", "stop")
    assert chose.kind is ReplyKind.SELECTED and chose.answer == "Stop" and chose.option_index == 2
    assert first.ask_id is not None and gateway.get(first.ask_id).status is AskStatus.ANSWERED

    second = gateway.ask("conv-stop", "Carry on?", ["Go on", "Stop"])
    left = gateway.handle("conv-stop", "/stop")
    assert left.kind is ReplyKind.CANCELLED and not left.parked
    assert second.ask_id is not None and gateway.get(second.ask_id).status is AskStatus.CANCELLED


@pytest.mark.parametrize("word", ["cancel", "exit", "quit", "stop", "nevermind", "/cancel", "  CANCEL  "])
def test_every_cancel_word_leaves_a_choice_ask(gateway: Gateway, word: str) -> None:
    parked = gateway.ask("conv-c", "Pick", ["A", "B"])
    reply = gateway.handle("conv-c", word)
    assert reply.kind is ReplyKind.CANCELLED and not reply.parked
    assert parked.ask_id is not None and gateway.get(parked.ask_id).status is AskStatus.CANCELLED


def test_nothing_partial_or_fuzzy_selects(gateway: Gateway) -> None:
    parked = gateway.ask("conv-f", "Pick", ["Sequence", "Class"])
    for text in ["seq", "Sequences", "class diagram", "0", "3", "-1", "+2", "1.0", "1e0", "01", "1 2"]:
        reply = gateway.handle("conv-f", text)
        assert reply.kind in (ReplyKind.RETRY, ReplyKind.ESCALATED), text
    assert parked.ask_id is not None and gateway.get(parked.ask_id).is_open


# -- text asks -------------------------------------------------------------------------


def test_text_ask_takes_bare_cancel_as_the_answer_and_names_the_door(gateway: Gateway) -> None:
    parked = gateway.ask("conv-t", "What should the release note say?")
    assert parked.kind is ReplyKind.ASKED and "/cancel" in parked.text
    reply = gateway.handle("conv-t", "cancel")
    assert reply.kind is ReplyKind.ANSWERED and reply.answer == "cancel" and not reply.parked
    assert reply.text == P.TEXT_CONTROL_WORD_TAKEN.format(answer="cancel")
    assert "/cancel" in reply.text
    assert parked.ask_id is not None
    ask = gateway.get(parked.ask_id)
    assert (ask.status, ask.answer) == (AskStatus.ANSWERED, "cancel")


def test_text_ask_slash_cancel_leaves_and_data_stays_data(gateway: Gateway) -> None:
    first = gateway.ask("conv-t2", "Describe it")
    assert gateway.handle("conv-t2", "   ").kind is ReplyKind.RETRY  # empty is a mismatch
    left = gateway.handle("conv-t2", "/cancel")
    assert left.kind is ReplyKind.CANCELLED and not left.parked
    assert first.ask_id is not None and gateway.get(first.ask_id).status is AskStatus.CANCELLED

    gateway.ask("conv-t2", "Describe it")
    given = "It stops when the user cancels the order."
    reply = gateway.handle("conv-t2", given)
    assert reply.kind is ReplyKind.ANSWERED and reply.answer == given and reply.text == P.PHRASES[ReplyKind.ANSWERED]


# -- replace, redelivery ---------------------------------------------------------------


def test_parking_twice_is_an_error_unless_replace(gateway: Gateway) -> None:
    old = gateway.ask("conv-p", "First?", ["A", "B"])
    with pytest.raises(AskAlreadyOpen) as raised:
        gateway.ask("conv-p", "Second?", ["C", "D"])
    assert raised.value.ask_id == old.ask_id
    assert [a.prompt for a in gateway.audit()] == ["First?"]

    new = gateway.ask("conv-p", "Second?", ["C", "D"], replace=True)
    assert new.kind is ReplyKind.ASKED and new.ask_id != old.ask_id
    assert old.ask_id is not None
    replaced = gateway.get(old.ask_id)
    assert (replaced.status, replaced.outcome) == (AskStatus.CANCELLED, "replaced")
    assert [a.id for a in gateway.audit()] == [new.ask_id]
    assert gateway.handle("conv-p", "c").answer == "C"


def test_a_redelivered_message_returns_the_first_reply_and_changes_nothing(gateway: Gateway) -> None:
    parked = gateway.ask("conv-id", "Pick", ["A", "B"])
    assert parked.ask_id is not None
    first = gateway.handle("conv-id", "huh", message_id="m-1")
    assert first.kind is ReplyKind.RETRY
    before = gateway.get(parked.ask_id)
    for text in ["huh", "1", "cancel"]:  # the same id again, whatever it carries
        again = gateway.handle("conv-id", text, message_id="m-1")
        assert again == first
    assert gateway.get(parked.ask_id) == before
    assert before.mismatches == 1

    chose = gateway.handle("conv-id", "2", message_id="m-2")
    assert chose.kind is ReplyKind.SELECTED
    assert gateway.handle("conv-id", "2", message_id="m-2") == chose  # not a pass the second time
    # A message id belongs to its conversation: the same id elsewhere is a new message.
    assert gateway.handle("other-conv", "hi", message_id="m-1").kind is ReplyKind.PASS


# -- reads and operator actions --------------------------------------------------------


def test_open_asks_is_oldest_first_and_closes_expired_ones(gateway: Gateway, clock: ManualClock) -> None:
    a = gateway.ask("conv-1", "A?", ["x", "y"], ttl=timedelta(hours=1))
    clock.advance(timedelta(minutes=10))
    b = gateway.ask("conv-2", "B?")
    clock.advance(timedelta(minutes=10))
    c = gateway.ask("conv-3", "C?", ["x", "y"])
    assert [ask.id for ask in gateway.open_asks()] == [a.ask_id, b.ask_id, c.ask_id]
    assert [ask.id for ask in gateway.open_asks(limit=2)] == [a.ask_id, b.ask_id]

    clock.advance(timedelta(minutes=35))  # conv-1 idle 55 min: not yet
    assert len(gateway.open_asks()) == 3
    clock.advance(timedelta(minutes=10))  # ... now 65 min > 1 h
    assert [ask.id for ask in gateway.audit()] == [a.ask_id, b.ask_id, c.ask_id]  # audit closes nothing
    assert [ask.id for ask in gateway.open_asks()] == [b.ask_id, c.ask_id]
    assert a.ask_id is not None and gateway.get(a.ask_id).status is AskStatus.EXPIRED
    assert [ask.id for ask in gateway.audit()] == [b.ask_id, c.ask_id]


def test_open_asks_with_a_limit_is_not_emptied_by_expired_ones(gateway: Gateway, clock: ManualClock) -> None:
    stale, fresh = [], []
    for n in range(3):
        stale.append(gateway.ask(f"conv-old-{n}", "Old?", ["x"], ttl=timedelta(minutes=5)).ask_id)
        clock.advance(timedelta(seconds=1))
    for n in range(3):
        fresh.append(gateway.ask(f"conv-new-{n}", "New?", ["x"]).ask_id)
        clock.advance(timedelta(seconds=1))
    clock.advance(timedelta(minutes=10))  # the three oldest are past their TTL
    # The oldest two open asks are the first two fresh ones, not nothing.
    assert [ask.id for ask in gateway.open_asks(limit=2)] == fresh[:2]
    assert all(gateway.get(ask_id or "").status is AskStatus.EXPIRED for ask_id in stale)
    assert [ask.id for ask in gateway.open_asks(limit=10)] == fresh


def test_audit_shows_stale_asks_as_stored_without_closing_them(gateway: Gateway, clock: ManualClock) -> None:
    parked = gateway.ask("conv-a", "A?", ["x"], ttl=timedelta(minutes=1))
    clock.advance(timedelta(hours=2))
    stale = gateway.audit()
    assert [a.id for a in stale] == [parked.ask_id] and stale[0].is_open
    assert stale[0].is_expired(clock.now())
    assert gateway.audit() == stale  # reading twice changes nothing


def test_cancel_by_id_closes_the_ask_and_completes_the_run(gateway: Gateway) -> None:
    parked = gateway.ask("conv-op", "Approve?", ["Yes", "No"])
    assert parked.ask_id is not None and parked.run_id is not None
    cancelled = gateway.cancel(parked.ask_id)
    assert cancelled.status is AskStatus.CANCELLED and cancelled.outcome == "cancelled"
    run = gateway.run(parked.run_id)
    assert run is not None and (run.status, run.outcome, run.pending_ask_id) == ("complete", "cancelled", None)
    assert gateway.handle("conv-op", "yes").kind is ReplyKind.PASS
    assert gateway.cancel(parked.ask_id) == cancelled  # cancelling again changes nothing


def test_cancel_of_an_answered_ask_keeps_its_answer(gateway: Gateway) -> None:
    parked = gateway.ask("conv-op2", "Approve?", ["Yes", "No"])
    gateway.handle("conv-op2", "1")
    assert parked.ask_id is not None
    ask = gateway.cancel(parked.ask_id)
    assert (ask.status, ask.answer) == (AskStatus.ANSWERED, "Yes")


@pytest.mark.engines(
    "a close by another store object wakes the wait: LISTEN/NOTIFY on PostgreSQL, the file's watch on SQLite"
)
def test_wait_returns_when_another_thread_answers(gateway: Gateway, reopen: Reopen) -> None:
    parked = gateway.ask("conv-w", "Deploy?", ["Yes", "No"])
    assert parked.ask_id is not None
    other = reopen()  # another gateway on the same store: wakes only through the store
    result: list[Ask] = []

    def waiter() -> None:
        result.append(gateway.wait(parked.ask_id or "", timeout=60))

    thread = threading.Thread(target=waiter)
    thread.start()
    assert gateway.signal.wait_until_asleep(parked.ask_id, 10)  # it read the open ask and sleeps
    assert other.handle("conv-w", "yes").kind is ReplyKind.SELECTED
    thread.join(60)
    assert not thread.is_alive()
    assert result and result[0].status is AskStatus.ANSWERED and result[0].answer == "Yes"


def test_wait_on_an_open_ask_returns_it_open_when_the_timeout_passes(gateway: Gateway) -> None:
    parked = gateway.ask("conv-w2", "Deploy?", ["Yes", "No"])
    assert parked.ask_id is not None
    ask = gateway.wait(parked.ask_id, timeout=0.1)
    assert ask.is_open and ask.id == parked.ask_id


def test_unknown_ask_ids_are_refused(gateway: Gateway) -> None:
    for call in (gateway.get, gateway.cancel, lambda ask_id: gateway.wait(ask_id, 0)):
        with pytest.raises(UnknownAsk) as raised:
            call("no-such-ask")
        assert "no-such-ask" in str(raised.value)


def test_an_unknown_conversation_passes(gateway: Gateway) -> None:
    reply = gateway.handle("never-seen", "hello")
    assert reply.kind is ReplyKind.PASS and not reply.parked and reply.expired_ask_id is None


# -- stopping points in skill output ---------------------------------------------------


def test_ask_from_text_parks_the_marked_stopping_point(gateway: Gateway) -> None:
    output = (
        "I looked at the repository.\r\n\r\n"
        "[[ask]]\r\nWhich diagram should I draw?\r\n\r\n\r\n1) Sequence  \r\n2) Class\r\n[[/ask]]\r\n"
        "Tell me and I will go on."
    )
    parked = gateway.ask_from_text("conv-sp", output)
    assert parked.kind is ReplyKind.ASKED and parked.parked
    assert parked.ask_id is not None
    ask = gateway.get(parked.ask_id)
    assert (ask.prompt, ask.options) == ("Which diagram should I draw?", ("Sequence", "Class"))
    assert gateway.handle("conv-sp", "2").answer == "Class"

    text = gateway.ask_from_text("conv-sp", "[[ask text]]\nDescribe the change.\n[[/ask]]")
    assert text.kind is ReplyKind.ASKED and "/cancel" in text.text
    assert gateway.handle("conv-sp", "cancel").kind is ReplyKind.ANSWERED


def test_ask_from_text_without_a_marker_passes_and_parks_nothing(gateway: Gateway) -> None:
    reply = gateway.ask_from_text("conv-sp2", "Here is the answer: 42.")
    assert reply.kind is ReplyKind.PASS and not reply.parked
    assert gateway.audit() == []
