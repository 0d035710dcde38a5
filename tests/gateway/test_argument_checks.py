"""Every public Gateway call checks its arguments: a wrong type or value is an InputError.

The error names the argument and is raised before anything is read or written, so an
open ask stays exactly as it was.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from parkgate import AskStatus, Gateway, InputError, ManualClock, ReplyKind, StoppingPointError
from parkgate.cli.demo import UML

if TYPE_CHECKING:
    from conftest import StoreLocation


def _tables(location: StoreLocation) -> tuple[object, ...]:
    return (
        location.raw_query("SELECT id, status, mismatches, last_touched, phase, answer FROM asks ORDER BY id"),
        location.raw_query("SELECT id, status, outcome, pending_ask_id FROM runs ORDER BY id"),
        location.raw_query("SELECT count(*) FROM inbound_messages"),
    )


@pytest.fixture
def parked(gateway: Gateway) -> str:
    """A choice ask open in conversation ``conv`` (its run is ``run-1``)."""
    reply = gateway.ask("conv", "Deploy?", ["Yes", "No"], run_id="run-1")
    assert reply.ask_id is not None
    return reply.ask_id


Call = Callable[[Gateway, str], object]
#: (what, the call given the gateway and the open ask's id, a word the message must hold)
BAD_CALLS: list[tuple[str, Call, str]] = [
    ("wait with a string timeout", lambda gw, ask: gw.wait(ask, "abc"), "timeout"),  # type: ignore[arg-type]
    ("wait with no timeout", lambda gw, ask: gw.wait(ask, None), "timeout"),  # type: ignore[arg-type]
    ("wait with a bool timeout", lambda gw, ask: gw.wait(ask, True), "timeout"),
    ("wait with a NaN timeout", lambda gw, ask: gw.wait(ask, float("nan")), "timeout"),
    ("wait with an endless timeout", lambda gw, ask: gw.wait(ask, float("inf")), "timeout"),
    ("wait with a bad ask id", lambda gw, ask: gw.wait("", 1), "ask_id"),
    ("open_asks with a string limit", lambda gw, ask: gw.open_asks("3"), "limit"),  # type: ignore[arg-type]
    ("open_asks with a bool limit", lambda gw, ask: gw.open_asks(True), "limit"),
    ("open_asks with a zero limit", lambda gw, ask: gw.open_asks(0), "limit"),
    ("open_asks with a negative limit", lambda gw, ask: gw.open_asks(-1), "limit"),
    ("open_asks with a float limit", lambda gw, ask: gw.open_asks(2.0), "limit"),  # type: ignore[arg-type]
    ("audit with a string limit", lambda gw, ask: gw.audit("3"), "limit"),  # type: ignore[arg-type]
    ("ask with a numeric phase", lambda gw, ask: gw.ask("c2", "Q?", ["A"], phase=5), "phase"),  # type: ignore[arg-type]
    ("ask with an empty phase", lambda gw, ask: gw.ask("c2", "Q?", ["A"], phase=""), "phase"),
    ("ask with replace='no'", lambda gw, ask: gw.ask("conv", "Q?", ["A"], replace="no"), "replace"),  # type: ignore[arg-type]
    ("ask with replace=1", lambda gw, ask: gw.ask("conv", "Q?", ["A"], replace=1), "replace"),  # type: ignore[arg-type]
    ("ask with a string ttl", lambda gw, ask: gw.ask("c2", "Q?", ["A"], ttl="60"), "ttl"),  # type: ignore[arg-type]
    ("ask with a zero ttl", lambda gw, ask: gw.ask("c2", "Q?", ["A"], ttl=0), "ttl"),
    ("ask with a negative ttl", lambda gw, ask: gw.ask("c2", "Q?", ["A"], ttl=timedelta(seconds=-1)), "ttl"),
    ("ask with a bool ttl", lambda gw, ask: gw.ask("c2", "Q?", ["A"], ttl=True), "ttl"),
    ("ask with a NaN ttl", lambda gw, ask: gw.ask("c2", "Q?", ["A"], ttl=float("nan")), "ttl"),
    ("ask with a bytes default", lambda gw, ask: gw.ask("c2", "Q?", kind="text", default=b"x"), "default"),  # type: ignore[arg-type]
    ("ask with a numeric default", lambda gw, ask: gw.ask("c2", "Q?", ["1"], default=1), "default"),  # type: ignore[arg-type]
    ("ask with a blank text default", lambda gw, ask: gw.ask("c2", "Q?", kind="text", default="  "), "default"),
    (
        "ask with a bytes callback_url",
        lambda gw, ask: gw.ask("c2", "Q?", ["A"], callback_url=b"http://h/x"),  # type: ignore[arg-type]
        "callback_url",
    ),
    ("ask with a numeric run_id", lambda gw, ask: gw.ask("c2", "Q?", ["A"], run_id=5), "run_id"),  # type: ignore[arg-type]
    (
        "ask_from_text with a numeric run_id",
        lambda gw, ask: gw.ask_from_text("c2", "[[ask text]]\nWhy?\n[[/ask]]", run_id=5),  # type: ignore[arg-type]
        "run_id",
    ),
    (
        "ask_from_text with replace='yes'",
        lambda gw, ask: gw.ask_from_text("conv", "[[ask text]]\nWhy?\n[[/ask]]", replace="yes"),  # type: ignore[arg-type]
        "replace",
    ),
    ("start with replace='no'", lambda gw, ask: gw.start("conv", "uml", replace="no"), "replace"),  # type: ignore[arg-type]
    ("start with a list as workflow", lambda gw, ask: gw.start("c2", ["uml"]), "workflow"),  # type: ignore[arg-type]
    ("start with a numeric run_id", lambda gw, ask: gw.start("c2", "uml", run_id=7), "run_id"),  # type: ignore[arg-type]
    ("run with a numeric id", lambda gw, ask: gw.run(5), "run_id"),  # type: ignore[arg-type]
    ("finish_run with a numeric id", lambda gw, ask: gw.finish_run(5), "run_id"),  # type: ignore[arg-type]
    ("finish_run with a numeric outcome", lambda gw, ask: gw.finish_run("run-1", 3), "outcome"),  # type: ignore[arg-type]
    ("record_run with a numeric id", lambda gw, ask: gw.record_run(5, "c2", "done"), "run_id"),  # type: ignore[arg-type]
    ("record_run with an empty conversation", lambda gw, ask: gw.record_run("r2", "", "done"), "conversation_id"),
    ("record_run with a numeric outcome", lambda gw, ask: gw.record_run("r2", "c2", 3), "outcome"),  # type: ignore[arg-type]
    ("register something else", lambda gw, ask: gw.register("uml"), "workflow"),  # type: ignore[arg-type]
]


@pytest.mark.parametrize("what, call, named", BAD_CALLS, ids=[case[0] for case in BAD_CALLS])
def test_a_bad_argument_is_an_input_error_and_changes_nothing(
    gateway: Gateway, store_location: StoreLocation, parked: str, what: str, call: Call, named: str
) -> None:
    before = _tables(store_location)
    with pytest.raises(InputError) as raised:
        call(gateway, parked)
    assert named in str(raised.value), f"{what}: the error does not name {named!r}: {raised.value}"
    assert _tables(store_location) == before
    assert gateway.get(parked).status is AskStatus.OPEN


@pytest.mark.parametrize(
    "options, named",
    [
        ({"escalate_after": "3"}, "escalate_after"),
        ({"escalate_after": 2.5}, "escalate_after"),
        ({"escalate_after": True}, "escalate_after"),
        ({"escalate_after": 0}, "escalate_after"),
        ({"ttl": "6h"}, "ttl"),
        ({"ttl": 0}, "ttl"),
        ({"ttl": -60}, "ttl"),
        ({"workflows": ["uml"]}, "workflow"),
    ],
)
def test_bad_gateway_options_are_input_errors_before_a_store_is_opened(
    tmp_path: Path, options: dict[str, Any], named: str
) -> None:
    path = tmp_path / "never.db"
    with pytest.raises(InputError, match=named):
        Gateway(f"sqlite:///{path}", **options)
    assert not path.exists()


def test_a_store_url_that_is_not_a_string_is_named(gateway: Gateway) -> None:
    with pytest.raises(InputError, match="store_url"):
        Gateway(gateway)  # type: ignore[arg-type]


def test_good_arguments_still_work(gateway: Gateway, parked: str) -> None:
    assert gateway.wait(parked, timedelta(0)).status is AskStatus.OPEN
    assert gateway.wait(parked, 0).is_open
    assert gateway.wait(parked, -1).is_open  # a timeout of 0 or less reads once, without waiting
    assert [ask.id for ask in gateway.open_asks(1)] == [parked]
    assert [ask.id for ask in gateway.audit(None)] == [parked]
    replaced = gateway.ask("conv", "Again?", ["A"], replace=True, phase="step-1", ttl=timedelta(minutes=5))
    assert replaced.ask_id is not None
    again = gateway.get(replaced.ask_id)
    assert again.phase == "step-1" and again.ttl_seconds == 300
    started = gateway.start("conv-uml", "uml", replace=False, run_id="run-uml")
    assert started.kind is ReplyKind.ASKED and started.run_id == "run-uml"
    gateway.finish_run("run-1", "done")
    gateway.register(UML)


def test_a_default_matches_its_option_after_the_same_tidying(gateway: Gateway) -> None:
    """Labels are whitespace-folded when the ask is made: its default is folded likewise."""
    reply = gateway.ask("conv-d", "Which?", ["Use  case", "Class"], default="Use  case")
    assert reply.kind is ReplyKind.ASKED and reply.ask_id is not None
    ask = gateway.get(reply.ask_id)
    assert ask.options == ("Use case", "Class")
    assert ask.default == "Use case"
    expired = gateway.expire(reply.ask_id)
    assert expired.status is AskStatus.EXPIRED and expired.answer == "Use case"
    # Tidying is not matching: case and other spellings are still not options.
    for wrong in ["use case", "Use", "1"]:
        with pytest.raises(InputError, match="not one of the options"):
            gateway.ask("conv-e", "Which?", ["Use  case", "Class"], default=wrong)


def test_a_default_given_tidy_for_an_untidy_label_is_accepted(gateway: Gateway) -> None:
    reply = gateway.ask("conv-t", "Which?", [" Use\tcase "], default="Use case")
    assert reply.ask_id is not None
    assert gateway.get(reply.ask_id).default == "Use case"


def test_a_text_default_is_kept_as_given(gateway: Gateway) -> None:
    reply = gateway.ask("conv-x", "Why?", kind="text", default="  no  reason ")
    assert reply.ask_id is not None
    assert gateway.get(reply.ask_id).default == "  no  reason "


def test_options_keep_their_own_errors(gateway: Gateway) -> None:
    with pytest.raises(StoppingPointError):
        gateway.ask("conv-o", "Which?", [])


def test_a_ttl_longer_than_the_limit_is_refused_and_the_limit_is_exact(gateway: Gateway, clock: ManualClock) -> None:
    from parkgate.gateway.checks import MAX_TTL

    with pytest.raises(InputError, match="longer than the limit"):
        gateway.ask("long", "Q?", ["A"], ttl=MAX_TTL + timedelta(microseconds=1))
    assert gateway.handle("long", "A").kind is ReplyKind.PASS  # nothing was parked
    # At the limit the boundary is still exact to the microsecond.
    ask_id = gateway.ask("edge", "Q?", ["A"], ttl=MAX_TTL).ask_id or ""
    clock.advance(MAX_TTL)
    assert gateway.get(ask_id).is_open
    clock.advance(timedelta(microseconds=1))
    assert not gateway.get(ask_id).is_open


def test_one_miss_escalating_says_one_try(gateway: Gateway) -> None:
    strict = Gateway(store=gateway.store, clock=gateway.clock, escalate_after=1)
    strict.ask("c", "Pick", ["A", "B"])
    first = strict.handle("c", "nope")
    assert first.kind is ReplyKind.ESCALATED and "(1 try)" in first.text
    assert "(2 tries)" in strict.handle("c", "nope").text
    strict.ask("t", "Why?")
    assert "(1 try)" in strict.handle("t", " ").text
