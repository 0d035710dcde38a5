"""Long lines in a stopping point change what the parser costs, never what it answers.

Model output reaches the parser (``ask_from_text``, the adapters), so a prompt injection
chooses its lines. That the cost stays linear in the input is a timing ratio, measured
in ``bench/parser_linear.py`` (``python -m bench.parser_linear``), not asserted here.
"""

from __future__ import annotations

from parkgate.core.stopping_point import AskSpec, StoppingPointError, find, parse, render
from parkgate.gateway.checks import MAX_SKILL_OUTPUT_CHARS


def _marker(body: str) -> str:
    return f"[[ask]]\nWhich one?\n{body}\n[[/ask]]"


def _filled(prefix: str, unit: str, suffix: str, length: int) -> str:
    """``prefix`` + ``unit`` repeated + ``suffix`` as an option line in a marker, ``length`` long."""
    room = length - len(_marker(prefix + suffix))
    return _marker(prefix + (unit * (room // len(unit) + 1))[: max(0, room)] + suffix)


def test_long_whitespace_runs_change_the_cost_not_the_answer() -> None:
    # A label's inner whitespace is folded and its outer whitespace dropped, as before;
    # a label over the limit is refused naming its line.
    assert parse(_filled("1. a", " ", "b", 60_000)).options == ("a b",)
    try:
        parse(_filled("1. a", "a ", "b", 60_000))
    except StoppingPointError as error:
        assert error.line == 3 and "longer than" in str(error)
    else:
        raise AssertionError("a 60,000-character label was accepted")
    spec = parse("[[ask]]\nWhich one?\n1." + " " * 5_000 + "Red" + "\t" * 5_000 + "\r\n2)  Blue  \n[[/ask]]")
    assert spec == AskSpec("choice", "Which one?", ("Red", "Blue"))
    assert parse(render(spec)) == spec


def test_the_largest_adversarial_outputs_are_answered_or_refused_by_name() -> None:
    # The shapes the benchmark times, at the largest skill output: each is parsed or
    # refused with a StoppingPointError, never another error.
    for prefix, unit in (("1. a", " "), ("1)", "\t "), ("1", " -"), ("", "1"), ("1 - a", " \r\n")):
        output = _filled(prefix, unit, "b", MAX_SKILL_OUTPUT_CHARS - 100)
        try:
            find(output)
        except StoppingPointError as error:
            assert str(error)


def test_a_text_question_too_long_or_empty_is_refused_at_its_marker_line() -> None:
    for output, line, says in (
        ("[[ask text]]\n\n[[/ask]]", 1, "prompt is empty"),
        ("Intro\n[[ask text]]\n" + "x" * 5_000 + "\n[[/ask]]", 2, "the limit is 4000"),
    ):
        try:
            parse(output)
        except StoppingPointError as error:
            assert error.line == line and says in str(error)
        else:
            raise AssertionError(f"{output[:30]!r} was accepted")
