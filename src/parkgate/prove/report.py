"""What a check covered and what it found: the summary table and the failures."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import ClassVar

from parkgate.core.kinds import AskKind

from .cases import Case, InputClass
from .outcome import Outcome


@dataclass(slots=True)
class Report:
    """What a check covered and what it found. ``rows`` is the summary table."""

    states: int
    transitions: int
    failures: list[str] = field(default_factory=list)
    rows: list[tuple[str, ...]] = field(default_factory=list)

    HEADER: ClassVar[tuple[str, ...]] = ("ask", "collision", "input class", "expired", "mismatches", "result")
    #: Failures listed in full by :meth:`render`; the rest are counted.
    SHOWN_FAILURES: ClassVar[int] = 50

    def render(self) -> str:
        """A plain-text table of what was checked, the failures, and a closing count line."""
        table = [self.HEADER, *self.rows]
        widths = [max(len(row[i]) for row in table) for i in range(len(self.HEADER))]

        def line(row: tuple[str, ...]) -> str:
            return "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()

        out = [line(self.HEADER), "  ".join("-" * width for width in widths)]
        out.extend(line(row) for row in self.rows)
        if self.failures:
            out.append("")
            out.append("failures:")
            out.extend(f"  {failure}" for failure in self.failures[: self.SHOWN_FAILURES])
            if len(self.failures) > self.SHOWN_FAILURES:
                out.append(f"  ... and {len(self.failures) - self.SHOWN_FAILURES} more")
        out.append("")
        out.append(f"checked {self.states} states, {self.transitions} transitions, {len(self.failures)} failures")
        return "\n".join(out)


def build_report(results: list[tuple[Case, Outcome]], failures: list[str]) -> Report:
    """The report of a run: distinct states, transitions observed, failures, the table."""
    states = len({case.state for case, _ in results})
    return Report(states=states, transitions=len(results), failures=failures, rows=summarise(results))


def summarise(results: list[tuple[Case, Outcome]]) -> list[tuple[str, ...]]:
    """One row per (kind, collision, input class, expired): counts seen and results."""
    groups: dict[tuple[AskKind, bool, InputClass, bool], list[tuple[Case, Outcome]]] = {}
    for case, outcome in results:
        groups.setdefault((case.ask_kind, case.collision, case.input_class, case.expired), []).append((case, outcome))
    rows: list[tuple[str, ...]] = []
    for (kind, collision, input_class, expired), members in groups.items():
        by_kind: dict[str, list[int]] = {}
        for case, outcome in members:
            by_kind.setdefault(outcome.kind_name, []).append(case.mismatches)
        ordered = sorted(by_kind.items(), key=lambda item: (min(item[1]), item[0]))
        if len(ordered) == 1:
            result = ordered[0][0]
        else:
            result = ", ".join(f"{name} at {span(counts)}" for name, counts in ordered)
        rows.append(
            (
                kind.value,
                "yes" if collision else "no",
                input_class.value,
                "yes" if expired else "no",
                span(case.mismatches for case, _ in members),
                result,
            )
        )
    return rows


def span(values: Iterable[int]) -> str:
    """``3`` for one value, ``0-5`` for several: the lowest and the highest."""
    ordered = sorted(set(values))
    low, high = ordered[0], ordered[-1]
    return str(low) if low == high else f"{low}-{high}"
