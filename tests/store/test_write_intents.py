"""A unit's writes state their intent, and the forms an engine picks follow from the value alone."""

from __future__ import annotations

from datetime import UTC, datetime

from parkgate.core.model import Ask, AskKind, AskStatus, Run, RunStatus
from parkgate.store.writes import AskStep, NewAsk, QueuedCallback, RunChange, StoredReply, Writes

T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)


def _ask(ask_id: str = "a-1", status: AskStatus = AskStatus.OPEN) -> Ask:
    return Ask(ask_id, "c-1", "r-1", AskKind.CHOICE, "Ship it?", ("Yes", "No"), status, T0, T0, 60.0)


def _step() -> AskStep:
    return AskStep(_ask(status=AskStatus.ANSWERED), RunChange("r-1", RunStatus.RUNNING, None, None, T0))


def _park() -> NewAsk:
    return NewAsk(_ask("a-2"), Run("r-1", "c-1", None, RunStatus.RUNNING, None, {}, "a-2", T0, T0))


REPLY = StoredReply("c-1", "m-1", "{}", T0)


def test_the_usual_message_is_one_step_with_its_run_and_reply() -> None:
    assert Writes(steps=(_step(),), reply=REPLY).usual_step() == _step()
    assert Writes(steps=(AskStep(_ask()),)).usual_step() == AskStep(_ask())  # a bounce: no run change


def test_anything_more_than_one_step_is_not_the_usual_message() -> None:
    callback = QueuedCallback("a-1", "https://example.com/hook", "{}", T0)
    run = _park().run
    for writes in (
        Writes(),
        Writes(steps=(_step(), _step())),
        Writes(steps=(_step(),), park=_park()),
        Writes(steps=(_step(),), runs=(run,)),
        Writes(steps=(_step(),), callbacks=(callback,)),
    ):
        assert writes.usual_step() is None, writes


def test_a_lone_park_is_a_new_ask_and_nothing_else() -> None:
    assert Writes(park=_park()).lone_park() == _park()
    assert Writes(steps=(_step(),), park=_park()).lone_park() is None  # a replacement closes one first
    assert Writes(park=_park(), reply=REPLY).lone_park() is None
    assert Writes().lone_park() is None
