"""What a history listing asks for (:class:`HistoryQuery`) and what it gives (:class:`HistoryPage`):
the asks of every status, filtered, newest first, a page at a time.

Plain data and the cursor's encoding, no I/O: the store reads the rows
(:mod:`parkgate.store.history_sql`), the gateway closes what the read finds lapsed
(:meth:`parkgate.Gateway.history`), HTTP and the CLI pass the filters through.

The order and the time filters follow the status asked for:

- ``open``: by ``asked_at``, the oldest first (the longest waiting on top, as
  ``GET /v1/asks`` has always listed them);
- ``all``: by ``asked_at``, the newest first;
- a closed status (``answered``, ``cancelled``, ``expired``, ``closed``): by ``closed_at``,
  the latest close first.

``since`` (inclusive) and ``until`` (exclusive) bound that same time. Ties are ordered by id.
"""

from __future__ import annotations

import base64
import binascii
import enum
import json
from dataclasses import dataclass, field, replace
from datetime import datetime

from parkgate.core.kinds import AskStatus
from parkgate.core.model import Ask
from parkgate.errors import InputError

#: A history page holds this many asks unless ``limit`` says otherwise, and never more than the most.
DEFAULT_HISTORY_PAGE = 100
MAX_HISTORY_PAGE = 1000
#: The longest text search a query may carry.
MAX_SEARCH_CHARS = 200


class HistoryStatus(enum.Enum):
    """Which asks a history listing holds: one status, every closed one, or all."""

    OPEN = "open"
    ANSWERED = "answered"
    CANCELLED = "cancelled"
    EXPIRED = "expired"
    #: Answered, cancelled or expired.
    CLOSED = "closed"
    ALL = "all"

    @property
    def by_close(self) -> bool:
        """Whether the listing is ordered and bounded by ``closed_at`` (a closed status) rather than ``asked_at``."""
        return self not in (HistoryStatus.OPEN, HistoryStatus.ALL)

    @property
    def newest_first(self) -> bool:
        """Whether the listing runs from the latest time back (every status but ``open``)."""
        return self is not HistoryStatus.OPEN

    @property
    def statuses(self) -> tuple[AskStatus, ...]:
        """The stored statuses this one holds (every status for ``all``)."""
        if self is HistoryStatus.ALL:
            return tuple(AskStatus)
        if self is HistoryStatus.CLOSED:
            return tuple(status for status in AskStatus if status is not AskStatus.OPEN)
        return (AskStatus(self.value),)

    @property
    def may_hold_lapsed(self) -> bool:
        """Whether an open ask past its TTL bears on the listing (it is closed as expired first)."""
        return self not in (HistoryStatus.ANSWERED, HistoryStatus.CANCELLED)


@dataclass(frozen=True, slots=True)
class HistoryQuery:
    """The filters of a history listing; every one left ``None`` keeps every ask.

    Attributes:
        status: Which asks: a :class:`HistoryStatus` value (``open`` by default, ``answered``,
            ``cancelled``, ``expired``, ``closed``, ``all``), or the member, kept as its value.
        since: Only asks at or after this moment (``asked_at``, or ``closed_at`` for a
            closed status).
        until: Only asks before this moment (the same time).
        conversation_id: Only this conversation's asks.
        responder: Only asks this sender may answer, was added to by an escalation,
            answered or voted on.
        channel: Only asks posted to this channel (``"slack"``) or channel target
            (``"slack:C0OPS"``, ``"telegram:-100777"``: the target id a token's
            ``channels`` patterns read).
        outcome: Only asks closed with this outcome (``selected``, ``expired``, ``abandoned``...).
        owner: Only the asks this token name parked.
        q: Only asks whose prompt holds this text, letter case aside (ASCII letters' case
            on SQLite).
        limit: The most asks a page holds (1 to :data:`MAX_HISTORY_PAGE`).
        cursor: The ``next_cursor`` of the page before (``None``: the first page).
    """

    status: str = HistoryStatus.OPEN.value
    since: datetime | None = None
    until: datetime | None = None
    conversation_id: str | None = None
    responder: str | None = None
    channel: str | None = None
    outcome: str | None = None
    owner: str | None = None
    q: str | None = None
    limit: int = DEFAULT_HISTORY_PAGE
    cursor: str | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        try:
            object.__setattr__(self, "status", HistoryStatus(self.status).value)
        except ValueError:
            names = ", ".join(status.value for status in HistoryStatus)
            raise InputError(f"status must be one of {names}, not {self.status!r}") from None
        for name in ("since", "until"):
            moment = getattr(self, name)
            if moment is not None and (not isinstance(moment, datetime) or moment.tzinfo is None):
                raise InputError(f"{name} must be a timezone-aware datetime")
        if isinstance(self.limit, bool) or not isinstance(self.limit, int) or not 1 <= self.limit <= MAX_HISTORY_PAGE:
            raise InputError(f"limit must be a whole number from 1 to {MAX_HISTORY_PAGE}")
        if self.q is not None and (not isinstance(self.q, str) or not self.q or len(self.q) > MAX_SEARCH_CHARS):
            raise InputError(f"q must be text of 1 to {MAX_SEARCH_CHARS} characters")

    @property
    def after(self) -> tuple[datetime, str] | None:
        """Where this page starts: the place its ``cursor`` names (``None``: the first page)."""
        return None if self.cursor is None else decode_history_cursor(self.cursor)

    @property
    def channel_name(self) -> str | None:
        """The channel of :attr:`channel` (``"slack"`` of ``"slack:C0OPS"``)."""
        return None if self.channel is None else self.channel.split(":", 1)[0]

    @property
    def channel_target(self) -> str | None:
        """The target id of :attr:`channel` (``"C0OPS"`` of ``"slack:C0OPS"``; ``None``: any target)."""
        if self.channel is None or ":" not in self.channel:
            return None
        return self.channel.split(":", 1)[1] or None

    def key_of(self, ask: Ask) -> datetime:
        """The time ``ask`` is ordered and bounded by in this listing."""
        if listing_of(self).by_close and ask.closed_at is not None:
            return ask.closed_at
        return ask.asked_at

    def next_page(self, cursor: str | None) -> HistoryQuery:
        """This query for the page ``cursor`` names."""
        return replace(self, cursor=cursor)


@dataclass(frozen=True, slots=True)
class HistoryPage:
    """One page of a history listing: its asks, newest first, and the cursor of the next
    page (``None`` on the last)."""

    asks: list[Ask]
    next_cursor: str | None = None


def listing_of(query: HistoryQuery) -> HistoryStatus:
    """A query's :attr:`~HistoryQuery.status` as its :class:`HistoryStatus`."""
    return HistoryStatus(query.status)


def encode_history_cursor(moment: datetime, ask_id: str) -> str:
    """The opaque cursor of the page after the ask at ``(moment, ask_id)`` in a listing's order."""
    raw = json.dumps([moment.isoformat(), ask_id], separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_history_cursor(cursor: str) -> tuple[datetime, str]:
    """The place a cursor names; :class:`InputError` for one no listing gave."""
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        stamp, ask_id = json.loads(raw)
        place = (datetime.fromisoformat(stamp), ask_id)
        if not isinstance(ask_id, str) or place[0].tzinfo is None:
            raise ValueError(ask_id)
    except (ValueError, TypeError, binascii.Error):
        raise InputError("cursor is not one this server gave: pass the 'next' of the page before") from None
    return place
