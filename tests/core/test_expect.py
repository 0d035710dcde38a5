"""A text ask's expected answer form, decided by the pure core.

Each form takes what its name says and nothing else; a miss's line says what is wanted,
and the counter and the escalation work as for any other miss.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from parkgate import InputError, ReplyKind
from parkgate.core import expect as E
from parkgate.core import phrases as P
from parkgate.core.expect import Expect, as_expect, describe, value_of
from parkgate.core.kinds import AskKind, AskStatus
from parkgate.core.machine import render_question, step
from parkgate.core.menu import normalise
from parkgate.core.model import Ask

NOW = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)


def text_ask(expect: Expect | None) -> Ask:
    prompt = "How many replicas?"
    return Ask("a1", "c1", "r1", AskKind.TEXT, prompt, (), AskStatus.OPEN, NOW, NOW, 3600.0, expect=expect)


@pytest.mark.parametrize(
    ("expect", "text", "value"),
    [
        (Expect("integer"), "42", 42),
        (Expect("integer"), " -7 ", -7),
        (Expect("integer"), "４２", 42),  # fullwidth digits are digits after NFKC
        (Expect("integer", minimum=1, maximum=10), "10", 10),
        (Expect("number"), "3.5", 3.5),
        (Expect("number"), "3", 3),
        (Expect("number"), "-1e3", -1000.0),
        (Expect("number", minimum=0.5), "0.5", 0.5),
        (Expect("email"), " ada@example.com ", "ada@example.com"),
        (Expect("uri"), "https://example.com/a?b=c", "https://example.com/a?b=c"),
        (Expect("uri"), "mailto:ada@example.com", "mailto:ada@example.com"),
        (Expect("date"), "2026-02-28", "2026-02-28"),
        (Expect("date-time"), "2026-02-28T09:30:00Z", "2026-02-28T09:30:00Z"),
        (Expect("date-time"), "2026-02-28T09:30:00.25+02:00", "2026-02-28T09:30:00.25+02:00"),
        (Expect("text", min_length=2, max_length=5), "  ab ", "  ab "),  # text is kept as given
        (Expect("email", max_length=15), "ada@example.com", "ada@example.com"),
    ],
)
def test_an_answer_of_the_form_is_taken_as_its_value(expect: Expect, text: str, value: Any) -> None:
    found = value_of(expect, text)
    assert found == value and type(found) is type(value)


@pytest.mark.parametrize(
    ("expect", "text"),
    [
        (Expect("integer"), "3.0"),
        (Expect("integer"), "seven"),
        (Expect("integer"), "1,000"),
        (Expect("integer"), "٣"),  # another script's digit is no ASCII digit after NFKC
        (Expect("integer"), "9" * 101),
        (Expect("integer", minimum=1, maximum=10), "0"),
        (Expect("integer", minimum=1, maximum=10), "11"),
        (Expect("number"), "inf"),
        (Expect("number"), "nan"),
        (Expect("number"), "1e999"),
        (Expect("number"), "3,5"),
        (Expect("number", maximum=2.5), "2.6"),
        (Expect("email"), "ada"),
        (Expect("email"), "ada@example"),
        (Expect("email"), "a da@example.com"),
        (Expect("uri"), "example.com"),
        (Expect("uri"), "https://exa mple.com"),
        (Expect("date"), "2026-02-30"),
        (Expect("date"), "28/02/2026"),
        (Expect("date"), "20260228"),
        (Expect("date-time"), "2026-02-28T09:30:00"),  # RFC 3339 wants the offset
        (Expect("date-time"), "2026-02-28T25:30:00Z"),
        (Expect("text", min_length=2), "a"),
        (Expect("text", max_length=3), "abcd"),
        (Expect("text", min_length=1), "   "),
    ],
)
def test_anything_else_is_not_of_the_form(expect: Expect, text: str) -> None:
    assert value_of(expect, text) is None


def test_a_miss_is_counted_and_its_line_says_what_is_wanted() -> None:
    ask = text_ask(Expect("integer", minimum=1, maximum=10))
    wanted = "a whole number from 1 to 10"
    assert describe(ask.expect or Expect()) == wanted
    assert wanted in render_question(ask)  # the question says it before any miss
    first = step(ask, "lots", NOW)
    assert first.kind is ReplyKind.RETRY and first.ask.is_open and first.ask.mismatches == 1
    assert first.text == P.TEXT_EXPECT_RETRY.format(wanted=wanted, hint=P.TEXT_EXITS_HINT, menu=render_question(ask))
    second = step(first.ask, "cancel", NOW)  # a bare control word is no number either
    assert second.kind is ReplyKind.RETRY and second.ask.mismatches == 2
    third = step(second.ask, "11", NOW)
    assert third.kind is ReplyKind.ESCALATED and third.ask.mismatches == 3
    assert third.text.startswith(f"Still not {wanted} (3 tries).") and "/cancel" in third.text
    answered = step(third.ask, " 7 ", NOW)
    assert answered.kind is ReplyKind.ANSWERED and answered.answer == " 7 " and answered.ask.mismatches == 0
    assert answered.ask.status is AskStatus.ANSWERED


def test_the_exits_still_work_in_an_ask_that_expects_a_form() -> None:
    ask = text_ask(Expect("date"))
    assert step(ask, "/cancel", NOW).kind is ReplyKind.CANCELLED
    assert step(ask, "/menu", NOW).kind is ReplyKind.RESHOWN
    assert step(ask, "menu", NOW).kind is ReplyKind.RETRY  # the bare word is data, and no date
    assert step(ask, "2026-01-05", NOW + timedelta(hours=2)).kind is ReplyKind.PASS  # past its TTL


@pytest.mark.parametrize(
    ("expect", "words"),
    [
        (Expect("number"), "a number"),
        (Expect("number", minimum=0), "a number of at least 0"),
        (Expect("integer", maximum=5), "a whole number of at most 5"),
        (Expect("number", minimum=0.5, maximum=2.5), "a number from 0.5 to 2.5"),
        (Expect("email"), P.EXPECT_WANTED["email"]),
        (Expect("text", min_length=3, max_length=8), "an answer of 3 to 8 characters"),
        (Expect("text", min_length=3), "an answer of at least 3 characters"),
        (Expect("uri", max_length=80), P.EXPECT_WANTED["uri"] + " of at most 80 characters"),
    ],
)
def test_what_is_wanted_in_words(expect: Expect, words: str) -> None:
    assert describe(expect) == words


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("phone", "expect form must be one of"),
        ({"form": "integer", "minimum": "1"}, "minimum must be a finite number"),
        ({"form": "integer", "maximum": float("inf")}, "maximum must be a finite number"),
        ({"form": "integer", "minimum": True}, "minimum must be a finite number"),
        ({"form": "email", "minimum": 1}, "minimum is for the number and integer forms"),
        ({"form": "number", "max_length": 3}, "max_length is for the text forms"),
        ({"form": "text", "min_length": -1}, "min_length must be a whole number of at least 0"),
        ({"form": "integer", "minimum": 5, "maximum": 1}, "minimum 5 is above maximum 1"),
        ({"form": "text", "min_length": 5, "max_length": 1}, "min_length 5 is above max_length 1"),
        ({"form": "integer", "step": 2}, "unknown field(s) step"),
        (3, "expect must be a form's name, a mapping or an Expect"),
    ],
)
def test_a_bad_expectation_is_an_input_error_naming_what_is_wrong(value: object, message: str) -> None:
    with pytest.raises(InputError, match=message.replace("(", r"\(").replace(")", r"\)")):
        as_expect(value)


def test_an_expectation_that_asks_nothing_is_none() -> None:
    assert as_expect(None) is None and as_expect("text") is None and as_expect({"form": "text"}) is None
    assert as_expect("integer") == Expect("integer")


expectations = st.one_of(
    st.builds(
        Expect,
        form=st.sampled_from(sorted(E.NUMBER_FORMS)),
        minimum=st.none() | st.integers(-100, 0),
        maximum=st.none() | st.integers(1, 100),
    ),
    st.builds(
        Expect,
        form=st.sampled_from(["text", "email", "uri", "date", "date-time"]),
        min_length=st.none() | st.integers(0, 5),
        max_length=st.none() | st.integers(6, 50),
    ),
)


@given(expectations)
def test_the_stored_form_reads_back_equal(expect: Expect) -> None:
    assert E.from_json(E.to_json(expect)) == expect


@given(expectations, st.text(max_size=30))
def test_the_matcher_and_the_value_agree(expect: Expect, text: str) -> None:
    result = step(text_ask(expect), text, NOW)
    if value_of(expect, text) is None:
        assert result.kind in (ReplyKind.RETRY, ReplyKind.CANCELLED, ReplyKind.RESHOWN)
    else:
        assert result.kind in (ReplyKind.ANSWERED, ReplyKind.CANCELLED, ReplyKind.RESHOWN)


# -- the several-options form: one or more of a list, by number or label ------------------
COLOURS = ("Red", "Dark blue", "Green", "Cancel")


def several(**bounds: Any) -> Expect:
    return Expect("several", options=COLOURS, **bounds)


@pytest.mark.parametrize(
    ("text", "chosen"),
    [
        ("1, 3", ("Red", "Green")),
        ("3 1", ("Red", "Green")),
        ("1,3", ("Red", "Green")),
        ("green, RED", ("Red", "Green")),
        ("dark blue", ("Dark blue",)),  # a label with a space, alone
        ("Dark  Blue, 1", ("Red", "Dark blue")),
        ("2, 2, 2", ("Dark blue",)),  # each option once
        ("１， ３", ("Red", "Green")),  # fullwidth digits and comma are ASCII after NFKC
        ("1, 3,", ("Red", "Green")),  # a blank part is skipped
        ("cancel", ("Cancel",)),  # a bare word that is a label is that option
    ],
)
def test_several_options_are_taken_by_number_or_label(text: str, chosen: tuple[str, ...]) -> None:
    assert value_of(several(), text) == chosen


@pytest.mark.parametrize(
    ("expect", "text"),
    [
        (several(), ""),
        (several(), ","),
        (several(), "5"),
        (several(), "0"),
        (several(), "01"),  # numbers only in canonical form, as in a menu
        (several(), "1, purple"),
        (several(), "dark"),  # nothing partial
        (several(), "/cancel"),
        (several(), "menu"),
        (several(), "1" + ", 1" * 3000),  # too long to read
        (several(max_items=2), "1 2 3"),
        (several(min_items=2), "1"),
    ],
)
def test_anything_else_is_not_several_options(expect: Expect, text: str) -> None:
    assert value_of(expect, text) is None


def test_a_several_options_ask_lists_its_options_and_its_miss_says_what_is_wanted() -> None:
    ask = text_ask(several(max_items=2))
    wanted = "the numbers or names of at most 2 of the options, separated by commas"
    question = render_question(ask)
    assert question.startswith("How many replicas?\n\n1. Red\n2. Dark blue\n3. Green\n4. Cancel\n\n")
    assert wanted in question and "/cancel" in question
    first = step(ask, "1 2 3", NOW)
    assert first.kind is ReplyKind.RETRY and first.text.startswith(f"Please type {wanted}.\n\n")
    assert "1. Red" in first.text
    escalated = step(step(first.ask, "purple", NOW).ask, "9", NOW)
    assert escalated.kind is ReplyKind.ESCALATED and "3. Green" in escalated.text
    assert step(ask, "/cancel", NOW).kind is ReplyKind.CANCELLED  # the control words still work
    assert step(ask, "/menu", NOW).kind is ReplyKind.RESHOWN
    answered = step(ask, "2, red", NOW)
    assert answered.kind is ReplyKind.ANSWERED and value_of(several(), answered.answer or "") == ("Red", "Dark blue")


@pytest.mark.parametrize(
    ("expect", "words"),
    [
        (several(), P.EXPECT_WANTED["several"]),
        (several(min_items=1), P.EXPECT_WANTED["several"]),
        (several(min_items=2), "the numbers or names of at least 2 of the options, separated by commas"),
        (several(min_items=2, max_items=2), "the numbers or names of 2 of the options, separated by commas"),
        (several(min_items=1, max_items=3), "the numbers or names of 1 to 3 of the options, separated by commas"),
    ],
)
def test_how_many_options_are_wanted_in_words(expect: Expect, words: str) -> None:
    assert describe(expect) == words


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ({"form": "several"}, "options must be a non-empty list"),
        ({"form": "several", "options": "Red"}, "options must be a non-empty list"),
        ({"form": "several", "options": ["Red", " "]}, "options must be non-empty strings"),
        ({"form": "several", "options": ["Red", "RED"]}, "options must differ"),
        ({"form": "several", "options": ["a", "b"], "max_items": 3}, "max_items must be a whole number from 1 to 2"),
        ({"form": "several", "options": ["a", "b"], "max_items": 0}, "max_items must be a whole number from 1 to 2"),
        ({"form": "several", "options": ["a", "b"], "min_items": 2, "max_items": 1}, "min_items 2 is above"),
        ({"form": "several", "options": ["a"], "minimum": 1}, "minimum is not for the several form"),
        ({"form": "text", "options": ["a"]}, "options is for the several form"),
        ({"form": "integer", "max_items": 1}, "max_items is for the several form"),
    ],
)
def test_a_bad_several_options_form_is_an_input_error(value: object, message: str) -> None:
    with pytest.raises(InputError, match=message):
        as_expect(value)


labels = st.text(st.characters(categories=["L", "N"]), min_size=1, max_size=8).filter(lambda s: not s.isdigit())
option_lists = st.lists(labels, min_size=1, max_size=6, unique_by=lambda label: " ".join(label.split()).casefold())
separators = st.sampled_from([",", ", ", " ", " , ", ",  "])


@given(option_lists, st.data())
def test_several_options_any_picked_set_written_as_numbers_reads_back(options: list[str], data: Any) -> None:
    expect = Expect("several", options=options)
    picked = data.draw(st.lists(st.integers(1, len(options)), min_size=1, max_size=8))
    text = data.draw(separators).join(str(position) for position in picked)
    assert value_of(expect, text) == tuple(options[position - 1] for position in sorted(set(picked)))


@given(option_lists, st.data())
def test_several_options_picked_labels_separated_by_commas_read_back(options: list[str], data: Any) -> None:
    expect = Expect("several", options=options)
    picked = data.draw(st.lists(st.integers(1, len(options)), min_size=1, max_size=8))
    shouted = [label.upper() if normalise(label.upper()) == normalise(label) else label for label in options]
    text = ", ".join(shouted[position - 1] for position in picked)
    chosen = value_of(expect, text)
    assert chosen is not None and set(chosen) >= {options[position - 1] for position in picked}


@given(option_lists, st.none() | st.integers(0, 3), st.none() | st.integers(3, 6), st.text(max_size=40))
def test_several_options_never_raises_and_keeps_its_bounds(
    options: list[str], low: int | None, high: int | None, text: str
) -> None:
    low = None if low is None else min(low, len(options))
    high = None if high is None else min(high, len(options))
    expect = Expect("several", options=options, min_items=low, max_items=high)
    chosen = value_of(expect, text)
    if chosen is not None:
        assert chosen and len(set(chosen)) == len(chosen) and set(chosen) <= set(options)
        assert list(chosen) == sorted(chosen, key=options.index)
        assert (low or 0) <= len(chosen) <= (high or len(options))
    assert E.from_json(E.to_json(expect)) == expect
    result = step(text_ask(expect), text, NOW)
    taken = result.kind is ReplyKind.ANSWERED
    assert taken == (chosen is not None) or result.kind in (ReplyKind.CANCELLED, ReplyKind.RESHOWN)
