"""``@gateway.requires_approval``: a plain function, sync or async, runs only once a person
approves; any other close raises ``Rejected`` with the outcome and the function never runs.
Each call blocks in a thread of its own while the test plays the person."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest

from parkgate import Gateway, ManualClock, Rejected
from parkgate.core.kinds import AskStatus
from parkgate.errors import InputError
from parkgate.store.signal import Change
from polling import until


class Call:
    """Runs ``target`` in a thread and keeps what it returned or raised."""

    def __init__(self, target: Callable[[], Any]) -> None:
        self.result: Any = None
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, args=(target,), daemon=True)
        self.thread.start()

    def _run(self, target: Callable[[], Any]) -> None:
        try:
            self.result = target()
        except BaseException as raised:  # kept for the test to look at
            self.error = raised

    def join(self) -> Call:
        self.thread.join(60)
        assert not self.thread.is_alive(), "the gated call never returned"
        return self


def _parked(gateway: Gateway, conversation: str) -> str:
    until(lambda: gateway.parked(conversation) is not None, 30, "the approval ask")
    ask = gateway.parked(conversation)
    assert ask is not None
    return ask.id


def test_an_approved_call_runs_with_its_arguments(gateway: Gateway) -> None:
    ran: list[str] = []

    @gateway.requires_approval(conversation=lambda path: f"ops-{path}", prompt=lambda path: f"Delete {path}?")
    def delete(path: str) -> str:
        ran.append(path)
        return f"deleted {path}"

    call = Call(lambda: delete("logs"))
    ask_id = _parked(gateway, "ops-logs")
    shown = gateway.get(ask_id)
    assert (shown.prompt, shown.options) == ("Delete logs?", ("Approve", "Reject"))
    assert ran == []  # nothing runs while the person has not answered
    gateway.handle("ops-logs", "1")
    assert call.join().result == "deleted logs" and ran == ["logs"]
    assert delete.__name__ == "delete"


@pytest.mark.parametrize(("close", "outcome"), [("reject", "rejected"), ("cancel", "cancelled"), ("expire", "expired")])
def test_a_call_that_is_not_approved_raises_rejected_and_never_runs(
    gateway: Gateway, clock: ManualClock, close: str, outcome: str
) -> None:
    ran: list[int] = []

    @gateway.requires_approval(conversation="ops", prompt="Restart the cluster?", ttl=600)
    def restart() -> None:
        ran.append(1)

    call = Call(restart)
    ask_id = _parked(gateway, "ops")
    if close == "reject":
        gateway.handle("ops", "2")
    elif close == "cancel":
        gateway.cancel(ask_id)
    else:
        clock.advance(timedelta(seconds=601))
        gateway.signal.changed(Change.ANY)  # the waiting call reads again, at the moved clock
    error = call.join().error
    assert isinstance(error, Rejected) and (error.outcome, error.ask_id) == (outcome, ask_id)
    assert "restart" in str(error) and outcome in str(error)
    assert ran == []
    assert gateway.get(ask_id).status is not AskStatus.OPEN


def test_an_async_function_is_gated_the_same_way(gateway: Gateway) -> None:
    @gateway.requires_approval(conversation="ops-async", prompt="Ship it?")
    async def ship(version: str) -> str:
        await asyncio.sleep(0)
        return f"shipped {version}"

    approved = Call(lambda: asyncio.run(ship("1.2")))
    _parked(gateway, "ops-async")
    gateway.handle("ops-async", "1")
    assert approved.join().result == "shipped 1.2"

    refused = Call(lambda: asyncio.run(ship("1.3")))
    _parked(gateway, "ops-async")
    gateway.handle("ops-async", "Reject")
    error = refused.join().error
    assert isinstance(error, Rejected) and error.outcome == "rejected"


def test_a_bad_decorator_argument_is_refused_at_once(gateway: Gateway) -> None:
    with pytest.raises(InputError, match="conversation"):
        gateway.requires_approval(conversation=42, prompt="Go?")  # type: ignore[arg-type]
    with pytest.raises(InputError, match="ttl"):
        gateway.requires_approval(conversation="ops", prompt="Go?", ttl=-1)
