"""The operator's figures over a window of time, computed from ask rows: pure, no I/O.

:meth:`parkgate.Gateway.stats` reads the rows (one bounded query: the asks asked or
closed in the window, and every open ask) and hands them here; HTTP, the clients and the
CLI show what :meth:`Stats.to_dict` gives. What each figure counts, for a window
``[since, until)`` (either side open when ``None``):

- ``opened``: asks whose ``asked_at`` is in the window;
- ``answered``, ``expired``, ``cancelled``: asks whose ``closed_at`` is in the window, by status;
- ``time_to_answer``: over the answered asks of the window, ``answered_at - asked_at`` in
  seconds: ``p50``, ``p90``, ``p99`` (nearest rank; ``null`` when none) and ``count``;
- ``reminders``: the reminders sent to the asks opened in the window;
- ``escalations``: the escalations that fired in the window (``escalated_at``);
- ``misses_per_ask``: the mean of the opened asks' ``mismatches`` (messages that were no
  answer); an answer resets an ask's count, so this counts the misses of asks that did
  not end in an answer (``null`` when none opened);
- ``open_by_age``: the asks open now, by how long since they were asked: ``<1h``,
  ``1-6h``, ``6-24h``, ``>24h`` (a day group counts those asked that day).

Groups (``by``): ``day`` (UTC; each figure by its own time's day), ``responder`` (an ask
counts for every sender it names: its responders, the escalation's, who answered, who
voted; one naming nobody under ``(anyone)``), ``channel`` (the channel target an ask was
posted to, ``slack:C0OPS``; one never posted under ``(none)``).
"""

from __future__ import annotations

import enum
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, time, timedelta
from typing import Any

from parkgate.core.kinds import AskStatus
from parkgate.core.model import Ask

#: The open asks' age buckets: a name and the age it is under (``None``: any older).
AGE_BUCKETS: tuple[tuple[str, timedelta | None], ...] = (
    ("<1h", timedelta(hours=1)),
    ("1-6h", timedelta(hours=6)),
    ("6-24h", timedelta(hours=24)),
    (">24h", None),
)
#: The group of asks that name no sender (``by=responder``) or were never posted (``by=channel``).
ANYONE = "(anyone)"
NOT_POSTED = "(none)"


class StatsBy(enum.Enum):
    """How :meth:`parkgate.Gateway.stats` groups its figures."""

    DAY = "day"
    RESPONDER = "responder"
    CHANNEL = "channel"


@dataclass(frozen=True, slots=True)
class TimeToAnswer:
    """Seconds from ``asked_at`` to ``answered_at`` over the answered asks: percentiles and how many."""

    p50: float | None
    p90: float | None
    p99: float | None
    count: int


@dataclass(frozen=True, slots=True)
class Figures:
    """One window's (or one group's) figures (see the module docstring for each)."""

    opened: int
    answered: int
    expired: int
    cancelled: int
    time_to_answer: TimeToAnswer
    reminders: int
    escalations: int
    misses_per_ask: float | None
    open_by_age: dict[str, int]

    def to_dict(self) -> dict[str, Any]:
        """The figures' JSON object."""
        return {
            "opened": self.opened,
            "answered": self.answered,
            "expired": self.expired,
            "cancelled": self.cancelled,
            "time_to_answer": {
                "p50": self.time_to_answer.p50,
                "p90": self.time_to_answer.p90,
                "p99": self.time_to_answer.p99,
                "count": self.time_to_answer.count,
            },
            "reminders": self.reminders,
            "escalations": self.escalations,
            "misses_per_ask": self.misses_per_ask,
            "open_by_age": dict(self.open_by_age),
        }


@dataclass(frozen=True, slots=True)
class Stats:
    """The figures of a window, in all and by group, as their JSON objects.

    Attributes:
        since: The window's start (``None``: from the first ask).
        until: The window's end, exclusive (``None``: up to now).
        by: How :attr:`groups` are made: ``day``, ``responder``, ``channel`` (``None``: no groups).
        total: Every ask's figures: ``{"opened", "answered", "expired", "cancelled",
            "time_to_answer": {"p50", "p90", "p99", "count"}, "reminders", "escalations",
            "misses_per_ask", "open_by_age": {"<1h", "1-6h", "6-24h", ">24h"}}``.
        groups: Each group's figures with its ``key``, by key.
        truncated: The rows read reached the bound, so older asks are left out.
    """

    since: datetime | None
    until: datetime | None
    by: str | None
    total: dict[str, Any]
    groups: list[dict[str, Any]] = field(default_factory=list)
    truncated: bool = False

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Stats:
        """The figures :meth:`to_dict` wrote (``GET /v1/stats``' body)."""

        def moment(value: Any) -> datetime | None:
            return None if value is None else datetime.fromisoformat(value)

        return cls(
            since=moment(data.get("since")),
            until=moment(data.get("until")),
            by=data.get("by"),
            total=dict(data["total"]),
            groups=[dict(group) for group in data.get("groups", [])],
            truncated=bool(data.get("truncated", False)),
        )

    def group(self, key: str) -> dict[str, Any] | None:
        """The figures of the group ``key`` (``None``: no such group)."""
        return next((group for group in self.groups if group["key"] == key), None)

    def to_dict(self) -> dict[str, Any]:
        """``{"since", "until", "by", "total": figures, "groups": [{"key", ...figures}], "truncated"}``."""
        return {
            "since": None if self.since is None else self.since.isoformat(),
            "until": None if self.until is None else self.until.isoformat(),
            "by": self.by,
            "total": self.total,
            "groups": self.groups,
            "truncated": self.truncated,
        }


