"""Who answers each phase of a workflow: phases that name their own
responders and quorum, phases that name none (anyone's, then), and a start that names
responders for a workflow whose phases say who answers them (refused)."""

from __future__ import annotations

from typing import Any

import pytest

from parkgate import Gateway, InputError, ReplyKind
from parkgate.core.stopping_point import StoppingPointError
from parkgate.store import Store
from parkgate.workflow import Phase, Workflow

RELEASE = Workflow(
    name="release",
    phases=[
        Phase("notes", "What changed in this release?"),
        Phase("approve", "Ship it?", options=("Ship", "Hold"), responders=("U_LEAD", "U_OPS", "U_QA"), quorum=2),
        Phase("announce", "Where do we announce it?", options=("Slack", "Email")),
    ],
    finish=lambda answers: f"{answers['approve']}: {answers['notes']} ({answers['announce']})",
)


@pytest.fixture
def flow(store: Store, clock: Any) -> Gateway:
    return Gateway(store=store, clock=clock, workflows=[RELEASE])


def test_each_phase_is_for_whom_it_names(flow: Gateway) -> None:
    started = flow.start("c-rel", "release")
    notes = flow.get(started.ask_id or "")
    assert (notes.responders, notes.quorum) == ((), 1)  # a phase that names nobody is anyone's
    moved = flow.handle("c-rel", "Faster parking.", sender="U_DEV")
    assert moved.next_ask is not None and flow.get(notes.id).answered_by == "U_DEV"
    approve = flow.get(moved.next_ask.ask_id or "")
    assert (approve.phase, approve.responders, approve.quorum) == ("approve", ("U_LEAD", "U_OPS", "U_QA"), 2)
    assert flow.handle("c-rel", "1", sender="U_DEV").kind is ReplyKind.NOT_YOURS
    assert flow.handle("c-rel", "1", sender="U_LEAD").kind is ReplyKind.VOTED
    assert flow.handle("c-rel", "2", sender="U_OPS").kind is ReplyKind.VOTED
    shipped = flow.handle("c-rel", "Ship", sender="U_QA")
    assert shipped.kind is ReplyKind.SELECTED and shipped.next_ask is not None
    closed = flow.get(approve.id)
    assert (closed.answer, closed.answered_by, len(closed.votes)) == ("Ship", "U_QA", 3)
    announce = flow.get(shipped.next_ask.ask_id or "")
    assert (announce.phase, announce.responders, announce.quorum) == ("announce", (), 1)
    done = flow.handle("c-rel", "1", sender="U_DEV")
    assert done.kind is ReplyKind.SELECTED and not done.parked
    assert "Ship: Faster parking. (Slack)" in done.text


def test_a_start_naming_responders_for_such_a_workflow_is_refused(flow: Gateway) -> None:
    with pytest.raises(InputError, match="names who answers its phases"):
        flow.start("c-rel", "release", responders=["U_BOSS"])
    assert flow.audit() == []


def test_a_workflow_whose_phases_name_nobody_keeps_the_starts_responders(store: Store, clock: Any) -> None:
    plain = Workflow(
        "plain",
        [Phase("pick", "Which?", options=("A", "B"), quorum=1), Phase("why", "Why?")],
        finish=lambda answers: answers["why"],
    )
    gateway = Gateway(store=store, clock=clock, workflows=[plain])
    started = gateway.start("c-plain", "plain", responders=["U_A", "U_B"])
    moved = gateway.handle("c-plain", "A", sender="U_B")
    assert moved.next_ask is not None
    assert gateway.get(moved.next_ask.ask_id or "").responders == ("U_A", "U_B")
    assert gateway.get(started.ask_id or "").answered_by == "U_B"


@pytest.mark.parametrize(
    ("phase", "words"),
    [
        (lambda: Phase("p", "Which?", options=("A", "B"), quorum=2), "quorum is given without responders"),
        (lambda: Phase("p", "Why?", responders=("U_A", "U_B"), quorum=2), "a text ask takes quorum 1"),
        (lambda: Phase("p", "Which?", options=("A",), responders=("U_A", "U_A")), "repeats 'U_A'"),
        (lambda: Phase("p", "Which?", options=("A",), responders=("U_A",), quorum=2), "from 1 to the 1 responders"),
    ],
)
def test_a_phase_with_unusable_responders_or_quorum_is_refused_when_defined(phase: Any, words: str) -> None:
    with pytest.raises(StoppingPointError, match=words):
        phase()


def test_a_phase_responder_that_is_no_sender_is_refused_when_registered(store: Store) -> None:
    odd = Workflow("odd", [Phase("p", "Which?", options=("A",), responders=("U" * 201,))], finish=lambda a: "")
    with pytest.raises(InputError, match="responders item 1 is 201 characters"):
        Gateway(store=store, workflows=[odd])
