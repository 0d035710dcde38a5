"""The stopping point's contract at its edges: bad input is an ``InputError``, options
must be a sequence of strings, every ``AskSpec`` that exists round-trips, and the parser
and JSON reader answer odd input with a clear ``StoppingPointError``."""

from __future__ import annotations

import json
import pickle
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import parkgate
from parkgate import Gateway, ManualClock
from parkgate.core.kinds import AskKind
from parkgate.core.stopping_point import (
    MAX_JSON_CHARS,
    AskSpec,
    StoppingPointError,
    from_json,
    is_marker_line,
    make_spec,
    parse,
    render,
)
from parkgate.errors import InputError, ParkgateError

# -- 1. a stopping-point error is an input error -------------------------------------------


def test_stopping_point_error_is_an_input_error_and_a_value_error() -> None:
    assert issubclass(StoppingPointError, InputError)
    assert issubclass(StoppingPointError, ParkgateError)
    assert issubclass(StoppingPointError, ValueError)
    assert parkgate.StoppingPointError is StoppingPointError
    assert parkgate.InputError is InputError and parkgate.ParkgateError is ParkgateError
    assert parkgate.errors.StoppingPointError is StoppingPointError
    error = StoppingPointError("gap", 4)
    assert str(error) == "line 4: gap" and error.line == 4


def test_errors_pickle_by_their_public_names() -> None:
    for error in (InputError("bad"), ParkgateError("bad")):
        assert type(error).__module__ == "parkgate.errors"
        again = pickle.loads(pickle.dumps(error))
        assert type(again) is type(error) and str(again) == "bad"
    again = pickle.loads(pickle.dumps(StoppingPointError("gap", 4)))
    assert isinstance(again, StoppingPointError) and again.line == 4 and str(again) == "line 4: gap"


@pytest.fixture
def gw(tmp_path: Path) -> Iterator[Gateway]:
    gateway = Gateway(f"sqlite:///{tmp_path / 'sp.db'}", clock=ManualClock())
    yield gateway
    gateway.close()


@pytest.mark.parametrize(
    ("prompt", "options", "says"),
    [
        ("Pick\x00", ["A"], "NUL"),
        (b"Pick", ["A"], "prompt must be a string"),
        ("Pick", ["A", 2], "option 2 is not a string"),
        ("Pick", ["A", "a"], "repeats option 1"),
        ("Pick", 5, "options must be a list or tuple of strings, not int"),
        ("Pick", "AB", "options must be a list or tuple of strings, not str"),
        ("Pick", {"A": 1}, "options must be a list or tuple of strings, not dict"),
        ("Pick", {"A", "B"}, "not set"),
        ("Pick", b"AB", "not bytes"),
        ("Pick", (label for label in ["A"]), "not generator"),
    ],
)
def test_bad_ask_input_is_an_input_error_and_parks_nothing(gw: Gateway, prompt: Any, options: Any, says: str) -> None:
    for caught in (InputError, ParkgateError, StoppingPointError):
        with pytest.raises(caught, match=says):
            gw.ask("c", prompt, options)
    assert gw.audit() == []


def test_a_string_for_a_text_ask_is_refused_too(gw: Gateway) -> None:
    with pytest.raises(InputError, match="not str"):
        gw.ask("c", "Describe", "", kind="text")
    assert gw.audit() == []


# -- 2. make_spec: options are a sequence of strings --------------------------------------


@pytest.mark.parametrize("options", [["A", "B"], ("A", "B"), ["A", "B"][:]])
def test_lists_and_tuples_are_options(options: list[str] | tuple[str, ...]) -> None:
    assert make_spec("choice", "Pick", options) == AskSpec(AskKind.CHOICE, "Pick", ("A", "B"))


def test_unhashable_labels_are_refused_by_position_not_by_the_cache() -> None:
    with pytest.raises(InputError, match="option 2 is not a string"):
        make_spec("choice", "Pick", ["A", ["B"]])  # type: ignore[list-item]
    with pytest.raises(InputError, match="kind must be"):
        make_spec(["choice"], "Pick", ["A"])  # type: ignore[arg-type]


_NOT_SEQUENCES = st.one_of(
    st.integers(),
    st.floats(allow_nan=False),
    st.booleans(),
    st.text(),
    st.binary(),
    st.binary().map(bytearray),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=3),
    st.frozensets(st.text(min_size=1, max_size=3), max_size=3),
    st.sets(st.text(min_size=1, max_size=3), max_size=3),
    st.builds(object),
)