def _within(moment: datetime | None, since: datetime | None, until: datetime | None) -> bool:
    return moment is not None and (since is None or moment >= since) and (until is None or moment < until)


def percentile(values: Sequence[float], rank: int) -> float | None:
    """The ``rank``-th percentile of ``values`` by nearest rank (``None`` for no values)."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[max(0, math.ceil(rank / 100 * len(ordered)) - 1)]


def age_bucket(age: timedelta) -> str:
    """The :data:`AGE_BUCKETS` name of an open ask ``age`` old."""
    return next(name for name, under in AGE_BUCKETS if under is None or age < under)


def figures(
    asks: Iterable[Ask],
    since: datetime | None,
    until: datetime | None,
    now: datetime,
    open_from: datetime | None = None,
) -> Figures:
    """The figures of ``asks`` for ``[since, until)``; ``open_by_age`` counts the open asks
    asked in ``[open_from, until)`` (``open_from`` ``None``: from the first)."""
    rows = list(asks)
    opened = [ask for ask in rows if _within(ask.asked_at, since, until)]
    closed = [ask for ask in rows if _within(ask.closed_at, since, until)]
    answered = [ask for ask in closed if ask.status is AskStatus.ANSWERED and ask.answered_at is not None]
    seconds = [max(0.0, (ask.answered_at - ask.asked_at).total_seconds()) for ask in answered if ask.answered_at]
    ages = {name: 0 for name, _ in AGE_BUCKETS}
    for ask in rows:
        if ask.is_open and _within(ask.asked_at, open_from, until):
            ages[age_bucket(now - ask.asked_at)] += 1
    return Figures(
        opened=len(opened),
        answered=len(answered),
        expired=sum(ask.status is AskStatus.EXPIRED for ask in closed),
        cancelled=sum(ask.status is AskStatus.CANCELLED for ask in closed),
        time_to_answer=TimeToAnswer(
            percentile(seconds, 50), percentile(seconds, 90), percentile(seconds, 99), len(seconds)
        ),
        reminders=sum(ask.reminders_sent for ask in opened),
        escalations=sum(_within(ask.escalated_at, since, until) for ask in rows),
        misses_per_ask=sum(ask.mismatches for ask in opened) / len(opened) if opened else None,
        open_by_age=ages,
    )


def senders_of(ask: Ask) -> tuple[str, ...]:
    """The senders ``ask`` names (responders, the escalation's, who answered, who voted),
    each once, in that order; ``(ANYONE,)`` when it names none."""
    named = [*ask.responders, *ask.escalate_to, *([ask.answered_by] if ask.answered_by else [])]
    named += [vote.sender for vote in ask.votes]
    return tuple(dict.fromkeys(named)) or (ANYONE,)


def compute_stats(
    asks: Sequence[Ask],
    since: datetime | None,
    until: datetime | None,
    now: datetime,
    by: StatsBy | None = None,
    channel_of: Callable[[Ask], str] | Mapping[str, str] | None = None,
    truncated: bool = False,
) -> Stats:
    """The :class:`Stats` of ``asks`` for ``[since, until)`` at ``now``, grouped ``by``.

    Args:
        asks: The rows (the window's asks and every open ask), none of them lapsed.
        since: The window's start, or ``None``.
        until: The window's end (exclusive), or ``None``.
        now: The moment the open asks' ages are taken at.
        by: The grouping, or ``None``.
        channel_of: ``by=channel``: the channel target of each posted ask, by ask id (or a
            function of the ask); an ask it lacks is in :data:`NOT_POSTED`.
        truncated: Passed on: the rows reached the read's bound.

    Returns:
        The figures, in all and per group (groups by key).
    """
    total = figures(asks, since, until, now)
    groups: list[tuple[str, Figures]] = []
    if by is StatsBy.DAY:
        groups = _by_day(asks, since, until, now)
    elif by is not None:
        members: dict[str, list[Ask]] = {}
        for ask in asks:
            for key in _keys(ask, by, channel_of):
                members.setdefault(key, []).append(ask)
        groups = [(key, figures(members[key], since, until, now)) for key in sorted(members)]
    shown = [{"key": key, **group.to_dict()} for key, group in groups]
    return Stats(since, until, None if by is None else by.value, total.to_dict(), shown, truncated)


def _keys(ask: Ask, by: StatsBy, channel_of: Callable[[Ask], str] | Mapping[str, str] | None) -> tuple[str, ...]:
    if by is StatsBy.RESPONDER:
        return senders_of(ask)
    if channel_of is None:
        return (NOT_POSTED,)
    if callable(channel_of):
        return (channel_of(ask),)
    return (channel_of.get(ask.id, NOT_POSTED),)


def _by_day(
    asks: Sequence[Ask], since: datetime | None, until: datetime | None, now: datetime
) -> list[tuple[str, Figures]]:
    """One group per UTC day that any figure's time falls on, within the window."""
    days: set[datetime] = set()
    for ask in asks:
        for moment in (ask.asked_at, ask.closed_at, ask.escalated_at):
            if moment is not None and _within(moment, since, until):
                days.add(datetime.combine(moment.astimezone(UTC).date(), time(), UTC))
    groups = []
    for start in sorted(days):
        end = start + timedelta(days=1)
        low = start if since is None else max(start, since)
        high = end if until is None else min(end, until)
        groups.append((start.date().isoformat(), figures(asks, low, high, now, open_from=low)))
    return groups
