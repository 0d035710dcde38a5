"""A run's life as a caller sees it: ``run()`` reads it, ``finish_run()``
completes it, and no parked ask outlives its run.
"""

from __future__ import annotations

from datetime import timedelta

import pytest

from parkgate import Gateway, InputError, ManualClock, ReplyKind, RunStillAsking, UnknownRun
from parkgate.core.kinds import AskStatus


def test_a_plain_asks_run_waits_for_its_caller_then_finishes_with_its_outcome(
    gateway: Gateway, clock: ManualClock
) -> None:
    parked = gateway.ask("conv-run", "Deploy?", ["Yes", "No"], run_id="run-deploy")
    run = gateway.run("run-deploy")
    assert run is not None
    assert (run.status, run.pending_ask_id, run.conversation_id) == ("running", parked.ask_id, "conv-run")
    assert gateway.handle("conv-run", "1").kind is ReplyKind.SELECTED
    run = gateway.run("run-deploy")
    assert run is not None and (run.status, run.pending_ask_id) == ("running", None)  # the caller's turn
    clock.advance(timedelta(minutes=5))
    finished = gateway.finish_run("run-deploy", "deployed")
    assert (finished.status, finished.outcome, finished.pending_ask_id) == ("complete", "deployed", None)
    assert finished.updated_at == clock.now()
    assert gateway.run("run-deploy") == finished


def test_finishing_a_run_whose_ask_is_still_open_is_refused_and_changes_nothing(
    gateway: Gateway, clock: ManualClock
) -> None:
    parked = gateway.ask("conv-open", "Deploy?", ["Yes", "No"], run_id="run-open")
    before = gateway.run("run-open")
    with pytest.raises(RunStillAsking) as refused:
        gateway.finish_run("run-open")
    assert refused.value.ask_id == parked.ask_id and parked.ask_id in str(refused.value)
    assert gateway.run("run-open") == before
    assert gateway.get(parked.ask_id).is_open
    assert gateway.handle("conv-open", "2").kind is ReplyKind.SELECTED  # still parked, still answerable
    assert gateway.finish_run("run-open").status == "complete"


def test_a_cancelled_ask_completes_its_run_and_a_later_finish_records_the_callers_outcome(gateway: Gateway) -> None:
    gateway.ask("conv-c", "Deploy?", ["Yes", "No"], run_id="run-c")
    assert gateway.handle("conv-c", "cancel").kind is ReplyKind.CANCELLED
    run = gateway.run("run-c")
    assert run is not None and (run.status, run.outcome) == ("complete", "cancelled")
    assert gateway.finish_run("run-c", "rolled-back").outcome == "rolled-back"


def test_reading_a_run_closes_its_pending_ask_past_the_ttl(gateway: Gateway, clock: ManualClock) -> None:
    parked = gateway.ask("conv-ttl", "Deploy?", ["Yes", "No"], run_id="run-ttl", ttl=timedelta(hours=1))
    clock.advance(timedelta(hours=1))
    run = gateway.run("run-ttl")
    assert run is not None and run.status == "running"  # exactly the TTL is not past it
    clock.advance(timedelta(microseconds=1))
    run = gateway.run("run-ttl")
    assert run is not None and (run.status, run.outcome, run.pending_ask_id) == ("complete", "expired", None)
    assert gateway.get(parked.ask_id).status is AskStatus.EXPIRED
    assert gateway.handle("conv-ttl", "1").kind is ReplyKind.PASS  # nothing parked any more


def test_finishing_a_run_whose_ask_is_past_the_ttl_closes_the_ask_and_finishes(
    gateway: Gateway, clock: ManualClock
) -> None:
    parked = gateway.ask("conv-late", "Deploy?", ["Yes", "No"], run_id="run-late", ttl=timedelta(minutes=10))
    clock.advance(timedelta(minutes=11))
    finished = gateway.finish_run("run-late", "gave-up")
    assert (finished.status, finished.outcome) == ("complete", "gave-up")
    assert gateway.get(parked.ask_id).status is AskStatus.EXPIRED


