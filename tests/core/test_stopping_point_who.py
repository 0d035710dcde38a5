"""Who may answer, written in a stopping point: the marker's ``for=`` and ``quorum=``, and
the JSON form's ``responders`` and ``quorum``."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from parkgate.core.kinds import AskKind
from parkgate.core.stopping_point import AskSpec, StoppingPointError, find, from_json, make_spec, parse, render

DEPLOY = "Deploy build 42?\n\n1. Deploy\n2. Hold"


def marker(head: str, body: str = DEPLOY) -> str:
    return f"Plan done.\n{head}\n{body}\n[[/ask]]\n"


def test_for_and_quorum_name_who_may_answer() -> None:
    spec = parse(marker("[[ask for=U_ALICE,U_BOB,U_CAROL quorum=2]]"))
    assert (spec.responders, spec.quorum) == (("U_ALICE", "U_BOB", "U_CAROL"), 2)
    assert spec.options == ("Deploy", "Hold")
    assert render(spec).splitlines()[0] == "[[ask for=U_ALICE,U_BOB,U_CAROL quorum=2]]"


@pytest.mark.parametrize(
    ("head", "responders", "quorum"),
    [
        ("[[ask]]", (), 1),
        ("[[ask for=U_ALICE]]", ("U_ALICE",), 1),
        ("[[ASK choice quorum=1 for=alice@example.org]]", ("alice@example.org",), 1),
        ("  [[ask  for=U_A,U_B   quorum=2 ]]  ", ("U_A", "U_B"), 2),
    ],
)
def test_the_attributes_follow_the_kind_in_either_order(head: str, responders: tuple[str, ...], quorum: int) -> None:
    spec = parse(marker(head))
    assert (spec.kind, spec.responders, spec.quorum) == (AskKind.CHOICE, responders, quorum)


def test_a_text_ask_takes_responders_with_quorum_one() -> None:
    spec = parse(marker("[[ask text for=U_ALICE,U_BOB]]", "Describe the change."))
    assert (spec.kind, spec.responders, spec.quorum) == (AskKind.TEXT, ("U_ALICE", "U_BOB"), 1)
    assert render(spec).splitlines()[0] == "[[ask text for=U_ALICE,U_BOB]]"


@pytest.mark.parametrize(
    ("head", "words"),
    [
        ("[[ask quorum=2]]", "quorum is given without responders"),
        ("[[ask for=U_A,U_A]]", "responder 2 repeats 'U_A'"),
        ("[[ask for=U_A, for=U_B]]", "for= is given twice"),
        ("[[ask for=U_A,]]", "responder 2 is empty"),
        ("[[ask for=U_A quorum=2]]", "quorum is 2; it must be from 1 to the 1 responders"),
        ("[[ask for=U_A,U_B quorum=0]]", "quorum is 0"),
        ("[[ask for=U_A quorum=two]]", "quorum=two is not a whole number"),
        ("[[ask for=U_A quorum=1 quorum=1]]", "quorum= is given twice"),
        ("[[ask for=U_A quorum=" + "9" * 40 + "]]", "is not a whole number"),
    ],
)
def test_a_bad_for_or_quorum_is_an_error_at_the_marker_line(head: str, words: str) -> None:
    with pytest.raises(StoppingPointError) as refused:
        parse(marker(head))
    assert words in str(refused.value) and refused.value.line == 2


def test_a_text_ask_with_a_quorum_above_one_is_refused() -> None:
    with pytest.raises(StoppingPointError, match="a text ask takes quorum 1"):
        parse(marker("[[ask text for=U_A,U_B quorum=2]]", "Describe it."))


def test_other_bracketed_words_stay_prose() -> None:
    assert find("As I said, [[ask me anything]] is a fine title.") is None
    assert find("[[ask who=U_A]]\n") is None
    with pytest.raises(StoppingPointError, match="a stopping-point marker"):
        make_spec("choice", "Which?\n[[ask for=U_A]]", ["a"])  # a prompt cannot hold a marker line


def test_the_json_form_names_who_may_answer() -> None:
    payload = {"prompt": "Deploy?", "options": ["Deploy", "Hold"], "responders": ["U_A", "U_B"], "quorum": 2}
    assert from_json(json.dumps(payload)) == AskSpec("choice", "Deploy?", ("Deploy", "Hold"), ("U_A", "U_B"), 2)
    assert find(json.dumps(payload)) == from_json(payload)
    for bad, words in (
        ({**payload, "responders": "U_A"}, "responders must be a list"),
        ({**payload, "quorum": True}, "quorum must be a whole number"),
        ({**payload, "responders": ["U A", "U_B"]}, "responder 1 holds whitespace"),
        ({**payload, "responders": None}, "quorum is given without responders"),
    ):
        with pytest.raises(StoppingPointError, match=words):
            from_json(bad)


_NAMES = st.text(st.sampled_from("abcXYZ_@.-019é"), min_size=1, max_size=12)


@st.composite
def who_specs(draw: st.DrawFn) -> AskSpec:
    kind = draw(st.sampled_from(list(AskKind)))
    responders = draw(st.lists(_NAMES, min_size=1, max_size=5, unique=True))
    quorum = draw(st.integers(1, len(responders))) if kind is AskKind.CHOICE else 1
    options = draw(st.lists(st.sampled_from(["Deploy", "Hold", "Roll back", "2"]), min_size=1, unique=True))
    try:
        return make_spec(kind, "Go ahead?", options if kind is AskKind.CHOICE else None, responders, quorum)
    except StoppingPointError:
        assume(False)
        raise


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.filter_too_much])
@given(spec=who_specs(), data=st.data())
def test_who_round_trips_through_the_marker_and_the_json(spec: AskSpec, data: st.DataObject) -> None:
    assert parse(render(spec)) == spec
    payload = {"prompt": spec.prompt, "options": list(spec.options), "kind": spec.kind.value}
    payload |= {"responders": list(spec.responders), "quorum": spec.quorum}
    assert from_json(json.dumps(payload)) == spec
    # The attributes in the other order, with extra blanks, mean the same.
    head, rest = render(spec).split("\n", 1)
    words = head.removeprefix("[[ask").removesuffix("]]").split()
    shuffled = data.draw(st.permutations([w for w in words if "=" in w]))
    kind = [w for w in words if "=" not in w]
    assert parse("  [[ask " + "  ".join([*kind, *shuffled]) + " ]]\n" + rest) == spec
