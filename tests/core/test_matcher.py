"""The matcher, held to docs/contract.md "Matching rules" and the decisions in its docstring.

Documented choices tested here: leading zeros (``02``) do not select; fullwidth digits
select through NFKC; other scripts' digits (Arabic-Indic ``٢``) do not; exactly one
leading slash is stripped; a label beats a bare control word but never the slash form.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from parkgate.core.kinds import AskKind
from parkgate.core.machine import match
from parkgate.core.menu import Match, Verdict, normalise
from parkgate.core.phrases import CANCEL_WORDS, CONTROL_WORDS, RESHOW_WORDS

CHOICE = AskKind.CHOICE
TEXT = AskKind.TEXT
OPTIONS = ("Sequence", "Class", "Use case")


def verdict(text: str, options: tuple[str, ...] = OPTIONS, kind: AskKind = CHOICE) -> Match:
    return match(kind, options, text)


# -- normalisation ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("  Use   Case ", "use case"),
        ("USE\tCASE\n", "use case"),
        ("Use\u00a0case", "use case"),  # NBSP folds like a space
        ("２", "2"),  # fullwidth digit, NFKC
        ("Straße", "strasse"),  # case fold, not lower()
        ("", ""),
        ("   ", ""),
    ],
)
def test_normalise(raw: str, expected: str) -> None:
    assert normalise(raw) == expected


# -- rule 1: bare numbers --------------------------------------------------------------


@pytest.mark.parametrize("n", [1, 2, 3])
def test_every_number_in_range_selects_its_option(n: int) -> None:
    assert verdict(str(n)) == Match(Verdict.SELECT, option_index=n)


@pytest.mark.parametrize(
    "text",
    ["0", "4", "1.5", "-1", "+2", "1e0", "01x", "02", "2.", "2 2", "two", "#2", "2)", "٢", "۲", "००२", "2️⃣"],
)
def test_not_a_canonical_number_in_range_does_not_select(text: str) -> None:
    assert verdict(text).verdict is Verdict.MISMATCH


def test_number_past_a_long_menu_does_not_select() -> None:
    options = tuple(f"option {i}" for i in range(1, 13))
    assert verdict("12", options) == Match(Verdict.SELECT, option_index=12)
    assert verdict("13", options).verdict is Verdict.MISMATCH
    assert verdict("9" * 5000, options).verdict is Verdict.MISMATCH  # no int() blow-up


def test_surrounding_whitespace_is_trimmed() -> None:
    assert verdict(" 2 ") == Match(Verdict.SELECT, option_index=2)
    assert verdict("\t2\r\n") == Match(Verdict.SELECT, option_index=2)


def test_fullwidth_digit_selects_through_nfkc() -> None:
    assert verdict("２") == Match(Verdict.SELECT, option_index=2)
    assert verdict("１") == Match(Verdict.SELECT, option_index=1)


@pytest.mark.parametrize("digit", ["٢", "۲", "२", "২"])  # Arabic-Indic, Persian, Devanagari, Bengali
def test_non_ascii_script_digits_do_not_select(digit: str) -> None:
    assert digit.isdigit() and unicodedata.digit(digit) == 2
    assert verdict(digit).verdict is Verdict.MISMATCH


# -- rule 2: exact labels --------------------------------------------------------------


@pytest.mark.parametrize("text", ["Use case", "use case", "USE CASE", "  use   CASE  ", "Use\tcase", "ｕｓｅ ｃａｓｅ"])
def test_label_selects_after_normalisation(text: str) -> None:
    assert verdict(text) == Match(Verdict.SELECT, option_index=3)


@pytest.mark.parametrize(
    "text", ["use", "case", "usecase", "use cases", "sequenc", "seq", "Sequence diagram", "class?"]
)
def test_nothing_partial_or_fuzzy_selects(text: str) -> None:
    assert verdict(text).verdict is Verdict.MISMATCH


# -- rule 3: an option beats a control word ----------------------------------------------


@pytest.mark.parametrize("typed", ["stop", "Stop", " STOP "])
def test_option_named_stop_is_selected_by_stop(typed: str) -> None:
    assert verdict(typed, ("Go", "Stop")) == Match(Verdict.SELECT, option_index=2)


def test_option_named_menu_is_selected_by_menu() -> None:
    assert verdict("menu", ("Menu", "Drinks")) == Match(Verdict.SELECT, option_index=1)


def test_slash_form_is_always_the_control_word_even_with_a_matching_label() -> None:
    assert verdict("/stop", ("Go", "Stop")) == Match(Verdict.CANCEL)
    assert verdict("/menu", ("Menu", "Drinks")) == Match(Verdict.RESHOW)


def test_slash_door_cannot_be_shadowed_by_a_label_that_normalises_to_it() -> None:
    # A fullwidth solidus NFKC-folds to "/": the label must still not swallow the door.
    assert verdict("/cancel", ("／cancel", "Go")) == Match(Verdict.CANCEL)


def test_when_no_option_matches_the_control_word_still_works() -> None:
    assert verdict("stop", ("Go", "Wait")) == Match(Verdict.CANCEL)


# -- rule 4: control words --------------------------------------------------------------


@pytest.mark.parametrize("word", sorted(RESHOW_WORDS))
@pytest.mark.parametrize("form", ["{}", "/{}", "{} ", " /{}"])
def test_menu_words_reshow(word: str, form: str) -> None:
    text = form.format(word)
    assert verdict(text) == Match(Verdict.RESHOW)
    assert verdict(text.upper()) == Match(Verdict.RESHOW)


@pytest.mark.parametrize("word", sorted(CANCEL_WORDS))
@pytest.mark.parametrize("form", ["{}", "/{}", "  {}  ", "/{} "])
def test_cancel_words_cancel_bare_and_slashed(word: str, form: str) -> None:
    text = form.format(word)
    assert verdict(text) == Match(Verdict.CANCEL)
    assert verdict(text.upper()) == Match(Verdict.CANCEL)


def test_control_word_sets_are_the_documented_ones() -> None:
    assert {"menu", "options"} == RESHOW_WORDS
    assert {"cancel", "exit", "quit", "stop", "nevermind"} == CANCEL_WORDS
    assert CONTROL_WORDS == RESHOW_WORDS | CANCEL_WORDS


@pytest.mark.parametrize(
    "text", ["//cancel", "/ cancel", "/ menu", "//menu", "cancel please", "please cancel", "/cancel!"]
)
def test_only_one_leading_slash_and_nothing_around_the_word(text: str) -> None:
    assert verdict(text).verdict is Verdict.MISMATCH


# -- rule 6: text asks -----------------------------------------------------------------


@pytest.mark.parametrize("word", sorted(CONTROL_WORDS))
def test_bare_control_word_in_a_text_ask_is_an_answer_flagged_as_such(word: str) -> None:
    result = verdict(word, (), TEXT)
    assert result == Match(Verdict.ANSWER, bare_control_word=True)
    assert verdict(f"  {word.upper()} ", (), TEXT) == Match(Verdict.ANSWER, bare_control_word=True)


@pytest.mark.parametrize("word", sorted(CANCEL_WORDS))
def test_slashed_cancel_word_cancels_a_text_ask(word: str) -> None:
    assert verdict(f"/{word}", (), TEXT) == Match(Verdict.CANCEL)


@pytest.mark.parametrize("word", sorted(RESHOW_WORDS))
def test_slashed_menu_word_reshows_a_text_ask(word: str) -> None:
    assert verdict(f"/{word}", (), TEXT) == Match(Verdict.RESHOW)


@pytest.mark.parametrize("text", ["", " ", "\n\t ", "\u3000"])
def test_empty_text_answer_is_a_mismatch(text: str) -> None:
    assert verdict(text, (), TEXT) == Match(Verdict.MISMATCH)


@pytest.mark.parametrize(
    "text", ["A sequence of login steps", "2", "cancel the order please", "//cancel", "/ cancel", "/deploy"]
)
def test_any_other_text_is_a_plain_answer(text: str) -> None:
    assert verdict(text, (), TEXT) == Match(Verdict.ANSWER, bare_control_word=False)


# -- properties --------------------------------------------------------------------------

# Arbitrary Unicode, lone surrogates included: the matcher must still give a verdict.
ANY_TEXT = st.text(st.characters(codec=None, exclude_categories=()), max_size=40)
LABEL = st.text(st.characters(exclude_categories=("Cs",)), min_size=1, max_size=12).filter(
    lambda s: normalise(s) != "" and not normalise(s).startswith("/")
)
LABELS = st.lists(LABEL, min_size=1, max_size=8, unique_by=normalise).map(tuple)
NEAR_MISS = st.sampled_from(
    ["0", "01", "1.0", "-1", "+1", "1e0", "1 ", " 1", "１", "٢", "//cancel", "/ menu", "stop", "/stop", "menu", "Menu"]
)


def _selects_by_rule(text: str, options: tuple[str, ...], index: int) -> bool:
    word = normalise(text)
    return word == str(index) or word == normalise(options[index - 1])


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(options=LABELS, text=st.one_of(ANY_TEXT, NEAR_MISS, LABEL, st.integers(-3, 12).map(str)))
@example(options=("Stop",), text="stop")
@example(options=("2", "1"), text="1")
def test_random_text_never_selects_unless_it_is_exact(options: tuple[str, ...], text: str) -> None:
    result = match(CHOICE, options, text)
    word = normalise(text)
    in_range = word.isascii() and word.isdigit() and word == str(int(word)) and 1 <= int(word) <= len(options)
    labelled = word in {normalise(label) for label in options}
    if result.verdict is Verdict.SELECT:
        assert result.option_index is not None and 1 <= result.option_index <= len(options)
        assert _selects_by_rule(text, options, result.option_index)
    else:
        assert result.option_index is None
        assert not in_range and not labelled, f"{text!r} should have selected from {options}"


@settings(max_examples=300, deadline=None)
@given(kind=st.sampled_from(list(AskKind)), options=st.lists(ANY_TEXT, max_size=5).map(tuple), text=ANY_TEXT)
def test_matcher_is_total_on_arbitrary_unicode(kind: AskKind, options: tuple[str, ...], text: str) -> None:
    result = match(kind, options, text)
    assert isinstance(result.verdict, Verdict)
    if result.verdict is Verdict.SELECT:
        assert kind is CHOICE and result.option_index is not None
    if kind is TEXT:
        assert result.verdict is not Verdict.SELECT


@settings(max_examples=200, deadline=None)
@given(text=ANY_TEXT)
def test_text_ask_answers_everything_but_slash_commands_and_blanks(text: str) -> None:
    result = match(TEXT, (), text)
    word = normalise(text)
    if not word:
        assert result.verdict is Verdict.MISMATCH
    elif word.startswith("/") and word[1:] in CONTROL_WORDS:
        assert result.verdict in (Verdict.CANCEL, Verdict.RESHOW)
    else:
        assert result == Match(Verdict.ANSWER, bare_control_word=word in CONTROL_WORDS)


@settings(max_examples=150, deadline=None)
@given(
    options=LABELS, word=st.sampled_from(sorted(CONTROL_WORDS)), case=st.sampled_from([str.lower, str.upper, str.title])
)
def test_slash_control_word_is_never_shadowed(options: tuple[str, ...], word: str, case: Callable[[str], str]) -> None:
    expected = Verdict.CANCEL if word in CANCEL_WORDS else Verdict.RESHOW
    assert match(CHOICE, options, "/" + case(word)) == Match(expected)
