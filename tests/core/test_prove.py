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
from parkgate.core import machine, menu
from parkgate.core.expect import Expect
from parkgate.core.kinds import AskKind, ReplyKind
from parkgate.core.menu import Match, Verdict
from parkgate.core.model import Ask, Step
from parkgate.core.phrases import CANCEL_WORDS, CONTROL_WORDS, RESHOW_WORDS
from parkgate.errors import InputError
from parkgate.gateway.checks import check_inbound_text

# The dimensions, as docs/contract.md states them.
CONTROL_WORD_COUNT = 7  # menu, options, cancel, exit, quit, stop, nevermind
OPTION_COUNT = 3  # every enumerated menu has three options
COLLIDING_LABELS = 2  # the collision menu: one cancel word and one re-show word as labels
# Concrete inputs per class (digits: 1..n; out of range: 0 and n+1; bare + slash: every word).
FREE_TEXTS = 2  # a sentence, and a sentence with a control word inside
BLANKS = 3  # "", ASCII whitespace, Unicode whitespace
NON_TEXTS = 2  # bytes that are not UTF-8, a string with NUL
# Who may answer: anyone, 2 responders with quorum 1, 3 responders with quorum 2 with no
# vote and with one vote cast; a text ask takes quorum 1 only.
WHO = {"choice": 4, "text": 2}
# The sender classes: no sender, a responder, a non-responder, a second responder.
SENDER_CLASSES = 4


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
    states = sum(WHO[k] for k, _ in configs) * mismatch_counts * expiries
    per_state = sum(inputs_per_state(k, c) * WHO[k] for k, c in configs) * SENDER_CLASSES
    return states, per_state * mismatch_counts * expiries


#: The default run: (2 kinds x 2 collisions, with 4 or 2 whos) x 6 counts x 2 expiries
#: states; (29 + 29) x 4 + (26 + 28) x 2 inputs x 4 senders each.
DEFAULT_STATES, DEFAULT_TRANSITIONS = 144, 16320


@pytest.fixture(scope="module")
def default_report() -> prove.Report:
    """The default run, made once for the tests that only read it."""
    return prove.check(3)


@pytest.mark.parametrize("escalate_after", [1, 3, 5])
def test_every_state_is_checked_and_nothing_fails(escalate_after: int) -> None:
    report = prove.check(escalate_after)
    assert report.failures == []
    states, transitions = expected_counts(escalate_after)
    assert (report.states, report.transitions) == (states, transitions)
    assert report.render().splitlines()[-1] == f"checked {states} states, {transitions} transitions, 0 failures"


def test_the_default_run_counts(default_report: prove.Report) -> None:
    assert expected_counts(3) == (DEFAULT_STATES, DEFAULT_TRANSITIONS)
    assert (default_report.states, default_report.transitions) == (DEFAULT_STATES, DEFAULT_TRANSITIONS)


def test_the_enumeration_spans_every_dimension() -> None:
    n = 3
    cases = prove.enumerate_cases(n)
    assert {c.ask_kind for c in cases} == {AskKind.CHOICE, AskKind.TEXT}
    assert {c.collision for c in cases} == {False, True}
    assert {c.mismatches for c in cases} == set(range(n + 3))
    assert {c.expired for c in cases} == {False, True}
    assert {c.who for c in cases} == set(prove.Who)
    assert {c.sender for c in cases} == set(prove.Sender)
    assert {c.who for c in cases if c.ask_kind is AskKind.TEXT} == {prove.Who.ANYONE, prove.Who.RESPONDERS}
    assert {(c.who.quorum, len(c.who.responders)) for c in cases} == {(1, 0), (1, 2), (2, 3)}
    for kind in (AskKind.CHOICE, AskKind.TEXT):
        for collision in (False, True):
            for mismatches in range(n + 3):
                for expired in (False, True):
                    state = (kind, collision, prove.Who.ANYONE, mismatches, expired)
                    messages = {c.message for c in cases if c.state == state and c.sender is prove.Sender.NONE}
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


