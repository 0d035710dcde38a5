"""The stopping-point parser's cost is linear in its input, whatever the lines hold.

Model output reaches the parser (``ask_from_text``, the adapters), so a prompt injection
chooses its lines: long runs of spaces or tabs inside an option line, repeated
separators, endless digits, CRLF, a marker line of endless attributes. Two ratios, each
measured in the same run (the least of a few timings of ``find`` on each side):

- **same length**: an adversarial output against an ordinary one of the same length
  (many short lines: the most work per character a benign output has). Goal: under
  :data:`SAME_LENGTH_FACTOR` (a linear parser stays near 1x; the backtracking one this
  replaced took seconds on a 40,000-space option line, thousands of times over);
- **four times the input**: the same adversarial shape at a quarter of the largest
  skill output and at the largest. Goal: under :data:`FOUR_TIMES_INPUT_FACTOR` (linear:
  about 4x; quadratic: 16x).

A third ratio goes through the HTTP app (``--http``): ``POST /v1/asks`` with each
hostile option line as ``skill_output`` near the 256,000-character limit, against the
same request with an ordinary output of the same length (short prose lines and a small
menu), on one app and store (the app in process, on a SQLite file). Goal: under
:data:`SAME_LENGTH_FACTOR`; the body's JSON dominates both sides.

    python -m bench.parser_linear [--length 60000] [--http] [--json PATH]

It prints one line a case and exits 1 when a ratio misses its goal.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from parkgate.core.stopping_point import StoppingPointError, find
from parkgate.gateway.checks import MAX_SKILL_OUTPUT_CHARS

#: How much more an adversarial output may cost than an ordinary one of the same length.
SAME_LENGTH_FACTOR = 10.0
#: How much more four times the input may cost (linear: about 4x; quadratic: 16x).
FOUR_TIMES_INPUT_FACTOR = 8.0
#: Timings taken of each side; the least counts (noise only ever adds time).
TRIES = 3

#: Option lines: (prefix, repeated unit, suffix) inside a marker.
OPTION_LINES: tuple[tuple[str, str, str], ...] = (
    ("1. a", " ", "b"),  # the report's line: it took seconds at 40,000 spaces
    ("1)", "\t ", "b"),
    ("1", " -", "b"),
    ("", "1", "b"),
    ("1 - a", " \r\n", "b"),
    ("1.", "\u3000\u00a0", "."),
    ("\t1 - x", ")-", "1."),
    ("[[ask", " for=a", "]]"),
    ("[[ask text quorum=", "quorum=1 ,", " "),
)
#: Marker lines with no body: responders without end, attributes that never close.
MARKER_LINES: tuple[tuple[str, str, str], ...] = (
    ("[[ask for=", "U_A,", "]]"),
    ("[[ask", " for=a quorum=1", ""),
    ("[[ask ", " ", "x]]"),
)


@dataclass(frozen=True)
class Case:
    """One adversarial shape and its ratio against its baseline."""

    kind: str  # "same length" | "four times the input"
    shape: str
    ratio: float
    goal: float

    @property
    def met(self) -> bool:
        return self.ratio < self.goal


def cost(output: str) -> float:
    """The least of :data:`TRIES` timings of ``find(output)`` (a refusal is an answer too)."""
    best = float("inf")
    for _ in range(TRIES):
        started = time.perf_counter()
        with contextlib.suppress(StoppingPointError):
            find(output)
        best = min(best, time.perf_counter() - started)
    return best


def marker(body: str) -> str:
    return f"[[ask]]\nWhich one?\n{body}\n[[/ask]]"


def ordinary(length: int) -> str:
    """An ordinary output of ``length`` characters: many short lines."""
    return marker(("x\n" * (length // 2 + 1))[: max(0, length - len(marker("")))])


def filled(prefix: str, unit: str, suffix: str, length: int) -> str:
    """``prefix`` + ``unit`` repeated + ``suffix`` as an option line in a marker, ``length`` long."""
    room = length - len(marker(prefix + suffix))
    return marker(prefix + (unit * (room // len(unit) + 1))[: max(0, room)] + suffix)


def bare(prefix: str, unit: str, suffix: str, length: int) -> str:
    """A marker line alone: ``prefix`` + ``unit`` repeated + ``suffix``, about ``length`` long."""
    return prefix + unit * (length // len(unit)) + suffix


def measure(length: int = 60_000, largest: int = MAX_SKILL_OUTPUT_CHARS - 100) -> list[Case]:
    """Every case's ratio: each shape at ``length`` against an ordinary output, and the
    option lines at a quarter of ``largest`` against ``largest``."""
    cases = []
    baseline = cost(ordinary(length))
    for build, shapes in ((filled, OPTION_LINES), (bare, MARKER_LINES)):
        for prefix, unit, suffix in shapes:
            shape = f"{prefix!r} + {unit!r}... + {suffix!r}"
            ratio = cost(build(prefix, unit, suffix, length)) / baseline
            cases.append(Case("same length", shape, ratio, SAME_LENGTH_FACTOR))
    for prefix, unit, suffix in OPTION_LINES[:5]:
        small = cost(filled(prefix, unit, suffix, largest // 4))
        large = cost(filled(prefix, unit, suffix, largest))
        cases.append(Case("four times the input", f"{prefix!r} + {unit!r}...", large / small, FOUR_TIMES_INPUT_FACTOR))
    return cases


#: The hostile option lines sent through HTTP: (prefix, unit, suffix).
HTTP_LINES: dict[str, tuple[str, str, str]] = {
    "the reported line": ("1. a", " ", "b"),
    "tabs after 1)": ("1)", "\t", "x"),
    "repeated separators": ("1", " -", ""),
    "spaces and CRLF": ("1 - a", " \r\n", "2. b"),
    "endless digits": ("", "1", "."),
}


def _prose_marker(body: str) -> str:
    return f"Some prose first.\n[[ask]]\nWhich one?\n{body}\n[[/ask]]"


def measure_http(length: int = MAX_SKILL_OUTPUT_CHARS - 1_000) -> list[Case]:
    """Each of :data:`HTTP_LINES` posted as a ``skill_output`` of ``length`` characters,
    against an ordinary output of that length (the least of :data:`TRIES` posts each)."""
    import asyncio
    import tempfile

    import httpx

    from parkgate import Gateway
    from parkgate.http.app import create_app

    menu = _prose_marker("1. Red\n2. Blue")
    ordinary_output = "ok\n" * ((length - len(menu)) // 3) + menu
    conversations = iter(range(1_000_000))

    async def timed(http: httpx.AsyncClient, output: str) -> float:
        best = float("inf")
        for _ in range(TRIES):
            body = {"conversation_id": f"c-{next(conversations)}", "skill_output": output}
            started = time.perf_counter()
            response = await http.post("/v1/asks", json=body)
            best = min(best, time.perf_counter() - started)
            if response.status_code not in (201, 422):
                raise RuntimeError(f"POST /v1/asks answered {response.status_code}: {response.text[:200]}")
        return best

    async def run(folder: str) -> list[Case]:
        with Gateway(f"sqlite:///{folder}/parkgate.db", surface="http") as gateway:
            app = create_app(gateway, deliver_callbacks=False)
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(transport=transport, base_url="http://parkgate", timeout=600) as http:
                baseline = await timed(http, ordinary_output)
                cases = []
                for name, (prefix, unit, suffix) in HTTP_LINES.items():
                    room = length - len(_prose_marker(prefix + suffix))
                    output = _prose_marker(prefix + unit * (room // len(unit)) + suffix)
                    cases.append(Case("POST /v1/asks", name, await timed(http, output) / baseline, SAME_LENGTH_FACTOR))
                return cases

    with tempfile.TemporaryDirectory() as folder:
        return asyncio.run(run(folder))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.parser_linear", description=__doc__.splitlines()[0])
    parser.add_argument("--length", type=int, default=60_000, help="characters of each same-length case")
    parser.add_argument("--largest", type=int, default=MAX_SKILL_OUTPUT_CHARS - 100, help="the four-times case's size")
    parser.add_argument("--http", action="store_true", help="also POST each hostile line through the HTTP app")
    parser.add_argument("--http-length", type=int, default=MAX_SKILL_OUTPUT_CHARS - 1_000, help="its output's size")
    parser.add_argument("--json", type=Path, help="also write the cases to this file")
    args = parser.parse_args(argv)
    cases = measure(args.length, args.largest) + (measure_http(args.http_length) if args.http else [])
    for case in cases:
        verdict = "ok" if case.met else "MISSED"
        print(f"{case.kind:<22} {case.ratio:6.2f}x (goal < {case.goal:g}x) {verdict:<6} {case.shape}")
    if args.json is not None:
        args.json.write_text(json.dumps([asdict(case) | {"met": case.met} for case in cases], indent=2))
    return 0 if all(case.met for case in cases) else 1


if __name__ == "__main__":
    sys.exit(main())
