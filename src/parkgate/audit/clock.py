"""The clock check's result: which parked rows are open, since when, and for how long.

A reader (:mod:`~parkgate.audit.langgraph`, :mod:`~parkgate.audit.table`) returns
:class:`Parked` rows; :class:`ClockReport` orders them oldest first and says how many
are older than the bound the user can name from their code.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from parkgate.errors import StoreError

#: The most of a value (an interrupt's payload, a column) a report shows.
SHOWN_CHARS = 80


def shorten(value: object, limit: int = SHOWN_CHARS) -> str:
    """``value`` as one short line: text as it is, anything else as JSON, cut to ``limit``
    characters with an ellipsis."""
    if not isinstance(value, str):
        try:
            value = json.dumps(value, ensure_ascii=False, default=str, sort_keys=True)
        except (RecursionError, TypeError, ValueError):  # nested too deep, or keys that do not sort
            value = f"({type(value).__name__} not shown)"
    line = " ".join(value.split())
    return line if len(line) <= limit else line[: limit - 1] + "\u2026"


def as_utc(value: object, what: str) -> datetime:
    """A timestamp column's value as an aware UTC datetime: a datetime (naive is UTC), ISO
    8601 text (``2026-08-29 08:00:00``, ``...Z``, ``...+02:00``), or seconds since the epoch."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        try:
            return datetime.fromtimestamp(value, UTC)
        except (OverflowError, OSError, ValueError):
            raise StoreError(f"{what} {shorten(repr(value))} is not a time in seconds since the epoch") from None
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value.strip())
        except ValueError:
            raise StoreError(f"{what} {shorten(repr(value))} is not an ISO 8601 timestamp") from None
    if not isinstance(value, datetime):
        raise StoreError(f"{what} holds {type(value).__name__}, not a timestamp")
    try:
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)
    except (OverflowError, ValueError):
        raise StoreError(f"{what} {shorten(repr(value))} is out of range in UTC") from None


@dataclass(frozen=True)
class Parked:
    """One parked row: what identifies it (``fields``, in the order shown) and when it was asked."""

    fields: Mapping[str, str]
    asked_at: datetime


@dataclass(frozen=True)
class ClockReport:
    """The parked rows of one source against a clock reading and an optional bound."""

    source: str
    now: datetime
    bound: timedelta | None = None
    parked: list[Parked] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.parked.sort(key=lambda row: row.asked_at)

    def age(self, row: Parked) -> timedelta:
        """How long ``row`` has been open."""
        return self.now - row.asked_at

    def hours_open(self, row: Parked) -> float:
        """:meth:`age` in hours, rounded to hundredths."""
        return round(self.age(row).total_seconds() / 3600, 2)

    def too_old(self, row: Parked) -> bool:
        """Whether ``row`` is older than the bound (never, without one)."""
        return self.bound is not None and self.age(row) > self.bound

    @property
    def overdue(self) -> list[Parked]:
        """The rows older than the bound, oldest first."""
        return [row for row in self.parked if self.too_old(row)]

    def to_dict(self, row: Parked) -> dict[str, Any]:
        """``row`` as one JSON object: its fields, ``asked_at``, ``hours_open``, ``overdue``."""
        return {
            **row.fields,
            "asked_at": row.asked_at.isoformat(),
            "hours_open": self.hours_open(row),
            "overdue": self.too_old(row),
        }

    def summary(self) -> str:
        """One line: how many are parked, how many past the bound, and the oldest's age."""
        if not self.parked:
            return f"nothing parked in {self.source}"
        line = f"{len(self.parked)} parked in {self.source}; oldest {self.hours_open(self.parked[0]):.2f} h open"
        if self.bound is not None:
            line += f"; {len(self.overdue)} older than {duration_text(self.bound)}"
        return line


def duration_text(duration: timedelta) -> str:
    """A bound as a person writes it: ``2d``, ``6h``, ``30m`` or ``90s``."""
    seconds = duration.total_seconds()
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size and seconds % size == 0:
            return f"{seconds / size:g}{unit}"
    return f"{seconds:g}s"
