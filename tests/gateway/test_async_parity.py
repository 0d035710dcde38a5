"""``AsyncGateway`` offers every public ``Gateway`` call, with the same signature, awaited.

The signature check walks Gateway's public methods, so a call added there and not here
fails this file. The behaviour checks run on SQLite.
"""

from __future__ import annotations

import inspect
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from parkgate import AskStatus, AsyncGateway, Gateway, InputError, ManualClock, ReplyKind
from parkgate.cli.demo import UML
from parkgate.workflow import Phase, Workflow

if TYPE_CHECKING:
    from conftest import StoreLocation


#: Gateway's decorator factories: no calls to await. They gate async functions too, and an
#: AsyncGateway's are its ``sync`` gateway's (``@agw.sync.requires_approval(...)``).
DECORATORS = {"requires_approval"}
#: The calls AsyncGateway.handle makes itself: one on the event loop's own thread (it never
#: waits), one a batch at a time on a worker thread.
LOOP_CALLS = {"answer_inline", "record_inline"}


def _public_methods(cls: type) -> list[str]:
    members = {name: value for base in reversed(cls.__mro__[:-1]) for name, value in vars(base).items()}
    return sorted(
        name
        for name, value in members.items()
        if not name.startswith("_") and callable(value) and name not in DECORATORS | LOOP_CALLS
    )


def test_every_public_gateway_call_is_an_async_call_with_the_same_signature() -> None:
    names = _public_methods(Gateway)
    assert {"ask", "handle", "wait", "open_asks", "audit", "run", "finish_run", "register", "close"} <= set(names)
    for name in names:
        ours = getattr(AsyncGateway, name, None)
        assert ours is not None, f"AsyncGateway has no {name}()"
        assert inspect.iscoroutinefunction(ours), f"AsyncGateway.{name} is not awaited"
        assert inspect.signature(ours) == inspect.signature(getattr(Gateway, name)), name
        assert ours.__doc__, f"AsyncGateway.{name} has no docstring"
    assert _public_methods(AsyncGateway) == names, "AsyncGateway has calls Gateway does not"


def test_the_constructor_takes_what_gateway_takes_and_an_existing_gateway() -> None:
    sync = inspect.signature(Gateway.__init__).parameters
    ours = dict(inspect.signature(AsyncGateway.__init__).parameters)
    gateway_param = ours.pop("gateway")
    assert gateway_param.kind is inspect.Parameter.KEYWORD_ONLY and gateway_param.default is None
    assert list(ours) == list(sync)
    for name, parameter in sync.items():
        assert ours[name].kind is parameter.kind, name
        assert ours[name].default == parameter.default, name


