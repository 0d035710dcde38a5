"""The stopping-point marker and JSON input: tolerant where producers drift, strict where
it matters, and ``parse(render(spec)) == spec`` for every valid spec."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from parkgate.core.kinds import AskKind
from parkgate.core.stopping_point import (
    MAX_OPTIONS,
    AskSpec,
    StoppingPointError,
    find,
    from_json,
    make_spec,
    parse,
    render,
)

UML = AskSpec(AskKind.CHOICE, "Which UML diagram?", ("Sequence", "Class", "Use case"))


def lines_error(text: str) -> StoppingPointError:
    with pytest.raises(StoppingPointError) as caught:
        parse(text)
    return caught.value


# -- the canonical form ------------------------------------------------------------------


def test_render_is_the_documented_marker() -> None:
    assert render(UML) == "[[ask]]\nWhich UML diagram?\n\n1. Sequence\n2. Class\n3. Use case\n[[/ask]]"
    text = AskSpec(AskKind.TEXT, "Describe the change.")
    assert render(text) == "[[ask text]]\nDescribe the change.\n[[/ask]]"
    assert parse(render(UML)) == UML
    assert parse(render(text)) == text


def test_output_without_a_marker_has_no_stopping_point() -> None:
    assert find("Just some model output.\n1. not an ask\n") is None
    with pytest.raises(StoppingPointError, match="no \\[\\[ask\\]\\]"):
        parse("Just some model output.")


# -- tolerant ------------------------------------------------------------------------------


@pytest.mark.parametrize("style", ["{n}. {label}", "{n}) {label}", "{n} - {label}", "{n}.{label}", "{n} -{label}"])
def test_numbering_styles(style: str) -> None:
    options = "\n".join(style.format(n=i, label=label) for i, label in enumerate(UML.options, start=1))
    assert parse(f"[[ask]]\nWhich UML diagram?\n{options}\n[[/ask]]") == UML


def test_blank_lines_anywhere_crlf_and_trailing_spaces() -> None:
    drifted = (
        "\r\n\r\n[[ask]]   \r\n\r\n\r\n"
        "Which UML diagram?   \r\n\r\n\r\n\r\n"
        "1) Sequence  \r\n\r\n"
        "  2)   Class\t\r\n\r\n\r\n"
        "3)  Use case \r\n\r\n"
        "[[/ask]]  \r\n"
    )
    assert parse(drifted) == UML


def test_lone_cr_line_ends() -> None:
    assert parse(render(UML).replace("\n", "\r")) == UML


def test_marker_inside_surrounding_free_text() -> None:
    output = (
        "I looked at the repository and there are several options.\n"
        "Here is what I found:\n"
        "1. a numbered list before the marker is just text\n\n"
        f"{render(UML)}\n\n"
        "Let me know which one.\n2. trailing numbered text is not an option either\n"
    )
    assert parse(output) == UML


def test_marker_case_and_explicit_kind() -> None:
    assert parse("[[ASK CHOICE]]\nWhich UML diagram?\n1. Sequence\n2. Class\n3. Use case\n[[/ASK]]") == UML
    assert parse("[[Ask Text]]\nDescribe it.\n[[/ask]]") == AskSpec(AskKind.TEXT, "Describe it.")


def test_multi_line_prompt_keeps_its_lines_and_folds_blank_runs() -> None:
    output = "[[ask]]\nFirst line.\n\n\n\nSecond line:\n  indented detail\n\n1. Yes\n2. No\n[[/ask]]"
    assert parse(output) == AskSpec(AskKind.CHOICE, "First line.\n\nSecond line:\n  indented detail", ("Yes", "No"))


def test_numbered_lines_inside_the_prompt_stay_prompt() -> None:
    output = "[[ask]]\nSteps:\n1. build\n2. test\nWhich step failed?\n1. build\n2. test\n[[/ask]]"
    assert parse(output) == AskSpec(AskKind.CHOICE, "Steps:\n1. build\n2. test\nWhich step failed?", ("build", "test"))


def test_text_ask_keeps_numbered_lines_as_prompt() -> None:
    spec = parse("[[ask text]]\nTell me:\n1. what broke\n[[/ask]]")
    assert spec == AskSpec(AskKind.TEXT, "Tell me:\n1. what broke")


# -- strict: each error names the line -------------------------------------------------------


@pytest.mark.parametrize(
    ("output", "line", "words"),
    [
        ("[[ask]]\nPick one\n1. A\n3. B\n[[/ask]]", 4, "gap"),
        ("[[ask]]\nPick one\n1. A\n2. B\n4. C\n[[/ask]]", 5, "gap"),
        ("[[ask]]\nPick one\n2. A\n3. B\n[[/ask]]", 3, "gap"),
        ("[[ask]]\nPick one\n1. A\n1. B\n[[/ask]]", 4, "repeats a number"),
        ("[[ask]]\nPick one\n1. A\n2. B\n2. C\n[[/ask]]", 5, "repeats a number"),
        ("[[ask]]\nPick one\n1. Yes\n2. No\n3.  yes \n[[/ask]]", 5, "repeats option 1"),
        ("[[ask]]\nPick one\n1. Use  case\n2. USE CASE\n[[/ask]]", 4, "repeats option 1"),
        ("[[ask]]\nPick one\n1. A\n2.\n[[/ask]]", 4, "no label"),
        ("[[ask]]\nPick one\n1)   \n2) B\n[[/ask]]", 3, "no label"),
        ("intro\n\n[[ask]]\nPick one\n1. A\n2. B\n", 3, "never closed"),
        ("[[ask]]\nA?\n1. x\n[[/ask]]\nmore\n[[ask]]\nB?\n1. y\n[[/ask]]", 6, "second stopping point"),
        ("[[ask]]\nA?\n[[ask]]\n1. x\n[[/ask]]", 3, "inside another"),
        ("text\n[[/ask]]\n", 2, "without an opening"),
        ("[[ask]]\nPick one\n[[/ask]]", 1, "no numbered options"),
        ("[[ask]]\n\n1. A\n2. B\n[[/ask]]", 1, "prompt is empty"),
        ("[[ask]]\nPick one\n1. A\n2. /cancel\n[[/ask]]", 4, "kept for commands"),
    ],
)
def test_strict_errors_name_the_line(output: str, line: int, words: str) -> None:
    error = lines_error(output)
    assert error.line == line, str(error)
    assert words in str(error)
    assert str(error).startswith(f"line {line}:")


def test_line_numbers_count_crlf_lines_once() -> None:
    error = lines_error("intro\r\n\r\n[[ask]]\r\nPick one\r\n1. A\r\n3. B\r\n[[/ask]]\r\n")
    assert error.line == 6


def test_line_of_a_duplicate_label_after_blank_lines() -> None:
    error = lines_error("[[ask]]\nPick one\n\n1. A\n\n\n2. B\n\n3. a\n[[/ask]]")
    assert error.line == 9


# -- make_spec: the limits and the canonical form ------------------------------------------


def test_option_list_of_zero_entries_errors() -> None:
    with pytest.raises(StoppingPointError, match="at least one option"):
        make_spec(AskKind.CHOICE, "Pick one", [])


def test_option_list_of_a_thousand_entries_errors() -> None:
    with pytest.raises(StoppingPointError, match=f"1000 options; the limit is {MAX_OPTIONS}"):
        make_spec(AskKind.CHOICE, "Pick one", [f"option {i}" for i in range(1000)])
    many = "\n".join(f"{i}. option {i}" for i in range(1, 1001))
    with pytest.raises(StoppingPointError, match="1000 options"):
        parse(f"[[ask]]\nPick one\n{many}\n[[/ask]]")


def test_the_limit_itself_is_allowed() -> None:
    spec = make_spec(AskKind.CHOICE, "Pick one", [f"option {i}" for i in range(MAX_OPTIONS)])
    assert len(spec.options) == MAX_OPTIONS
    assert parse(render(spec)) == spec


@pytest.mark.parametrize(
    ("kind", "prompt", "options", "words"),
    [
        ("choice", "", ["A"], "prompt is empty"),
        ("choice", " \n\n  ", ["A"], "prompt is empty"),
        ("text", "Describe", ["A"], "takes no options"),
        ("poll", "Pick", ["A"], "kind must be"),
        ("choice", "Pick", ["A", "  "], "option 2 is empty"),
        ("choice", "Pick", ["A", "a"], "option 2 repeats option 1"),
        ("choice", "Pick", ["/stop"], "kept for commands"),
        ("choice", "Pick", ["／stop"], "kept for commands"),  # fullwidth solidus folds to "/"
        ("choice", "Pick", ["A\x00"], "NUL"),
        ("choice", "Pick\x00", ["A"], "NUL"),
        ("choice", "Pick one:\n1. like this", ["A"], "looks like a numbered option"),
        ("choice", "Pick\n[[/ask]]", ["A"], "marker"),
        ("text", "  [[ask]]  \nDescribe", [], "marker"),
    ],
)
def test_make_spec_rejects(kind: str, prompt: str, options: list[str], words: str) -> None:
    with pytest.raises(StoppingPointError, match=words):
        make_spec(kind, prompt, options)


def test_make_spec_canonicalises_labels_and_prompt() -> None:
    spec = make_spec("choice", "\n\n  Which one?   \r\n\r\n\r\nReally?  \n\n", ["  Use \t case  ", "B"])
    assert spec == AskSpec(AskKind.CHOICE, "  Which one?\n\nReally?", ("Use case", "B"))


# -- JSON input ----------------------------------------------------------------------------


def test_from_json_valid() -> None:
    assert from_json(json.dumps({"prompt": "Which UML diagram?", "options": list(UML.options)})) == UML
    assert from_json({"prompt": "Which UML diagram?", "options": list(UML.options), "kind": "choice"}) == UML
    assert from_json(b'{"prompt": "Describe it.", "kind": "text"}') == AskSpec(AskKind.TEXT, "Describe it.")
    assert from_json('{"prompt": "Describe it."}') == AskSpec(AskKind.TEXT, "Describe it.")
    assert from_json('{"prompt": "Describe it.", "options": []}') == AskSpec(AskKind.TEXT, "Describe it.")


@pytest.mark.parametrize(
    ("payload", "words"),
    [
        ("{not json", "not valid JSON"),
        (b"\xff\xfe\x00{", "not valid JSON"),
        ("[1, 2]", "JSON object"),
        ('"Which?"', "JSON object"),
        ('{"prompt": "Which?", "options": ["A"], "extra": 1}', "unknown field"),
        ('{"prompt": "Which?", "options": "A, B"}', "options must be a list"),
        ('{"prompt": "Which?", "options": ""}', "options must be a list"),
        ('{"prompt": "Which?", "options": {}}', "options must be a list"),
        ('{"prompt": "Which?", "options": [1, 2]}', "option 1 is not a string"),
        ('{"prompt": "Which?", "options": ["A", "A"]}', "repeats option 1"),
        ('{"prompt": "Which?", "kind": "choice"}', "at least one option"),
        ('{"prompt": "Which?", "kind": "poll", "options": ["A"]}', "kind must be"),
        ('{"prompt": "Which?", "kind": ["choice"], "options": ["A"]}', "kind must be"),
        ('{"prompt": 5, "options": ["A"]}', "prompt must be a string"),
        ('{"options": ["A"]}', "prompt"),
        ('{"prompt": "Which?", "kind": "text", "options": ["A"]}', "takes no options"),
    ],
)
def test_from_json_invalid(payload: str | bytes, words: str) -> None:
    with pytest.raises(StoppingPointError, match=words):
        from_json(payload)


# -- properties: the round trip ------------------------------------------------------------

# Lines a producer might write, including ones that tempt the parser: numbered lines,
# marker look-alikes, leading indentation, odd Unicode.
_TRICKY_LINES = st.sampled_from(
    [
        "1. a numbered line",
        "2) another",
        "10 - ten",
        "[[ask]]",
        "[[/ask]]",
        "  [[ask text]]",
        "-",
        "   indented",
        "// comment",
        "/cancel",
        "Straße ２",
        "",
        "   ",
    ]
)
_PROMPT_LINE = st.one_of(st.text(st.characters(exclude_categories=("Cs",)), max_size=30), _TRICKY_LINES)
PROMPTS = st.lists(_PROMPT_LINE, min_size=1, max_size=5).map("\n".join)
_LABEL = st.one_of(
    st.text(st.characters(exclude_categories=("Cs",)), min_size=1, max_size=20),
    st.sampled_from(["Stop", "menu", "2", "1. nested", ") x", "- dash", "-5 degrees", "[[/ask]]", "a  b"]),
)
LABELS = st.lists(_LABEL, min_size=1, max_size=8)


@st.composite
def specs(draw: st.DrawFn) -> AskSpec:
    """Any valid spec: random prompts and labels through make_spec, invalid ones dropped."""
    kind = draw(st.sampled_from(list(AskKind)))
    prompt = draw(PROMPTS)
    labels = draw(LABELS) if kind is AskKind.CHOICE else []
    try:
        return make_spec(kind, prompt, labels)
    except StoppingPointError:
        assume(False)
        raise


@st.composite
def drifted(draw: st.DrawFn, spec: AskSpec) -> str:
    """``spec`` written the way a sloppy producer would: same meaning, different bytes."""

    def blanks() -> list[str]:
        return [draw(st.sampled_from(["", " ", "\t", "   "])) for _ in range(draw(st.integers(0, 3)))]

    def trail() -> str:
        return draw(st.sampled_from(["", " ", "  ", "\t"]))

    style = draw(st.sampled_from(["{n}. {label}", "{n}) {label}", "{n} - {label}", "{n}.  {label}", " {n})\t{label}"]))
    head = (
        "[[ask text]]" if spec.kind is AskKind.TEXT else draw(st.sampled_from(["[[ask]]", "[[ask choice]]", "[[ASK]]"]))
    )
    lines = [*blanks(), head + trail(), *blanks()]
    for line in spec.prompt.split("\n"):
        if line:
            lines.append(line + trail())
        else:  # a blank prompt line may become several (the canonical form folds them)
            lines.extend(["", *blanks()])
    if spec.options:
        lines.extend(blanks())
        for number, label in enumerate(spec.options, start=1):
            lines.append(style.format(n=number, label=label) + trail())
            lines.extend(blanks())
    lines.append("[[/ask]]" + trail())
    before = draw(st.sampled_from(["", "Here is my plan.\n1. read\n2. write\n\n", "Done thinking.\n"]))
    after = draw(st.sampled_from(["", "\nThanks!", "\n\n3. not an option\n"]))
    newline = draw(st.sampled_from(["\n", "\r\n"]))
    return (before + "\n".join(lines) + after).replace("\n", newline)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.filter_too_much, HealthCheck.too_slow])
@given(spec=specs())
def test_parse_render_round_trip(spec: AskSpec) -> None:
    assert parse(render(spec)) == spec
    assert make_spec(spec.kind, spec.prompt, spec.options) == spec  # a spec is a fixed point


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.filter_too_much, HealthCheck.too_slow])
@given(data=st.data(), spec=specs())
def test_drifted_rendering_parses_to_the_same_spec(data: st.DataObject, spec: AskSpec) -> None:
    output = data.draw(drifted(spec))
    assert parse(output) == spec


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.filter_too_much, HealthCheck.too_slow])
@given(spec=specs())
def test_json_round_trip(spec: AskSpec) -> None:
    payload = json.dumps({"prompt": spec.prompt, "options": list(spec.options), "kind": spec.kind.value})
    assert from_json(payload) == spec


_OUTPUT_LINE = st.one_of(
    _TRICKY_LINES,
    st.sampled_from(["[[ask]]", "[[/ask]]", "[[ask text]]", "1. A", "2. B", "2. A", "3.", "Pick one"]),
    st.text(max_size=20),
)


@settings(max_examples=300, deadline=None)
@given(lines=st.lists(_OUTPUT_LINE, max_size=12), newline=st.sampled_from(["\n", "\r\n"]))
def test_parser_either_parses_or_names_a_line(lines: list[str], newline: str) -> None:
    """Any output: a stopping point that round-trips, none, or an error naming a real line."""
    output = newline.join(lines)
    try:
        spec = find(output)
    except StoppingPointError as error:
        if error.line is not None:
            physical = output.replace("\r\n", "\n").replace("\r", "\n").split("\n")
            assert 1 <= error.line <= len(physical)
            assert str(error).startswith(f"line {error.line}: ")
        return
    if spec is not None:
        assert parse(render(spec)) == spec
