"""The stopping-point parser costs time linear in its input, whatever the lines hold.

Model output reaches the parser (``ask_from_text``, the adapters), so a prompt injection
chooses its lines: long runs of spaces or tabs inside an option line, repeated
separators, endless digits, CRLF. Each claim here is a ratio measured in the same run
(never a wall-clock limit): an adversarial output costs at most a constant factor more
than an ordinary output of the same length, and twice the input costs about twice the
time. A backtracking parser misses these ratios by orders of magnitude (a 40,000-space
option line took seconds, and the cost grew with the square of the line).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from parkgate.checks import MAX_SKILL_OUTPUT_CHARS
from parkgate.core.stopping_point import AskSpec, StoppingPointError, find, parse, render

#: How much more an adversarial output may cost than an ordinary one of the same length.
#: Generous: a linear parser stays near 1x; the backtracking one was thousands of times over.
SAME_LENGTH_FACTOR = 10.0
#: How much more four times the input may cost (linear: about 4x; quadratic: 16x).
FOUR_TIMES_INPUT_FACTOR = 8.0


def _cost(output: str) -> float:
    """The least of a few timings of ``find(output)`` (a refusal counts: it is an answer)."""
    best = float("inf")
    for _ in range(3):
        started = time.perf_counter()
        with contextlib.suppress(StoppingPointError):
            find(output)
        best = min(best, time.perf_counter() - started)
    return best


def _marker(body: str) -> str:
    return f"[[ask]]\nWhich one?\n{body}\n[[/ask]]"


def _ordinary(length: int) -> str:
    """An ordinary output of ``length`` characters: many short lines (the most lines, and so
    the most work per character, that a benign output of that length can have)."""
    return _marker(("x\n" * (length // 2 + 1))[: max(0, length - len(_marker("")))])


def _filled(prefix: str, unit: str, suffix: str, length: int) -> str:
    """``prefix`` + ``unit`` repeated + ``suffix`` as an option line in a marker, ``length`` long."""
    room = length - len(_marker(prefix + suffix))
    return _marker(prefix + (unit * (room // len(unit) + 1))[: max(0, room)] + suffix)


def _ratio(adversarial: Callable[[int], str], length: int) -> float:
    return _cost(adversarial(length)) / _cost(_ordinary(length))


_PREFIXES = st.sampled_from(
    [
        "1.",
        "1)",
        "1 -",
        "1. a",
        "1)\tb",
        "",
        " ",
        "\t1 - x",
        "[[ask",
        "[[ask choice",
        "[[ask for=",
        "[[ask text quorum=",
    ]
)
_FRAGMENTS = st.sampled_from(
    [" ", "\t", "  ", ".", ")", "-", " -", "1", "a", "\r\n", "\r", "\u3000", "\u00a0", "]]", " for=a", "quorum=1 ", ","]
)
_SUFFIXES = st.sampled_from(["", "b", ".", "1.", "]]", " ", "\r\n2. c"])
_LENGTHS = st.sampled_from([60_000, MAX_SKILL_OUTPUT_CHARS - 100])


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    prefix=_PREFIXES,
    unit=st.lists(_FRAGMENTS, min_size=1, max_size=4).map("".join),
    suffix=_SUFFIXES,
    length=_LENGTHS,
)
def test_adversarial_lines_cost_no_more_than_ordinary_output_of_the_same_length(
    prefix: str, unit: str, suffix: str, length: int
) -> None:
    ratio = _ratio(lambda size: _filled(prefix, unit, suffix, size), length)
    assert ratio < SAME_LENGTH_FACTOR, f"{prefix!r} + {unit!r}... + {suffix!r} at {length}: {ratio:.1f}x"


def test_the_60000_space_option_line_costs_what_an_ordinary_output_does() -> None:
    # The line of the report: "1. a" + spaces + "b" (it took seconds at 40,000 spaces).
    def spaced(size: int) -> str:
        return _filled("1. a", " ", "b", size)

    assert spaced(60_000).count(" ") >= 59_900
    assert _ratio(spaced, 60_000) < SAME_LENGTH_FACTOR


def test_a_marker_line_of_endless_attributes_costs_what_an_ordinary_output_does() -> None:
    # The marker's own line: responders without end, or attributes that never close.
    for prefix, unit, suffix in (
        ("[[ask for=", "U_A,", "]]"),
        ("[[ask", " for=a quorum=1", ""),
        ("[[ask ", " ", "x]]"),
    ):
        ratio = _ratio(lambda size, p=prefix, u=unit, s=suffix: p + u * (size // len(u)) + s, 60_000)
        assert ratio < SAME_LENGTH_FACTOR, f"{prefix!r} + {unit!r}... + {suffix!r}: {ratio:.1f}x"


def test_four_times_the_input_costs_about_four_times_the_time() -> None:
    quarter = MAX_SKILL_OUTPUT_CHARS // 4
    for prefix, unit in (("1. a", " "), ("1)", "\t "), ("1", " -"), ("", "1"), ("1 - a", " \r\n")):
        small = _cost(_filled(prefix, unit, "b", quarter))
        large = _cost(_filled(prefix, unit, "b", MAX_SKILL_OUTPUT_CHARS - 100))
        assert large / small < FOUR_TIMES_INPUT_FACTOR, f"{prefix!r} + {unit!r}...: {large / small:.1f}x"


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