@settings(max_examples=150, deadline=None)
@given(options=_NOT_SEQUENCES, kind=st.sampled_from(["choice", "text", AskKind.CHOICE, AskKind.TEXT]))
def test_any_non_sequence_options_value_is_an_input_error(options: object, kind: str) -> None:
    with pytest.raises(InputError, match="options must be a list or tuple of strings"):
        make_spec(kind, "Pick one", options)  # type: ignore[arg-type]
    with pytest.raises(InputError, match="options must be a list or tuple of strings"):
        AskSpec(kind, "Pick one", options)  # type: ignore[arg-type]


# -- 3. a directly built AskSpec is validated and canonical -------------------------------


def test_a_directly_built_spec_is_canonical_and_round_trips() -> None:
    text = AskSpec("text", "Describe")  # type: ignore[arg-type]
    assert text.kind is AskKind.TEXT
    assert render(text) == "[[ask text]]\nDescribe\n[[/ask]]"
    assert parse(render(text)) == text
    listed = AskSpec("choice", "Q  ", ["A", " B  "])  # type: ignore[arg-type]
    assert listed.kind is AskKind.CHOICE and listed.prompt == "Q" and listed.options == ("A", "B")
    assert parse(render(listed)) == listed
    assert hash(listed) == hash(make_spec("choice", "Q", ("A", "B")))


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (("poll", "Q", ("A",)), "kind must be"),
        ((AskKind.CHOICE, "", ("A",)), "prompt is empty"),
        ((AskKind.CHOICE, "Q", ()), "at least one option"),
        ((AskKind.TEXT, "Q", ("A",)), "takes no options"),
        ((AskKind.CHOICE, "Q", ("A", "a")), "repeats option 1"),
        ((AskKind.CHOICE, "Q\n[[/ask]]", ("A",)), "marker"),
        ((AskKind.CHOICE, 5, ("A",)), "prompt must be a string"),
    ],
)
def test_an_invalid_spec_cannot_be_built(args: tuple[Any, ...], says: str) -> None:
    with pytest.raises(StoppingPointError, match=says):
        AskSpec(*args)


def test_replace_and_copies_stay_valid() -> None:
    import copy
    import dataclasses

    spec = make_spec("choice", "Q", ["A", "B"])
    with pytest.raises(StoppingPointError, match="repeats"):
        dataclasses.replace(spec, options=("A", "a"))
    assert dataclasses.replace(spec, prompt="R  ").prompt == "R"
    assert copy.deepcopy(spec) == spec and pickle.loads(pickle.dumps(spec)) == spec
    with pytest.raises(dataclasses.FrozenInstanceError):
        spec.prompt = "x"  # type: ignore[misc]


def test_make_spec_is_cached_and_returns_the_same_spec() -> None:
    first = make_spec("choice", "Cached question?", ["Yes", "No"])
    assert make_spec("choice", "Cached question?", ("Yes", "No")) is first


_KINDS = st.sampled_from([AskKind.CHOICE, AskKind.TEXT, "choice", "text"])
_PROMPT_LINES = st.one_of(
    st.text(st.characters(exclude_categories=("Cs",)), max_size=20),
    st.sampled_from(["1. one", "2) two", "[[ask]]", "\ufeff[[/ask]]", "  ", "\ufeffQ", "Q  ", "\t"]),
)
_LABELS = st.one_of(
    st.text(st.characters(exclude_categories=("Cs",)), max_size=12),
    st.sampled_from(["A", "a", " A ", "/x", "1. x", "[[/ask]]", "\ufeffB", "Stop"]),
)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    kind=_KINDS,
    prompt=st.lists(_PROMPT_LINES, min_size=1, max_size=4).map("\n".join),
    options=st.one_of(st.lists(_LABELS, max_size=5), st.lists(_LABELS, max_size=5).map(tuple)),
)
def test_every_spec_that_constructs_round_trips(kind: str, prompt: str, options: list[str]) -> None:
    try:
        spec = AskSpec(kind, prompt, options)  # type: ignore[arg-type]
    except StoppingPointError:
        with pytest.raises(InputError):
            make_spec(kind, prompt, options)  # the same verdict through make_spec
        return
    assert isinstance(spec.kind, AskKind) and isinstance(spec.options, tuple)
    assert spec == make_spec(kind, prompt, options)
    assert parse(render(spec)) == spec
    assert AskSpec(spec.kind, spec.prompt, spec.options) == spec
    payload = json.dumps({"prompt": spec.prompt, "options": list(spec.options), "kind": spec.kind.value})
    assert from_json(payload) == spec


# -- 4. from_json: the kind and hostile payloads -------------------------------------------