async def test_a_store_url_positionally_builds_its_own_gateway(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    clock = ManualClock()
    closed: list[bool] = []
    async with AsyncGateway(f"sqlite:///{tmp_path / 'a.db'}", clock=clock, ttl=60, workflows=[UML]) as agw:
        close = agw.sync.close
        monkeypatch.setattr(agw.sync, "close", lambda: (closed.append(True), close())[-1])
        assert agw.sync.clock is clock and agw.sync.ttl == timedelta(seconds=60)
        asked = await agw.ask("c", "Deploy?", ["Yes", "No"], "choice", run_id="run-1", ttl=timedelta(minutes=5))
        assert asked.kind is ReplyKind.ASKED and asked.run_id == "run-1" and asked.ask_id is not None
        assert (await agw.get(asked.ask_id)).ttl_seconds == 300
        assert (await agw.start("c-uml", "uml")).kind is ReplyKind.ASKED
        assert closed == []
    assert closed == [True], "leaving the block closes the gateway"


async def test_keyword_options_alone_build_a_gateway(tmp_path: Path) -> None:
    agw = AsyncGateway(store_url=f"sqlite:///{tmp_path / 'k.db'}", escalate_after=2)
    try:
        assert agw.sync.escalate_after == 2
        await agw.ask("c", "Q?", ["A"])
        assert (await agw.handle("c", "x")).kind is ReplyKind.RETRY
        assert (await agw.handle("c", "y")).kind is ReplyKind.ESCALATED
    finally:
        await agw.close()


async def test_an_existing_gateway_is_wrapped_positionally_or_by_keyword(gateway: Gateway) -> None:
    assert AsyncGateway(gateway).sync is gateway
    assert AsyncGateway(gateway=gateway).sync is gateway


@pytest.mark.parametrize(
    "make, named",
    [
        (lambda gw: AsyncGateway(gw, gateway=gw), "gateway"),
        (lambda gw: AsyncGateway(gw, ttl=60), "ttl"),
        (lambda gw: AsyncGateway(gateway=gw, store_url="sqlite:///x.db"), "store_url"),
        (lambda gw: AsyncGateway(gateway="sqlite:///x.db"), "gateway"),
        (lambda gw: AsyncGateway(12), "store_url"),
    ],
)
def test_a_mixed_up_constructor_call_is_named(gateway: Gateway, make: object, named: str) -> None:
    with pytest.raises(InputError, match=named):
        make(gateway)  # type: ignore[operator]


async def test_every_call_through_the_async_gateway(gateway: Gateway, store_location: StoreLocation) -> None:
    agw = AsyncGateway(gateway)
    extra = Workflow("one", [Phase("only", "Why?")], finish=lambda answers: f"got {answers['only']}")
    await agw.register(extra)
    assert "one" in gateway.workflows

    asked = await agw.ask("c1", "Deploy?", ["Ship  it", "Hold"], run_id="run-a", ttl=600, default="Ship  it", phase="p")
    assert asked.ask_id is not None
    ask = await agw.get(asked.ask_id)
    assert ask.default == "Ship it" and ask.phase == "p" and ask.run_id == "run-a"
    assert [a.id for a in await agw.audit()] == [asked.ask_id]
    assert [a.id for a in await agw.open_asks(1)] == [asked.ask_id]
    run = await agw.run("run-a")
    assert run is not None and run.pending_ask_id == asked.ask_id

    waited = await agw.wait(asked.ask_id, timedelta(milliseconds=10))
    assert waited.status is AskStatus.OPEN
    expired = await agw.expire(asked.ask_id)
    assert expired.status is AskStatus.EXPIRED and expired.answer == "Ship it"
    await agw.finish_run("run-a", "done")
    finished = await agw.run("run-a")
    assert finished is not None and finished.status == "complete"

    parked = await agw.ask_from_text("c2", "[[ask text]]\nWhy?\n[[/ask]]", run_id="run-b", ttl=60, replace=False)
    assert parked.kind is ReplyKind.ASKED and parked.run_id == "run-b" and parked.ask_id is not None
    assert (await agw.cancel(parked.ask_id)).status is AskStatus.CANCELLED
    started = await agw.start("c3", "one", replace=False, run_id="run-c")
    assert started.run_id == "run-c"
    answered = await agw.handle("c3", "because", "m-1")
    assert answered.kind is ReplyKind.ANSWERED


async def test_async_arguments_are_checked_like_the_sync_ones(gateway: Gateway) -> None:
    agw = AsyncGateway(gateway)
    asked = await agw.ask("c", "Q?", ["A"])
    assert asked.ask_id is not None
    with pytest.raises(InputError, match="timeout"):
        await agw.wait(asked.ask_id, "abc")  # type: ignore[arg-type]
    with pytest.raises(InputError, match="timeout"):
        await agw.wait(asked.ask_id, None)  # type: ignore[arg-type]
    with pytest.raises(InputError, match="limit"):
        await agw.open_asks("3")  # type: ignore[arg-type]
    with pytest.raises(InputError, match="replace"):
        await agw.ask("c", "Q?", ["A"], replace="no")  # type: ignore[arg-type]
    assert (await agw.get(asked.ask_id)).is_open