def test_every_sender_class_reaches_every_state_with_every_input() -> None:
    cases = prove.enumerate_cases(3)
    by_state: dict[tuple[object, ...], list[prove.Case]] = {}
    for case in cases:
        by_state.setdefault(case.state, []).append(case)
    for members in by_state.values():
        messages = {sender: [c.message for c in members if c.sender is sender] for sender in prove.Sender}
        assert len({tuple(sent) for sent in messages.values()}) == 1  # the same inputs from each
    senders = {case.sender: case.sender.id for case in cases}
    assert senders[prove.Sender.NONE] is None
    named = [senders[s] for s in (prove.Sender.RESPONDER, prove.Sender.SECOND_RESPONDER, prove.Sender.NON_RESPONDER)]
    assert len(set(named)) == 3
    quorum = next(c for c in cases if c.who is prove.Who.QUORUM)
    assert named[:2] == list(quorum.who.responders[:2]) and named[2] not in quorum.who.responders
    voted = next(c for c in cases if c.who is prove.Who.QUORUM_VOTED)
    assert [(v.sender, v.option_index) for v in voted.open_ask().votes] == [(named[0], 1)]


def test_the_table_shows_the_escalation_step_at_miss_n(default_report: prove.Report) -> None:
    rows = default_report.rows
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


def test_render_is_a_plain_table_with_the_closing_line(default_report: prove.Report) -> None:
    report = default_report
    text = report.render()
    lines = text.splitlines()
    assert lines[0].split() == ["ask", "collision", "input", "class", "expired", "mismatches", "result"]
    assert set(lines[1].replace(" ", "")) == {"-"}
    who_header = 2 + len(report.rows) + 1
    assert lines[who_header].split()[:5] == ["ask", "who", "may", "answer", "sender"]
    assert len(lines) == who_header + 2 + len(report.who_rows) + 3 + 2  # blank, senders, whos; blank, count
    assert lines[-1] == f"checked {DEFAULT_STATES} states, {DEFAULT_TRANSITIONS} transitions, 0 failures"
    assert "failures:" not in text


def test_the_report_names_the_sender_classes_and_quorum_cases(default_report: prove.Report) -> None:
    report = default_report
    assert report.senders == ["no sender", "a responder", "a non-responder", "a second responder"]
    assert report.audiences == [
        "anyone",
        "2 responders, quorum 1",
        "3 responders, quorum 2",
        "quorum 2, 1 vote cast",
    ]
    text = report.render()
    assert "sender classes: no sender, a responder, a non-responder, a second responder" in text
    assert "who may answer: anyone; 2 responders, quorum 1; 3 responders, quorum 2; quorum 2, 1 vote cast" in text
    rows = {row[:4]: row[4:] for row in report.who_rows}
    # 6 counts x 29 choice inputs x 2 collisions, 27 of them text (pass past the TTL).
    assert len(rows) == (4 * 2 + 2 * 2) * 4
    for (kind, who, sender, expired), (count, results) in rows.items():
        theirs = who != "anyone" and sender in ("no sender", "a non-responder")
        assert int(count) == 6 * (58 if kind == "choice" else 54)
        if expired == "yes":
            assert results == "pass, refused"
        elif theirs:
            assert results == "not_yours, refused"
        else:
            assert "not_yours" not in results and "pass" not in results
    assert rows["choice", "3 responders, quorum 2", "a responder", "no"][1] == (
        "retry, escalated, reshown, cancelled, voted, refused"
    )
    assert rows["choice", "quorum 2, 1 vote cast", "a second responder", "no"][1] == (
        "selected, retry, escalated, reshown, cancelled, voted, refused"
    )
    assert rows["choice", "2 responders, quorum 1", "a responder", "no"][1] == (
        "selected, retry, escalated, reshown, cancelled, refused"
    )