@pytest.mark.parametrize("kind", [[], "", 0, False, {}, 1, "poll", " choice"])
def test_a_present_kind_must_name_a_kind(kind: object) -> None:
    for options in (["A"], []):
        with pytest.raises(StoppingPointError, match="kind must be 'choice' or 'text'"):
            from_json({"prompt": "Q", "options": options, "kind": kind})
        with pytest.raises(StoppingPointError, match="kind must be 'choice' or 'text'"):
            from_json(json.dumps({"prompt": "Q", "options": options, "kind": kind}))


def test_an_absent_or_null_kind_defaults_and_any_case_is_accepted() -> None:
    assert from_json({"prompt": "Q", "options": ["A"], "kind": None}).kind is AskKind.CHOICE
    assert from_json({"prompt": "Q", "kind": None}).kind is AskKind.TEXT
    assert from_json('{"prompt": "Q", "options": ["A"], "kind": "CHOICE"}').kind is AskKind.CHOICE
    assert from_json('{"prompt": "Q", "kind": "Text"}').kind is AskKind.TEXT
    assert from_json({"prompt": "Q", "options": ("A", "B")}).options == ("A", "B")


def test_deeply_nested_json_is_a_stopping_point_error() -> None:
    for payload in ("[" * 100_000 + "]" * 100_000, '{"a":' * 50_000 + "1" + "}" * 50_000):
        with pytest.raises(StoppingPointError, match="nested too deeply"):
            from_json(payload)
        with pytest.raises(StoppingPointError, match="nested too deeply"):
            from_json(payload.encode())


def test_oversized_json_is_refused_before_it_is_read() -> None:
    huge = json.dumps({"prompt": "Q" + " " * MAX_JSON_CHARS, "options": ["A"]})
    with pytest.raises(StoppingPointError, match=f"the limit is {MAX_JSON_CHARS}"):
        from_json(huge)
    with pytest.raises(StoppingPointError, match=f"the limit is {MAX_JSON_CHARS}"):
        from_json(huge.encode())


def test_json_with_a_leading_bom_is_read() -> None:
    assert from_json('\ufeff{"prompt": "Q", "options": ["A"]}') == make_spec("choice", "Q", ["A"])
    assert from_json('\ufeff{"prompt": "Q"}'.encode()) == make_spec("text", "Q")


# -- 5. parser messages -----------------------------------------------------------------


def test_a_leading_bom_before_the_marker_is_tolerated() -> None:
    spec = make_spec("choice", "Which one?", ["Red", "Blue"])
    assert parse("\ufeff" + render(spec)) == spec
    assert parse(("\ufeff" + render(spec)).replace("\n", "\r\n")) == spec
    assert parse("Some text\n\ufeff[[ask]]\nWhich one?\n1. Red\n2. Blue\n\ufeff[[/ask]]") == spec
    assert is_marker_line("\ufeff[[ask]]") and is_marker_line("\ufeff  [[/ask]] ")
    with pytest.raises(StoppingPointError, match="marker"):
        make_spec("choice", "Q\n\ufeff[[/ask]]", ["A"])  # a line the parser reads as a marker


@pytest.mark.parametrize(
    ("output", "line"),
    [
        ("[[ask]]\nPick one\n0. A\n1. B\n[[/ask]]", 3),
        ("[[ask]]\nPick one\n1. A\n0. B\n[[/ask]]", 4),
        ("[[ask]]\nPick one\n00. A\n[[/ask]]", 3),
    ],
)
def test_numbering_from_zero_says_it_starts_at_one(output: str, line: int) -> None:
    with pytest.raises(StoppingPointError, match="numbered from 1") as caught:
        parse(output)
    assert caught.value.line == line
    assert "repeats" not in str(caught.value)


def test_a_first_option_above_one_is_a_gap_that_says_where_numbering_starts() -> None:
    with pytest.raises(StoppingPointError, match=r"gap.*numbered from 1") as caught:
        parse("[[ask]]\nPick one\n2. A\n3. B\n[[/ask]]")
    assert caught.value.line == 3


def test_an_enormous_option_number_is_a_stopping_point_error() -> None:
    digits = "1" * 5000  # int() refuses more than 4300 digits with a plain ValueError
    with pytest.raises(StoppingPointError, match="gap") as caught:
        parse(f"[[ask]]\nPick one\n1. A\n{digits}. B\n[[/ask]]")
    assert caught.value.line == 4
    assert len(str(caught.value)) < 200
    assert parse("[[ask]]\nPick one\n0000000001. A\n[[/ask]]").options == ("A",)
