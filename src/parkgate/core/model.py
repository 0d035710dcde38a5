"""Plain data the core works on: an ask's state and what a step decided."""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from datetime import datetime, timedelta
from functools import lru_cache
from typing import Any

from parkgate.core.expect import Expect

# AskKind, AskStatus and RunStatus are re-exported: they are stored values, and the
# store takes them from the data model it persists, never from the phrases module.
from parkgate.core.kinds import AskKind as AskKind
from parkgate.core.kinds import AskStatus as AskStatus
from parkgate.core.kinds import ReplyKind
from parkgate.core.kinds import RunStatus as RunStatus
from parkgate.core.menu import MENUS_REMEMBERED as MENUS_REMEMBERED


@dataclass(frozen=True, slots=True)
class Ask:
    """One stopping point, as stored. Immutable: every step returns a new value."""

    id: str
    conversation_id: str
    run_id: str
    kind: AskKind
    prompt: str
    options: tuple[str, ...]
    status: AskStatus
    asked_at: datetime
    last_touched: datetime
    ttl_seconds: float
    mismatches: int = 0
    answer: str | None = None
    option_index: int | None = None
    outcome: str | None = None
    answered_at: datetime | None = None
    phase: str | None = None
    default: str | None = None
    callback_url: str | None = None
    #: Something waits on this ask's close (a callback, an adapter's watcher): when its
    #: TTL falls due, a due read makes the ordinary read that closes it.
    watched: bool = False
    #: What else the caller parked with the ask (shown with it; never matched against).
    context: Mapping[str, Any] | None = None
    #: Who parked it: the name of the HTTP token that did (``None`` from the library).
    owner: str | None = None
    #: The form a text ask's answer must take (None: any non-empty text). Set when the
    #: ask is parked and never changed.
    expect: Expect | None = None

    @property
    def is_open(self) -> bool:
        return self.status is AskStatus.OPEN

    @property
    def due_at(self) -> datetime:
        """When the ask falls due: the first moment after which a read closes it as expired."""
        return self.last_touched + _ttl_of(self.ttl_seconds)

    @property
    def ttl(self) -> timedelta:
        return _ttl_of(self.ttl_seconds)

    def is_expired(self, now: datetime) -> bool:
        """Expired when idle for longer than the TTL (strictly longer)."""
        return self.status is AskStatus.OPEN and now - self.last_touched > _ttl_of(self.ttl_seconds)

    def idle_minutes(self, now: datetime) -> float:
        return (now - self.last_touched).total_seconds() / 60.0

    def evolve(self, **changes: object) -> Ask:
        """A copy with ``changes`` applied (as :func:`dataclasses.replace`, minus its per-field checks)."""
        values: dict[str, object] = {name: getattr(self, name) for name in _ASK_FIELDS}
        values.update(changes)
        return Ask(**values)  # type: ignore[arg-type]


@lru_cache(maxsize=1024)
def _ttl_of(seconds: float) -> timedelta:
    # Every message checks its ask's TTL, and nearly every ask has one of a few TTLs:
    # build each timedelta once rather than on every check.
    return timedelta(seconds=seconds)


#: Ask's field names, in order: evolve() runs on every message and this skips fields() each time.
_ASK_FIELDS: tuple[str, ...] = tuple(item.name for item in fields(Ask))


@dataclass(frozen=True, slots=True)
class Step:
    """What the machine decided for one input: the reply and the ask's next state."""

    kind: ReplyKind
    text: str
    ask: Ask
    answer: str | None = None
    option_index: int | None = None
    expired: bool = False
    notes: tuple[str, ...] = field(default=())

    @property
    def parked(self) -> bool:
        return self.ask.is_open


@dataclass(frozen=True, slots=True)
class Run:
    """One run: the asks parked under one id, a workflow's answers, and how it ended."""

    id: str
    conversation_id: str
    workflow: str | None
    status: RunStatus
    outcome: str | None
    context: dict[str, Any]
    pending_ask_id: str | None
    created_at: datetime
    updated_at: datetime
    #: Who started it (the HTTP token's name; ``None`` for the library or a server
    #: without named tokens): only its owner parks in it.
    owner: str | None = None


class CallbackStatus(enum.Enum):
    """Where an ask's callback stands."""

    #: Not sent yet: the ask is open, or its callback waits for (another) attempt.
    PENDING = "pending"
    DELIVERED = "delivered"
    #: Given up on: attempts ran out, or the URL can never be sent to. An operator re-arms it.
    FAILED = "failed"


@dataclass(frozen=True, slots=True)
class CallbackState:
    """An ask's callback as the outbox has it (``attempts`` 0 and no times while unsent)."""

    status: CallbackStatus
    attempts: int = 0
    last_error: str | None = None
    next_attempt_at: datetime | None = None