def test_non_text_is_refused_before_the_machine_in_the_pure_check() -> None:
    for case in prove.enumerate_cases():
        if case.input_class is prove.InputClass.NON_TEXT:
            with pytest.raises(InputError):
                check_inbound_text(case.message)


# -- the checker itself can fail ------------------------------------------------------

REAL_STEP = machine.step
REAL_MATCH = machine.match
REAL_ENUMERATE = prove.enumerate_cases
#: The matcher's part of the enumeration: asks anyone may answer, messages with no sender.
ANYONE_STATES, ANYONE_TRANSITIONS = 48, 1344


def only_anyones_asks(monkeypatch: pytest.MonkeyPatch) -> None:
    """Check the matcher's part only (a breakage of the matcher shows there, and faster)."""

    def anyones(escalate_after: int = 3) -> list[prove.Case]:
        cases = REAL_ENUMERATE(escalate_after)
        return [c for c in cases if c.who is prove.Who.ANYONE and c.sender is prove.Sender.NONE]

    monkeypatch.setattr(prove, "enumerate_cases", anyones)


StepFn = Callable[[Ask, str, datetime, int, str | None], Step]


def escalate_one_late(ask: Ask, text: str, now: datetime, escalate_after: int = 3, sender: str | None = None) -> Step:
    return REAL_STEP(ask, text, now, escalate_after + 1, sender)


def menu_counts_a_miss(ask: Ask, text: str, now: datetime, escalate_after: int = 3, sender: str | None = None) -> Step:
    result = REAL_STEP(ask, text, now, escalate_after, sender)
    if result.kind is ReplyKind.RESHOWN:
        return Step(result.kind, result.text, result.ask.evolve(mismatches=result.ask.mismatches + 1))
    return result


def ignores_expiry(ask: Ask, text: str, now: datetime, escalate_after: int = 3, sender: str | None = None) -> Step:
    return REAL_STEP(ask.evolve(last_touched=now), text, now, escalate_after, sender)


def passes_on_a_miss(ask: Ask, text: str, now: datetime, escalate_after: int = 3, sender: str | None = None) -> Step:
    result = REAL_STEP(ask, text, now, escalate_after, sender)
    if result.kind in (ReplyKind.RETRY, ReplyKind.ESCALATED):
        return Step(ReplyKind.PASS, "", result.ask)
    return result


def cancel_stays_parked(ask: Ask, text: str, now: datetime, escalate_after: int = 3, sender: str | None = None) -> Step:
    result = REAL_STEP(ask, text, now, escalate_after, sender)
    if result.kind is ReplyKind.CANCELLED:
        return Step(result.kind, result.text, ask.evolve(last_touched=now))
    return result


def anyone_answers(ask: Ask, text: str, now: datetime, escalate_after: int = 3, sender: str | None = None) -> Step:
    """A door that forgets the responders when the message has no sender."""
    if sender is None:
        ask = ask.evolve(responders=(), quorum=1)
    return REAL_STEP(ask, text, now, escalate_after, sender)


def not_yours_touches(ask: Ask, text: str, now: datetime, escalate_after: int = 3, sender: str | None = None) -> Step:
    """A door that keeps others out but lets their message touch the ask."""
    result = REAL_STEP(ask, text, now, escalate_after, sender)
    if result.kind is ReplyKind.NOT_YOURS:
        return Step(result.kind, result.text, result.ask.evolve(last_touched=now))
    return result


def votes_pile_up(ask: Ask, text: str, now: datetime, escalate_after: int = 3, sender: str | None = None) -> Step:
    """A quorum that counts a responder's changed vote twice."""
    result = REAL_STEP(ask, text, now, escalate_after, sender)
    if result.kind in (ReplyKind.VOTED, ReplyKind.SELECTED) and ask.votes and len(result.ask.votes) <= len(ask.votes):
        return Step(result.kind, result.text, result.ask.evolve(votes=(*ask.votes, *result.ask.votes[-1:])))
    return result