def test_an_unknown_run_reads_as_none_and_cannot_be_finished(gateway: Gateway) -> None:
    assert gateway.run("no-such-run") is None
    with pytest.raises(UnknownRun) as unknown:
        gateway.finish_run("no-such-run")
    # an id that names nothing, as an unknown ask is: not bad input
    assert isinstance(unknown.value, LookupError) and not isinstance(unknown.value, InputError)
    assert "no-such-run" in str(unknown.value)


def test_a_run_that_ended_before_asking_is_recorded_complete_once(gateway: Gateway, clock: ManualClock) -> None:
    recorded = gateway.record_run("run-none", "conv-none", "unaskable")
    assert (recorded.status, recorded.outcome, recorded.conversation_id) == ("complete", "unaskable", "conv-none")
    assert recorded.pending_ask_id is None and recorded.created_at == clock.now()
    assert gateway.run("run-none") == recorded
    with pytest.raises(InputError, match="run-none already exists"):
        gateway.record_run("run-none", "conv-none", "done")
    gateway.ask("conv-2", "Deploy?", ["Yes", "No"], run_id="run-asked")
    with pytest.raises(InputError, match="finish_run"):
        gateway.record_run("run-asked", "conv-2", "done")
    asked = gateway.run("run-asked")
    assert asked is not None and asked.status == "running"  # changed nothing


@pytest.mark.parametrize("where", ["same conversation", "another conversation"])
def test_a_workflow_cannot_start_under_an_existing_run(gateway: Gateway, where: str) -> None:
    """A workflow's run is new: reusing a run id would leave the workflow stopping after one answer."""
    gateway.ask("conv-1", "Deploy?", ["Yes", "No"], run_id="run-old")
    assert gateway.handle("conv-1", "1").kind is ReplyKind.SELECTED
    before = gateway.run("run-old")
    conversation = "conv-1" if where == "same conversation" else "conv-2"
    with pytest.raises(InputError, match="run-old already exists"):
        gateway.start(conversation, "uml", run_id="run-old")
    assert gateway.run("run-old") == before  # nothing changed
    assert gateway.handle(conversation, "1").kind is ReplyKind.PASS  # nothing was parked
    started = gateway.start(conversation, "uml", run_id="run-new")  # a new id starts as usual
    assert started.kind is ReplyKind.ASKED and started.run_id == "run-new"
    chose = gateway.handle(conversation, "1")
    assert chose.kind is ReplyKind.SELECTED and chose.next_ask is not None  # the next phase is asked


def test_a_run_keeps_its_phases_answers_and_the_output_its_caller_finishes_it_with(gateway: Gateway) -> None:
    gateway.ask("conv-run", "Deploy?", ["Yes", "No"], run_id="run-deploy", phase="deploy")
    assert gateway.handle("conv-run", "2").kind is ReplyKind.SELECTED
    gateway.ask("conv-run", "Why not?", run_id="run-deploy", phase="why")
    assert gateway.handle("conv-run", "wrong version").kind is ReplyKind.ANSWERED
    run = gateway.run("run-deploy")
    assert run is not None and run.answers == {"deploy": "No", "why": "wrong version"} and run.output is None
    for refused, says in ((float("nan"), "not a JSON value"), (object(), "not a JSON value"), ("x" * 256_001, "limit")):
        with pytest.raises(InputError, match=says):
            gateway.finish_run("run-deploy", output=refused)
    finished = gateway.finish_run("run-deploy", output={"kept": ["api"], "skipped": None})
    assert finished.output == {"kept": ["api"], "skipped": None} and gateway.run("run-deploy") == finished
    assert gateway.finish_run("run-deploy", "rolled-back").output == finished.output  # None keeps what was recorded
