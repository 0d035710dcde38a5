"""What a check covered and what it found: the summary table and the failures."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import ClassVar

from parkgate.core.kinds import AskKind, ReplyKind

from .cases import Case, InputClass, Sender, Who
from .outcome import REFUSED, Outcome

#: The order a who-table row lists the reply kinds it saw in.
KIND_ORDER: tuple[str, ...] = (*(kind.value for kind in ReplyKind), REFUSED)


@dataclass(slots=True)
class Report:
    """What a check covered and what it found. ``rows`` is the summary table."""

    states: int
    transitions: int
    failures: list[str] = field(default_factory=list)
    #: The matcher's table: asks anyone may answer, messages with no sender.
    rows: list[tuple[str, ...]] = field(default_factory=list)
    #: Who may answer: one row per ask kind, who, sender class and expiry, with the reply kinds seen.
    who_rows: list[tuple[str, ...]] = field(default_factory=list)
    #: The sender classes and the who-may-answer cases (quorum 1 and 2) the run covered.
    senders: list[str] = field(default_factory=list)
    audiences: list[str] = field(default_factory=list)

    HEADER: ClassVar[tuple[str, ...]] = ("ask", "collision", "input class", "expired", "mismatches", "result")
    WHO_HEADER: ClassVar[tuple[str, ...]] = ("ask", "who may answer", "sender", "expired", "transitions", "results")
    #: Failures listed in full by :meth:`render`; the rest are counted.
    SHOWN_FAILURES: ClassVar[int] = 50

    def render(self) -> str:
        """Plain-text tables of what was checked, the failures, and a closing count line."""
        out = table(self.HEADER, self.rows)
        if self.who_rows:
            out += ["", *table(self.WHO_HEADER, self.who_rows)]
        out += ["", f"sender classes: {', '.join(self.senders)}", f"who may answer: {'; '.join(self.audiences)}"]
        if self.failures:
            out.append("")
            out.append("failures:")
            out.extend(f"  {failure}" for failure in self.failures[: self.SHOWN_FAILURES])
            if len(self.failures) > self.SHOWN_FAILURES:
                out.append(f"  ... and {len(self.failures) - self.SHOWN_FAILURES} more")
        out.append("")
        out.append(f"checked {self.states} states, {self.transitions} transitions, {len(self.failures)} failures")
        return "\n".join(out)


def table(header: tuple[str, ...], rows: list[tuple[str, ...]]) -> list[str]:
    """``rows`` under ``header`` as plain-text lines, columns padded to their widest cell."""
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]

    def line(row: tuple[str, ...]) -> str:
        return "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()

    return [line(header), "  ".join("-" * width for width in widths), *(line(row) for row in rows)]


def build_report(results: list[tuple[Case, Outcome]], failures: list[str]) -> Report:
    """The report of a run: distinct states, transitions observed, failures, the tables."""
    states = len({case.state for case, _ in results})
    anyones = [(case, outcome) for case, outcome in results if case.who is Who.ANYONE and case.sender is Sender.NONE]
    return Report(
        states=states,
        transitions=len(results),
        failures=failures,
        rows=summarise(anyones),
        who_rows=summarise_who(results),
        senders=[sender.value for sender in Sender if any(case.sender is sender for case, _ in results)],
        audiences=[who.value for who in Who if any(case.who is who for case, _ in results)],
    )


def summarise_who(results: list[tuple[Case, Outcome]]) -> list[tuple[str, ...]]:
    """One row per (kind, who, sender, expired): how many transitions, and the kinds they got."""
    groups: dict[tuple[AskKind, Who, Sender, bool], set[str]] = {}
    counts: dict[tuple[AskKind, Who, Sender, bool], int] = {}
    for case, outcome in results:
        key = (case.ask_kind, case.who, case.sender, case.expired)
        groups.setdefault(key, set()).add(outcome.kind_name)
        counts[key] = counts.get(key, 0) + 1
    return [
        (
            kind.value,
            who.value,
            sender.value,
            "yes" if expired else "no",
            str(counts[kind, who, sender, expired]),
            ", ".join(name for name in KIND_ORDER if name in seen),
        )
        for (kind, who, sender, expired), seen in groups.items()
    ]


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