def quorum_never_met(ask: Ask, text: str, now: datetime, escalate_after: int = 3, sender: str | None = None) -> Step:
    """A quorum ask that neither a quorum of votes nor a cancel word ever closes."""
    result = REAL_STEP(ask, text, now, escalate_after, sender)
    if ask.quorum > 1 and result.kind in (ReplyKind.SELECTED, ReplyKind.CANCELLED):
        return Step(ReplyKind.VOTED, result.text, ask.evolve(last_touched=now))
    return result


@pytest.mark.parametrize(
    ("broken", "symptom", "whole"),
    [
        (escalate_one_late, "property 3", False),
        (menu_counts_a_miss, "property 4", False),
        (ignores_expiry, "property 6", False),
        (passes_on_a_miss, "property 1", False),
        (cancel_stays_parked, "property 2", False),
        (anyone_answers, "property 7", True),
        (not_yours_touches, "property 7", True),
        (votes_pile_up, "property 8", True),
        (quorum_never_met, "property 8", True),
    ],
)
def test_a_broken_machine_is_caught(monkeypatch: pytest.MonkeyPatch, broken: StepFn, symptom: str, whole: bool) -> None:
    if not whole:
        only_anyones_asks(monkeypatch)
    monkeypatch.setattr(machine, "step", broken)
    report = prove.check(3)
    assert report.failures, "the checker passed a broken machine"
    assert any(symptom in failure for failure in report.failures)
    text = report.render()
    assert "failures:" in text
    states, transitions = (DEFAULT_STATES, DEFAULT_TRANSITIONS) if whole else (ANYONE_STATES, ANYONE_TRANSITIONS)
    assert (
        text.splitlines()[-1] == f"checked {states} states, {transitions} transitions, {len(report.failures)} failures"
    )


def test_an_unmet_quorum_is_reported_as_a_quorum_ask_that_never_closes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(machine, "step", quorum_never_met)
    failures = prove.check(3).failures
    never = [f for f in failures if "closes or advances it" in f]
    # Every open quorum state: 2 collisions x 6 counts, with no vote and with one vote cast.
    assert len(never) == 2 * 6 * 2
    assert any("for quorum 2, 1 vote cast" in f and "no quorum, no veto" in f for f in never)
    assert any("for 3 responders, quorum 2" in f and f.endswith(": no veto closes or advances it") for f in never)


def test_a_late_escalation_is_reported_exactly_at_miss_n(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(machine, "step", escalate_one_late)  # every sender class: a responder's misses count too
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

    only_anyones_asks(monkeypatch)
    monkeypatch.setattr(machine, "match", control_words_first)
    failures = prove.check(3).failures
    assert any("label = control word 'Cancel': reply kind expected 'selected', got 'cancelled'" in f for f in failures)


def test_non_text_reaching_the_machine_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    def lax(text: object) -> str:
        return text.decode("latin-1") if isinstance(text, bytes) else str(text).replace("\x00", "")

    only_anyones_asks(monkeypatch)
    monkeypatch.setattr(prove.outcome, "check_inbound_text", lax)
    failures = prove.check(3).failures
    assert any("non-text" in f and "expected 'refused'" in f for f in failures)
    assert any("'/cancel\\x00'" in f and "got 'cancelled'" in f for f in failures)


def test_a_crashing_machine_is_a_failure_not_a_crash(monkeypatch: pytest.MonkeyPatch) -> None:
    def crash(ask: Ask, text: str, now: datetime, escalate_after: int = 3, sender: str | None = None) -> Step:
        if text == "menu":
            raise RuntimeError("boom")
        return REAL_STEP(ask, text, now, escalate_after, sender)

    only_anyones_asks(monkeypatch)
    monkeypatch.setattr(machine, "step", crash)
    report = prove.check(3)
    assert any("raised RuntimeError: boom" in f for f in report.failures)
    assert report.transitions == ANYONE_TRANSITIONS - ANYONE_STATES  # the bare "menu" cases: one per state


def test_escalate_after_must_be_positive() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        prove.enumerate_cases(0)
