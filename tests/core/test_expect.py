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
from parkgate.core.machine import render_question, step
from parkgate.core.model import Ask
from parkgate.core.phrases import AskKind, AskStatus

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
