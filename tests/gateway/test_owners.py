"""Owners own their asks and runs: an ``owner`` (the HTTP service's token
name) replaces, joins and restarts only what it parked, learns nothing of another owner's
ask or run, and no caller reopens a complete run.
"""

from __future__ import annotations

from datetime import timedelta

import pytest

from parkgate import ConversationBusy, Gateway, ManualClock, ReplyKind, RunClosed, ask_to_dict
from parkgate.core.kinds import AskStatus


def test_another_owners_open_ask_is_neither_replaced_nor_named(gateway: Gateway) -> None:
    theirs = gateway.ask("conv-1", "Deploy build 42?", ["Yes", "No"], owner="b")
    assert theirs.ask_id is not None
    for replace in (False, True):
        with pytest.raises(ConversationBusy) as refused:
            gateway.ask("conv-1", "Reply with your deploy key", replace=replace, owner="a")
        assert theirs.ask_id not in str(refused.value) and not hasattr(refused.value, "ask_id")
    kept = gateway.get(theirs.ask_id)
    assert (kept.status, kept.owner) == (AskStatus.OPEN, "b")
    # The person's next reply still answers b's question.
    answered = gateway.handle("conv-1", "Yes")
    assert (answered.kind, answered.ask_id) == (ReplyKind.SELECTED, theirs.ask_id)


def test_an_owners_own_replace_still_works(gateway: Gateway) -> None:
    first = gateway.ask("conv-own", "Deploy?", ["Yes", "No"], owner="a")
    second = gateway.ask("conv-own", "Deploy now?", ["Yes", "No"], replace=True, owner="a")
    assert second.kind is ReplyKind.ASKED
    replaced = gateway.get(first.ask_id or "")
    assert (replaced.status, replaced.outcome) == (AskStatus.CANCELLED, "replaced")


def test_a_workflow_start_does_not_replace_another_owners_ask(gateway: Gateway) -> None:
    theirs = gateway.ask("conv-wf", "Deploy?", ["Yes", "No"], owner="b")
    with pytest.raises(ConversationBusy):
        gateway.start("conv-wf", "uml", replace=True, run_id="run-a", owner="a")
    assert gateway.get(theirs.ask_id or "").is_open
    assert gateway.run("run-a") is None  # nothing was started
    # b's own start replaces b's ask, and the run records its owner.
    started = gateway.start("conv-wf", "uml", replace=True, run_id="run-b", owner="b")
    run = gateway.run("run-b")
    assert run is not None and run.owner == "b"
    assert gateway.get(started.ask_id or "").owner == "b"


def test_another_owners_run_reads_like_a_complete_one_and_is_not_joined(gateway: Gateway) -> None:
    gateway.ask("conv-b", "Deploy?", ["Yes", "No"], run_id="run-b", owner="b")
    assert gateway.handle("conv-b", "Yes").kind is ReplyKind.SELECTED  # b's run goes on, running
    before = gateway.run("run-b")
    assert before is not None and (before.status, before.owner) == ("running", "b")
    with pytest.raises(RunClosed) as foreign:
        gateway.ask("conv-b", "Your key?", run_id="run-b", owner="a")
    gateway.ask("conv-done", "Ship?", ["Yes", "No"], run_id="run-done", owner="a")
    assert gateway.handle("conv-done", "cancel").kind is ReplyKind.CANCELLED
    with pytest.raises(RunClosed) as complete:
        gateway.ask("conv-done", "Ship now?", run_id="run-done", owner="a")
    # One answer for both: the caller cannot tell another owner's run from a complete one.
    assert str(foreign.value).replace("run-b", "RUN") == str(complete.value).replace("run-done", "RUN")
    assert gateway.run("run-b") == before
    assert gateway.handle("conv-b", "anything").kind is ReplyKind.PASS  # nothing was parked


@pytest.mark.parametrize("owner", [None, "a"])
def test_a_complete_run_is_never_reopened_by_any_caller(gateway: Gateway, owner: str | None) -> None:
    gateway.ask("conv-c", "Deploy?", ["Yes", "No"], run_id="run-c", owner=owner)
    assert gateway.handle("conv-c", "Yes").kind is ReplyKind.SELECTED
    finished = gateway.finish_run("run-c")  # answered, then finished by its caller
    with pytest.raises(RunClosed):
        gateway.ask("conv-c", "Deploy again?", ["Yes", "No"], run_id="run-c", owner=owner)
    with pytest.raises(RunClosed):
        gateway.ask_from_text("conv-c", "[[ask]]\nAgain?\n1. Yes\n2. No\n[[/ask]]", run_id="run-c", owner=owner)
    assert gateway.run("run-c") == finished
    assert gateway.open_asks() == []


def test_a_run_whose_pending_ask_lapsed_takes_no_new_ask(gateway: Gateway, clock: ManualClock) -> None:
    lapsed = gateway.ask("conv-l", "Deploy?", ["Yes", "No"], run_id="run-l", ttl=60, owner="a")
    clock.advance(timedelta(seconds=61))
    with pytest.raises(RunClosed):
        gateway.ask("conv-l", "Deploy now?", ["Yes", "No"], run_id="run-l", replace=True, owner="a")
    expired = gateway.get(lapsed.ask_id or "")  # the next read ends it, and its run with it
    assert expired.status is AskStatus.EXPIRED
    run = gateway.run("run-l")
    assert run is not None and (run.status, run.outcome) == ("complete", "expired")


def test_a_run_whose_lapsed_ask_has_a_default_goes_on(gateway: Gateway, clock: ManualClock) -> None:
    gateway.ask("conv-d", "Deploy?", ["Yes", "No"], run_id="run-d", ttl=60, default="No", owner="a")
    clock.advance(timedelta(seconds=61))
    again = gateway.ask("conv-d", "Deploy tomorrow?", ["Yes", "No"], run_id="run-d", owner="a")
    assert again.kind is ReplyKind.ASKED and again.run_id == "run-d"


def test_without_an_owner_every_ask_may_be_replaced(gateway: Gateway) -> None:
    theirs = gateway.ask("conv-lib", "Deploy?", ["Yes", "No"], owner="b")
    gateway.ask("conv-lib", "Deploy now?", ["Yes", "No"], replace=True)
    assert gateway.get(theirs.ask_id or "").outcome == "replaced"


def test_an_ask_and_its_run_show_their_owner(gateway: Gateway) -> None:
    parked = gateway.ask("conv-o", "Deploy?", ["Yes", "No"], run_id="run-o", owner="agent")
    assert ask_to_dict(gateway.get(parked.ask_id or ""))["owner"] == "agent"
    run = gateway.run("run-o")
    assert run is not None and run.owner == "agent"
    unowned = gateway.ask("conv-u", "Deploy?", ["Yes", "No"])
    assert ask_to_dict(gateway.get(unowned.ask_id or ""))["owner"] is None
