"""The exhaustive check of the pure machine: it covers every state, finds nothing, and can fail.

The expected counts are computed here from the dimensions the contract names, not read
back from the checker: if the enumeration silently dropped a class, a mismatch count
or an ask kind, the counts would not match.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

import pytest

from parkgate import prove
from parkgate.checks import check_inbound_text
from parkgate.core import machine, menu
from parkgate.core.expect import Expect
from parkgate.core.kinds import AskKind, ReplyKind
from parkgate.core.menu import Match, Verdict
from parkgate.core.model import Ask, Step
from parkgate.core.phrases import CANCEL_WORDS, CONTROL_WORDS, RESHOW_WORDS
from parkgate.errors import InputError

# The dimensions, as docs/contract.md states them.
CONTROL_WORD_COUNT = 7  # menu, options, cancel, exit, quit, stop, nevermind
OPTION_COUNT = 3  # every enumerated menu has three options
COLLIDING_LABELS = 2  # the collision menu: one cancel word and one re-show word as labels
# Concrete inputs per class (digits: 1..n; out of range: 0 and n+1; bare + slash: every word).
FREE_TEXTS = 2  # a sentence, and a sentence with a control word inside
BLANKS = 3  # "", ASCII whitespace, Unicode whitespace
NON_TEXTS = 2  # bytes that are not UTF-8, a string with NUL


def inputs_per_state(kind: str, collision: bool) -> int:
    """How many inputs one state of this ask receives, from the dimensions alone."""
    common = OPTION_COUNT + 2 + 2 * CONTROL_WORD_COUNT + FREE_TEXTS + BLANKS + NON_TEXTS
    if kind == "choice":
        labels = OPTION_COUNT - COLLIDING_LABELS if collision else OPTION_COUNT
        return common + labels + (COLLIDING_LABELS if collision else 0)
    return common + (COLLIDING_LABELS if collision else 0)  # text: an answer that is a control word


def expected_counts(escalate_after: int) -> tuple[int, int]:
    mismatch_counts = escalate_after + 3  # 0 .. N+2
    expiries = 2
    configs = [(kind, collision) for kind in ("choice", "text") for collision in (False, True)]
    states = len(configs) * mismatch_counts * expiries
    transitions = sum(inputs_per_state(k, c) for k, c in configs) * mismatch_counts * expiries
    return states, transitions


@pytest.mark.parametrize("escalate_after", [1, 3, 5])
def test_every_state_is_checked_and_nothing_fails(escalate_after: int) -> None:
    report = prove.check(escalate_after)
    assert report.failures == []
    states, transitions = expected_counts(escalate_after)
    assert (report.states, report.transitions) == (states, transitions)
    assert report.render().splitlines()[-1] == f"checked {states} states, {transitions} transitions, 0 failures"


def test_the_default_run_counts() -> None:
    # 4 asks x 6 counts x 2 expiries; (29 + 29 + 26 + 28) inputs x 12.
    report = prove.check()
    assert (report.states, report.transitions) == (48, 1344)


def test_the_enumeration_spans_every_dimension() -> None:
    n = 3
    cases = prove.enumerate_cases(n)
    assert {c.ask_kind for c in cases} == {AskKind.CHOICE, AskKind.TEXT}
    assert {c.collision for c in cases} == {False, True}
    assert {c.mismatches for c in cases} == set(range(n + 3))
    assert {c.expired for c in cases} == {False, True}
    for kind in (AskKind.CHOICE, AskKind.TEXT):
        for collision in (False, True):
            for mismatches in range(n + 3):
                for expired in (False, True):
                    messages = {c.message for c in cases if c.state == (kind, collision, mismatches, expired)}
                    assert {"1", "2", "3", "0", "4"} <= messages
                    assert set(CONTROL_WORDS) <= messages
                    assert {"/" + word for word in CONTROL_WORDS} <= messages
                    assert "" in messages
                    assert any(isinstance(m, bytes) for m in messages)
                    assert any(isinstance(m, str) and "\x00" in m for m in messages)
                    if kind is AskKind.CHOICE and collision:
                        options = prove.COLLIDING_OPTIONS
                        assert any(o.casefold() in CANCEL_WORDS for o in options)
                        assert any(o.casefold() in RESHOW_WORDS for o in options)
                        assert set(options) <= messages
    classes = {(c.ask_kind, c.collision, c.input_class) for c in cases}
    for kind in (AskKind.CHOICE, AskKind.TEXT):
        for cls in prove.InputClass:
            applicable = cls is not prove.InputClass.LABEL or kind is AskKind.CHOICE
            if cls is prove.InputClass.LABEL_CONTROL:
                assert (kind, True, cls) in classes and (kind, False, cls) not in classes
            elif applicable:
                assert (kind, False, cls) in classes and (kind, True, cls) in classes


def test_the_table_shows_the_escalation_step_at_miss_n() -> None:
    rows = prove.check(3).rows
    row = next(r for r in rows if r[:4] == ("choice", "no", "free text", "no"))
    assert row[4:] == ("0-5", "retry at 0-1, escalated at 2-5")
    text_row = next(r for r in rows if r[:4] == ("text", "yes", "empty/whitespace", "no"))
    assert text_row[5] == "retry at 0-1, escalated at 2-5"
    collide = next(r for r in rows if r[:4] == ("choice", "yes", "label = control word", "no"))
    assert collide[5] == "selected"
    expired = [r for r in rows if r[3] == "yes" and r[2] != "non-text"]
    assert expired and all(r[5] == "pass" for r in expired)
    refused = [r for r in rows if r[2] == "non-text"]
    assert refused and all(r[5] == prove.REFUSED for r in refused)
    assert len(rows) == len({r[:4] for r in rows})


def test_render_is_a_plain_table_with_the_closing_line() -> None:
    report = prove.check(3)
    text = report.render()
    lines = text.splitlines()
    assert lines[0].split() == ["ask", "collision", "input", "class", "expired", "mismatches", "result"]
    assert set(lines[1].replace(" ", "")) == {"-"}
    assert len(lines) == 2 + len(report.rows) + 2
    assert lines[-1] == "checked 48 states, 1344 transitions, 0 failures"
    assert "failures:" not in text


def test_non_text_is_refused_before_the_machine_in_the_pure_check() -> None:
    for case in prove.enumerate_cases():
        if case.input_class is prove.InputClass.NON_TEXT:
            with pytest.raises(InputError):
                check_inbound_text(case.message)


# -- the checker itself can fail ------------------------------------------------------

REAL_STEP = machine.step
REAL_MATCH = machine.match
StepFn = Callable[[Ask, str, datetime, int], Step]


def escalate_one_late(ask: Ask, text: str, now: datetime, escalate_after: int = 3) -> Step:
    return REAL_STEP(ask, text, now, escalate_after + 1)


def menu_counts_a_miss(ask: Ask, text: str, now: datetime, escalate_after: int = 3) -> Step:
    result = REAL_STEP(ask, text, now, escalate_after)
    if result.kind is ReplyKind.RESHOWN:
        return Step(result.kind, result.text, result.ask.evolve(mismatches=result.ask.mismatches + 1))
    return result


def ignores_expiry(ask: Ask, text: str, now: datetime, escalate_after: int = 3) -> Step:
    return REAL_STEP(ask.evolve(last_touched=now), text, now, escalate_after)


def passes_on_a_miss(ask: Ask, text: str, now: datetime, escalate_after: int = 3) -> Step:
    result = REAL_STEP(ask, text, now, escalate_after)
    if result.kind in (ReplyKind.RETRY, ReplyKind.ESCALATED):
        return Step(ReplyKind.PASS, "", result.ask)
    return result


def cancel_stays_parked(ask: Ask, text: str, now: datetime, escalate_after: int = 3) -> Step:
    result = REAL_STEP(ask, text, now, escalate_after)
    if result.kind is ReplyKind.CANCELLED:
        return Step(result.kind, result.text, ask.evolve(last_touched=now))
    return result


@pytest.mark.parametrize(
    ("broken", "symptom"),
    [
        (escalate_one_late, "property 3"),
        (menu_counts_a_miss, "property 4"),
        (ignores_expiry, "property 6"),
        (passes_on_a_miss, "property 1"),
        (cancel_stays_parked, "property 2"),
    ],
)
def test_a_broken_machine_is_caught(monkeypatch: pytest.MonkeyPatch, broken: StepFn, symptom: str) -> None:
    monkeypatch.setattr(machine, "step", broken)
    report = prove.check(3)
    assert report.failures, "the checker passed a broken machine"
    assert any(symptom in failure for failure in report.failures)
    text = report.render()
    assert "failures:" in text
    assert text.splitlines()[-1] == f"checked 48 states, 1344 transitions, {len(report.failures)} failures"


def test_a_late_escalation_is_reported_exactly_at_miss_n(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(machine, "step", escalate_one_late)
    failures = prove.check(3).failures
    property_3 = [f for f in failures if "property 3" in f]
    # Only a miss from count 2 (the 3rd miss) is wrong; every such case says so.
    assert property_3 and all("mismatches=2," in f and "miss 3 of N=3 got retry" in f for f in property_3)


def test_a_label_that_loses_to_a_control_word_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    def control_words_first(
        kind: AskKind, options: tuple[str, ...] | list[str], text: str, expect: Expect | None = None
    ) -> Match:
        word = menu.normalise(text).removeprefix("/")
        if word in CANCEL_WORDS:
            return Match(Verdict.CANCEL)
        return REAL_MATCH(kind, options, text, expect)

    monkeypatch.setattr(machine, "match", control_words_first)
    failures = prove.check(3).failures
    assert any("label = control word 'Cancel': reply kind expected 'selected', got 'cancelled'" in f for f in failures)


def test_non_text_reaching_the_machine_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    def lax(text: object) -> str:
        return text.decode("latin-1") if isinstance(text, bytes) else str(text).replace("\x00", "")

    monkeypatch.setattr(prove.outcome, "check_inbound_text", lax)
    failures = prove.check(3).failures
    assert any("non-text" in f and "expected 'refused'" in f for f in failures)
    assert any("'/cancel\\x00'" in f and "got 'cancelled'" in f for f in failures)


def test_a_crashing_machine_is_a_failure_not_a_crash(monkeypatch: pytest.MonkeyPatch) -> None:
    def crash(ask: Ask, text: str, now: datetime, escalate_after: int = 3) -> Step:
        if text == "menu":
            raise RuntimeError("boom")
        return REAL_STEP(ask, text, now, escalate_after)

    monkeypatch.setattr(machine, "step", crash)
    report = prove.check(3)
    assert any("raised RuntimeError: boom" in f for f in report.failures)
    assert report.transitions == 1344 - 4 * 6 * 2  # the bare "menu" cases: 4 asks x 6 counts x 2 expiries


def test_escalate_after_must_be_positive() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        prove.enumerate_cases(0)
