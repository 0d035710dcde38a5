"""Hostile input against parked choice and text asks, with a model spy behind the gateway.

The surface under test is the one every integration writes: call the gateway first,
and hand the message to the model only when the reply is ``pass``. The spy records
every model call together with the asks open in that conversation at that moment.

Budget (the suite runs inside the README test command): 102,000 seeded inputs and a
hypothesis share run against the pure decision path (``check_inbound_text`` then
``machine.step``, exactly what ``Gateway.handle`` does inside its transaction); a
few thousand seeded inputs plus a hypothesis share run through a real ``Gateway`` on
SQLite. Every input is checked against the oracle in :mod:`.hostile`.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from parkgate import Gateway
from parkgate.clock import ManualClock
from parkgate.core import machine
from parkgate.core.kinds import AskKind, AskStatus, ReplyKind
from parkgate.core.model import Ask, Reply
from parkgate.errors import InputError
from parkgate.gateway.checks import MAX_MESSAGE_CHARS, check_inbound_text

from ._support import T0, Driver, ModelSpy, StoreSpec
from .hostile import OPTION_SETS, Expect, expect, hostile_text, random_inputs

ASK_SHAPES: tuple[tuple[str, ...], ...] = (*OPTION_SETS, ())  # () is a text ask
BULK_PER_SHAPE = 17_000  # x 6 shapes = 102,000 inputs on the pure path
GATEWAY_PER_SHAPE = 450  # x 6 shapes = 2,700 inputs through the Gateway on SQLite
_EXAMPLES = itertools.count()


def _new_ask(options: Sequence[str], n: int) -> Ask:
    return Ask(
        id=f"ask-{n}",
        conversation_id="c",
        run_id="r",
        kind=AskKind.CHOICE if options else AskKind.TEXT,
        prompt="Which one?",
        options=tuple(options),
        status=AskStatus.OPEN,
        asked_at=T0,
        last_touched=T0,
        ttl_seconds=6 * 3600,
    )


def _check_reply(options: Sequence[str], text: str, want: Expect, misses: int, reply: Reply | machine.Step) -> int:
    """Assert one reply against the oracle; return the miss count after it."""
    assert isinstance(reply.kind, ReplyKind) and isinstance(reply.text, str)
    assert reply.kind is not ReplyKind.PASS, f"an open ask let {text[:80]!r} through as pass"
    assert reply.text, f"{reply.kind} came with no text"
    if want.kind is None:
        misses += 1
        expected = ReplyKind.ESCALATED if misses >= machine.DEFAULT_ESCALATE_AFTER else ReplyKind.RETRY
        assert reply.kind is expected, f"{text[:80]!r}: {reply.kind} (want a miss: {expected})"
        return misses
    assert reply.kind is want.kind, f"{text[:80]!r}: {reply.kind}, want {want.kind}"
    if want.kind is ReplyKind.SELECTED:
        assert reply.option_index == want.option_index
        assert reply.answer == options[(want.option_index or 0) - 1]
    elif want.kind is ReplyKind.ANSWERED:
        assert reply.answer == text  # the text as given, not normalised
    else:  # re-shown (not a miss) or cancelled (the count is kept on the closed ask)
        return misses
    return 0  # a selection or an answer resets the counter


def _run_pure(options: Sequence[str], inputs: Sequence[str], spy: ModelSpy) -> Counter[str]:
    """The decision path of ``Gateway.handle`` without a store, behind a model-spy surface.

    Returns how many inputs ended in each outcome ("refused" for an InputError).
    """
    serial = itertools.count()
    ask = _new_ask(options, next(serial))
    misses = 0
    seen: Counter[str] = Counter()
    for text in inputs:
        want = expect(options, text, MAX_MESSAGE_CHARS)
        try:
            message = check_inbound_text(text)
        except InputError:
            assert want.refused, f"{text[:80]!r} was refused"
            seen["refused"] += 1
            continue  # refused before anything is read: the ask is untouched
        assert not want.refused, f"{text[:80]!r} should have been refused"
        result = machine.step(ask, message, T0)
        if result.kind is ReplyKind.PASS:
            spy(ask.conversation_id, text)
        misses = _check_reply(options, text, want, misses, result)
        seen[result.kind.value] += 1
        assert result.ask.mismatches == misses
        if result.ask.is_open:
            ask = result.ask
        else:
            assert result.kind in (ReplyKind.SELECTED, ReplyKind.ANSWERED, ReplyKind.CANCELLED)
            ask, misses = _new_ask(options, next(serial)), 0
    return seen


def test_102k_seeded_hostile_inputs_never_reach_the_model_and_only_exact_selections_select() -> None:
    spy = ModelSpy(lambda conversation: ["(an ask is always open here)"])
    outcomes: Counter[str] = Counter()
    for shape, options in enumerate(ASK_SHAPES):
        outcomes += _run_pure(options, list(random_inputs(1000 + shape, BULK_PER_SHAPE, options)), spy)
    assert sum(outcomes.values()) >= 100_000
    assert spy.calls == []
    # Every door was exercised, and most hostile input is (rightly) a miss.
    kinds = {"refused", "selected", "answered", "retry", "escalated", "reshown", "cancelled"}
    assert set(outcomes) == kinds, outcomes
    assert outcomes["retry"] + outcomes["escalated"] > outcomes["selected"]


@settings(max_examples=300, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(shape=st.sampled_from(ASK_SHAPES), inputs=st.lists(hostile_text, min_size=1, max_size=25))
def test_hypothesis_hostile_inputs_on_the_pure_path(shape: tuple[str, ...], inputs: list[str]) -> None:
    spy = ModelSpy(lambda conversation: ["(an ask is always open here)"])
    _run_pure(shape, inputs, spy)
    assert spy.calls == []


class _GatewayRun:
    """Hostile messages through a real Gateway; re-parks whenever an ask closes."""

    def __init__(self, gateway: Gateway) -> None:
        self.gateway = gateway
        self.spy = ModelSpy(lambda conv: [a.id for a in gateway.audit() if a.conversation_id == conv])
        self.driver = Driver(gateway, self.spy)
        self.serial = itertools.count()
        self.model_calls_expected = 0

    def park(self, conversation: str, options: Sequence[str]) -> str:
        if options:
            reply = self.gateway.ask(conversation, "Which one?", list(options))
        else:
            reply = self.gateway.ask(conversation, "Describe it.", kind="text")
        assert reply.kind is ReplyKind.ASKED and reply.parked and reply.ask_id
        return reply.ask_id

    def run(self, conversation: str, options: Sequence[str], inputs: Sequence[str]) -> int:
        ask_id = self.park(conversation, options)
        misses = 0
        seen = 0
        for text in inputs:
            seen += 1
            want = expect(options, text, MAX_MESSAGE_CHARS)
            before = self.gateway.get(ask_id)
            outcome = self.driver.deliver(conversation, text, message_id=f"{conversation}-{next(self.serial)}")
            if isinstance(outcome, InputError):
                assert want.refused, f"{text[:80]!r} was refused: {outcome}"
                assert self.gateway.get(ask_id) == before, "a refused message changed the ask"
                continue
            assert not want.refused, f"{text[:80]!r} should have been refused"
            assert outcome.ask_id == ask_id
            misses = _check_reply(options, text, want, misses, outcome)
            stored = self.gateway.get(ask_id)
            assert stored.mismatches == misses or not stored.is_open
            assert outcome.parked is stored.is_open
            if stored.is_open:
                continue
            # Nothing is parked now: this message is the model's, and the spy sees no open ask.
            passed = self.driver.deliver(conversation, "hello, model")
            assert isinstance(passed, Reply) and passed.kind is ReplyKind.PASS and not passed.parked
            self.model_calls_expected += 1
            ask_id, misses = self.park(conversation, options), 0
        return seen


def test_hostile_inputs_through_the_gateway_on_sqlite(sqlite_spec: StoreSpec) -> None:
    gateway = sqlite_spec.gateway(clock=ManualClock(T0))
    try:
        run = _GatewayRun(gateway)
        total = 0
        for shape, options in enumerate(ASK_SHAPES):
            total += run.run(f"hostile-{shape}", options, list(random_inputs(2000 + shape, GATEWAY_PER_SHAPE, options)))
        assert total == GATEWAY_PER_SHAPE * len(ASK_SHAPES)
        assert run.spy.calls_while_open() == []
        assert len(run.spy.calls) == run.model_calls_expected > 0  # the spy does see pass traffic
    finally:
        gateway.close()


@settings(
    max_examples=60,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(shape=st.sampled_from(ASK_SHAPES), inputs=st.lists(hostile_text, min_size=1, max_size=10))
def test_hypothesis_hostile_inputs_through_the_gateway(
    tmp_path: Path, shape: tuple[str, ...], inputs: list[str]
) -> None:
    spec = StoreSpec("sqlite", f"sqlite:///{tmp_path / 'hostile.db'}")
    gateway = spec.gateway(clock=ManualClock(T0))
    try:
        run = _GatewayRun(gateway)
        conversation = f"hyp-{next(_EXAMPLES)}"
        run.run(conversation, shape, inputs)
        assert run.spy.calls_while_open() == []
        assert len(run.spy.calls) == run.model_calls_expected
    finally:
        gateway.close()


#: The normalisation decisions docs/matching.md documents, each checked through a Gateway.
DECISIONS: tuple[tuple[tuple[str, ...], str, ReplyKind, int | None], ...] = (
    (("Sequence", "Class", "Stop"), "２", ReplyKind.SELECTED, 2),  # fullwidth digit: NFKC makes it "2"
    (("Sequence", "Class", "Stop"), "²", ReplyKind.SELECTED, 2),  # superscript two: NFKC makes it "2" too
    (("Sequence", "Class", "Stop"), "٢", ReplyKind.RETRY, None),  # Arabic-Indic digit: not ASCII after NFKC
    (("Sequence", "Class", "Stop"), "२", ReplyKind.RETRY, None),  # Devanagari digit
    (("Sequence", "Class", "Stop"), "02", ReplyKind.RETRY, None),  # leading zero: not canonical
    (("Sequence", "Class", "Stop"), "+2", ReplyKind.RETRY, None),
    (("Sequence", "Class", "Stop"), "1e0", ReplyKind.RETRY, None),
    (("Sequence", "Class", "Stop"), "2.", ReplyKind.RETRY, None),
    (("Sequence", "Class", "Stop"), "⑵", ReplyKind.RETRY, None),  # NFKC gives "(2)": not a bare number
    (("Sequence", "Class", "Stop"), "2\ufe0f\u20e3", ReplyKind.RETRY, None),  # keycap emoji
    (("Sequence", "Class", "Stop"), "  cLaSs\t", ReplyKind.SELECTED, 2),  # case and outer spacing fold
    (("Sequence", "Class", "Stop"), "Ｓｔｏｐ", ReplyKind.SELECTED, 3),  # fullwidth letters fold to the label
    (("Sequence", "Class", "Stop"), "Cl\u0430ss", ReplyKind.RETRY, None),  # Cyrillic a: a confusable is a miss
    (("Sequence", "Class", "Stop"), "Cla\u200bss", ReplyKind.RETRY, None),  # zero-width space is not removed
    (("Sequence", "Class", "Stop"), "\u200fClass", ReplyKind.RETRY, None),  # nor is a direction mark
    (("Sequence", "Class", "Stop"), "stop", ReplyKind.SELECTED, 3),  # a label beats the bare control word
    (("Sequence", "Class", "Stop"), "/stop", ReplyKind.CANCELLED, None),  # the slash form is always the door
    (("Sequence", "Class", "Stop"), "／cancel", ReplyKind.CANCELLED, None),  # fullwidth slash: NFKC makes it "/"
    (("Sequence", "Class", "Stop"), "//cancel", ReplyKind.RETRY, None),  # exactly one slash is stripped
    (("Sequence", "Class", "Stop"), "/ cancel", ReplyKind.RETRY, None),
    (("Sequence", "Class", "Stop"), "please cancel", ReplyKind.RETRY, None),  # control words inside a sentence
    (("3", "10", "Other"), "3", ReplyKind.SELECTED, 3),  # a bare number is a position first
    (("3", "10", "Other"), "10", ReplyKind.SELECTED, 2),  # no option 10: the label "10" selects
    ((), "cancel", ReplyKind.ANSWERED, None),  # in a text ask a bare control word is data
    ((), "/cancel", ReplyKind.CANCELLED, None),
    ((), "\u200b", ReplyKind.ANSWERED, None),  # invisible-only text is not "empty": it is taken as given
    ((), " \t\u3000", ReplyKind.RETRY, None),  # whitespace-only (any Unicode space) is a miss
)


def test_the_documented_normalisation_decisions_hold_through_the_gateway(sqlite_spec: StoreSpec) -> None:
    gateway = sqlite_spec.gateway(clock=ManualClock(T0))
    try:
        for n, (options, text, kind, index) in enumerate(DECISIONS):
            conversation = f"decision-{n}"
            if options:
                gateway.ask(conversation, "Which one?", list(options))
            else:
                gateway.ask(conversation, "Describe it.", kind="text")
            reply = gateway.handle(conversation, text)
            assert (reply.kind, reply.option_index) == (kind, index), f"{text!r} in {options}"
            if kind is ReplyKind.ANSWERED:
                assert reply.answer == text
    finally:
        gateway.close()
