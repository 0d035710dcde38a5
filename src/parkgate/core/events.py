"""The event log's values: what happened to an ask, one event per state change.

Every state change of an ask (its park, a message that touched it, a refusal, a vote, a
reminder, the escalation, the close, a callback's delivery, a channel post, an answer
that came too late) is one event, written by the store in the transaction of the change
it records, so a change never stands without its event nor an event without its change.
An event's JSON is ``{"seq", "at", "type", "ask_id", "sender", "data"}``: ``seq`` counts
one ask's events from 1, ``data`` says what the type needs (:class:`EventKind`).

A message's event is the state machine's (:func:`parkgate.core.machine.message_event`):
its text is kept only when it answered or voted; a miss, a menu or a refusal records its
reply kind and sender, never what was typed, so the log is no transcript of what people
wrote by mistake.

This module is pure: it builds the values; :mod:`parkgate.store` writes and reads them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any, Literal, NamedTuple

from parkgate.core.kinds import AskStatus
from parkgate.core.model import Ask
from parkgate.core.schedule import SCHEDULE_KEYS
from parkgate.core.shape import to_json

#: How often the event stream (``GET /v1/events/stream``) writes a comment while no event
#: arrives, in seconds: a proxy never finds the connection idle, and a client reading the
#: stream sets its read timeout past it.
STREAM_HEARTBEAT_SECONDS = 15.0


class EventKind(StrEnum):
    """What an event records (its ``type``)."""

    #: The ask was parked: ``data`` its owner, TTL, responders, quorum, channel and schedule.
    PARKED = "parked"
    #: A message touched the open ask: ``data.kind`` the reply kind (``retry``,
    #: ``escalated``, ``reshown``, ``selected``, ``answered``, ``cancelled``), with
    #: ``text`` only for an answer.
    TOUCHED = "touched"
    #: A message from someone the ask is not for (``data.kind`` ``not_yours``): nothing changed.
    REFUSED = "refused"
    #: A responder's vote on an ask that needs several (``data.answer``, ``votes``, ``quorum``).
    VOTED = "voted"
    #: A reminder fired (``data.number``, ``data.to``).
    REMINDED = "reminded"
    #: The escalation fired (``data.to``: the responders it added).
    ESCALATED = "escalated"
    #: The ask closed (``data.status``, ``outcome``, ``closed_by``, ``reason``).
    CLOSED = "closed"
    #: A callback or event delivery attempt (``data.target``, ``attempt``, ``status``, ``latency_ms``, ``result``).
    DELIVERED = "delivered"
    #: A channel post or edit (``data.channel``, ``job``, ``result``).
    POSTED = "posted"
    #: An answer that reached the ask after it closed (``data.surface``, ``status``, ``closed_at``).
    LATE = "late"


class NewEvent(NamedTuple):
    """An event to write: the store numbers it (``seq``) and stamps its global ``id``."""

    ask_id: str
    type: EventKind
    at: datetime
    sender: str | None
    #: The ask's owner (a tenant's reads keep to its own events).
    owner: str | None
    data: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class LoggedEvent:
    """One event as the log holds it."""

    #: Its place among its ask's events, from 1.
    seq: int
    at: datetime
    type: EventKind
    ask_id: str
    #: Who caused it (a message's sender, a voter, ``operator``); ``None`` for the clock's events.
    sender: str | None
    data: Mapping[str, Any] = field(default_factory=dict)
    #: Its place among every event of the store (the stream's ``Last-Event-ID``).
    id: int = 0
    #: The ask's owner (not shown in the event's JSON).
    owner: str | None = None

    def to_json(self, *, with_id: bool = False) -> dict[str, Any]:
        """The event's JSON: ``{"seq", "at", "type", "ask_id", "sender", "data"}`` (and ``id``
        with ``with_id``, as the stream and the export show it)."""
        body: dict[str, Any] = {
            "seq": self.seq,
            "at": self.at.isoformat(),
            "type": self.type.value,
            "ask_id": self.ask_id,
            "sender": self.sender,
            "data": dict(self.data),
        }
        if with_id:
            body = {"id": self.id, **body}
        return body

    @classmethod
    def from_json(cls, body: Mapping[str, Any]) -> LoggedEvent:
        """The event a JSON object (:meth:`to_json`'s) holds."""
        return cls(
            seq=int(body["seq"]),
            at=datetime.fromisoformat(body["at"]),
            type=EventKind(body["type"]),
            ask_id=str(body["ask_id"]),
            sender=body.get("sender"),
            data=dict(body.get("data") or {}),
            id=int(body.get("id") or 0),
        )


def event_of(ask: Ask, kind: EventKind, at: datetime, sender: str | None, data: Mapping[str, Any]) -> NewEvent:
    return NewEvent(ask.id, kind, at, sender, ask.owner, data)


def parked(ask: Ask, at: datetime, channel: str | None = None) -> NewEvent:
    """``ask`` was parked (posted to ``channel``, ``"slack:C0OPS"``, when given)."""
    shown = to_json(ask)
    data = {
        "owner": ask.owner,
        "ttl_seconds": ask.ttl_seconds,
        "responders": list(ask.responders),
        "quorum": ask.quorum,
        "channel": channel,
        **{key: shown[key] for key in SCHEDULE_KEYS},  # its reminders and escalation, as its JSON has them
    }
    return event_of(ask, EventKind.PARKED, at, ask.owner, data)


def closed(ask: Ask, at: datetime, reason: str | None = None) -> NewEvent:
    """``ask`` closed (as it stands closed); ``at`` is when the change was written."""
    sender = ask.answered_by if ask.status is AskStatus.ANSWERED else ask.closed_by
    data = {
        "status": ask.status.value,
        "outcome": ask.outcome,
        "closed_by": sender,
        "reason": reason,
        "answer": ask.answer,
    }
    return event_of(ask, EventKind.CLOSED, at, sender, data)


def reminded(ask: Ask, at: datetime, to: tuple[str, ...]) -> NewEvent:
    """``ask``'s reminder number ``ask.reminders_sent`` fired, to ``to``."""
    return event_of(ask, EventKind.REMINDED, at, None, {"number": ask.reminders_sent, "to": list(to)})


def escalated(ask: Ask, at: datetime, to: tuple[str, ...]) -> NewEvent:
    """``ask``'s escalation fired, adding ``to``."""
    return event_of(ask, EventKind.ESCALATED, at, None, {"to": list(to)})


def late(ask: Ask, at: datetime, sender: str | None, surface: str, text: str | None = None) -> NewEvent:
    """An answer from ``sender`` on ``surface`` that reached closed ``ask``: nothing changed."""
    moment = closed_moment(ask)
    data = {
        "surface": surface,
        "status": ask.status.value,
        "outcome": ask.outcome,
        "closed_at": moment.isoformat() if moment is not None else None,
        "text": text,
    }
    return event_of(ask, EventKind.LATE, at, sender, data)


def closed_moment(ask: Ask) -> datetime | None:
    """When closed ``ask`` closed (``None`` while open): its close time as recorded, else
    (an ask closed before close times were kept) an expired ask's due time, any other's
    ``answered_at``."""
    if ask.is_open:
        return None
    if ask.closed_at is not None:
        return ask.closed_at
    return ask.due_at if ask.status is AskStatus.EXPIRED else ask.answered_at


def on_ask(ask_id: str, owner: str | None, kind: EventKind, at: datetime, data: Mapping[str, Any]) -> NewEvent:
    """An event of the ask ``ask_id`` known only by id and owner (a delivery, a channel post)."""
    return NewEvent(ask_id, kind, at, None, owner, data)


#: What became of a delivery attempt (``delivered`` events' ``data.result``).
DeliveryResult = Literal["delivered", "retrying", "failed"]
#: What became of a channel job's attempt (``posted`` events' ``data.result``).
PostResult = Literal["ok", "retrying", "failed"]


class Attempt(NamedTuple):
    """One delivery attempt of an outbox row, as its ``delivered`` event records it."""

    #: ``callback`` (the ask's ``callback_url``) or ``events`` (``PARKGATE_EVENTS_URL``).
    target: str
    #: The receiver's host.
    host: str | None
    #: The event's id (its ``webhook-id``).
    event_id: str
    #: Which attempt this was, from 1.
    attempt: int
    #: The receiver's HTTP status (``None``: no response: a refused connection, the deadline).
    status: int | None
    #: How long the attempt took, in milliseconds.
    latency_ms: float
    result: DeliveryResult


def delivered(ask_id: str, at: datetime, attempt: Attempt) -> NewEvent:
    """A delivery ``attempt`` of an event of the ask ``ask_id`` (its owner is the ask's:
    :meth:`~parkgate.store.base.EventLog.record` reads it)."""
    return on_ask(ask_id, None, EventKind.DELIVERED, at, attempt._asdict())


def posted(ask_id: str, at: datetime, channel: str, job: str, result: PostResult) -> NewEvent:
    """A channel ``job`` (``post``, ``closed``, ``reply``...) of the ask ``ask_id`` ran on
    ``channel`` with ``result`` (its owner is the ask's, read when it is recorded)."""
    return on_ask(ask_id, None, EventKind.POSTED, at, {"channel": channel, "job": job, "result": result})
