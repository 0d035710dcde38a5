"""Plain data the core works on: an ask's state, what a step decided, a run, a callback's
state, and the :class:`Reply` every call that handles a message or parks an ask returns."""

from __future__ import annotations

import enum
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields, replace
from datetime import datetime, timedelta
from functools import lru_cache
from typing import Any

from parkgate.core import expect as expected_form
from parkgate.core.expect import Expect

# AskKind, AskStatus and RunStatus are re-exported: they are stored values, and the
# store takes them from the data model it persists, never from the phrases module.
from parkgate.core.kinds import AskKind as AskKind
from parkgate.core.kinds import AskStatus as AskStatus
from parkgate.core.kinds import ReplyKind
from parkgate.core.kinds import RunStatus as RunStatus
from parkgate.core.menu import MENUS_REMEMBERED as MENUS_REMEMBERED
from parkgate.core.shape import (
    JSON_VALUE,
    OBJECT,
    SECONDS,
    SECONDS_LIST,
    TIME,
    Codec,
    enum_codec,
    from_json,
    json_reader,
    json_writer,
    object_codec,
    spec,
    texts_codec,
    to_json,
)


@dataclass(frozen=True, slots=True)
class Vote:
    """A responder's current vote on a quorum ask: the option they chose, and when."""

    sender: str
    option_index: int
    answer: str
    at: datetime = field(metadata=spec(TIME))

    def to_dict(self) -> dict[str, Any]:
        """The vote's JSON object: ``{sender, option_index, answer, at}`` (``at`` in ISO 8601)."""
        return to_json(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Vote:
        """The vote :meth:`to_dict` wrote."""
        return from_json(cls, data)


#: An ask's votes: a JSON list of :meth:`Vote.to_dict` objects, stored as its text (NULL for none).
VOTES = object_codec(Vote, empty_is_null=True)


def encode_votes(votes: tuple[Vote, ...]) -> str | None:
    """An ask's votes as stored: a JSON list of :meth:`Vote.to_dict` objects, ``None`` for none."""
    return VOTES.text_of(votes) if votes else None


@lru_cache(maxsize=MENUS_REMEMBERED)
def _stored_texts(raw: str) -> tuple[str, ...]:
    # Options and responders never change after an ask is parked, and the same few lists
    # are parked over and over: each distinct stored list is decoded once.
    return tuple(json.loads(raw))


@lru_cache(maxsize=MENUS_REMEMBERED)
def _options_text(options: tuple[str, ...]) -> str:
    return json.dumps(list(options), ensure_ascii=False)


def _object_from_text(raw: str) -> dict[str, Any]:
    value = json.loads(raw)
    return value if isinstance(value, dict) else {"value": value}


#: An ask's options: always stored (an empty list for a text ask), each distinct list coded once.
OPTIONS = replace(
    texts_codec(empty_is_null=False, from_text=_stored_texts), to_text=lambda options: _options_text(tuple(options))
)
#: Senders (responders, those an escalation adds): NULL when none.
SENDERS = texts_codec(empty_is_null=True, from_text=_stored_texts)
#: What else was parked with an ask: a JSON object (a stored non-object is read under ``value``).
CONTEXT = replace(OBJECT, from_text=_object_from_text)
#: The form of a text ask's answer: its JSON object (only the fields that are set).
EXPECT = Codec(
    to_json=expected_form.to_dict,
    from_json=lambda data: Expect(**data),
    json_type=Expect,
    stored="text",
    to_text=expected_form.to_json,
    from_text=expected_form.from_json,
)


@dataclass(frozen=True, slots=True)
class AskShape:
    """An ask's public fields, declared once: what its JSON (:func:`~parkgate.ask_to_dict`),
    the API's schema and the client's :class:`~parkgate.client.AskView` hold, and (with
    :class:`Ask`'s own) what a store keeps (:mod:`parkgate.store.ask_rows`)."""

    id: str = field(metadata=spec(wire="ask_id"))
    conversation_id: str
    run_id: str
    kind: AskKind = field(metadata=spec(enum_codec(AskKind)))
    prompt: str
    options: tuple[str, ...] = field(metadata=spec(OPTIONS))
    status: AskStatus = field(metadata=spec(enum_codec(AskStatus)))
    asked_at: datetime = field(metadata=spec(TIME))
    last_touched: datetime = field(metadata=spec(TIME))
    ttl_seconds: float = field(metadata=spec(SECONDS))
    mismatches: int = 0
    answer: str | None = None
    option_index: int | None = None
    outcome: str | None = None
    #: When the ask was answered (status ``answered``): ``None`` while open and for a
    #: cancelled or expired ask, so an answer time is ``answered_at - asked_at``.
    answered_at: datetime | None = field(
        default=None, metadata=spec(TIME, doc="When it was answered (null unless its status is answered).")
    )
    #: The workflow step the ask belongs to.
    phase: str | None = None
    #: What else the caller parked with the ask (shown with it; never matched against).
    context: Mapping[str, Any] | None = field(
        default=None, metadata=spec(CONTEXT, doc="What else was parked with the ask (a JSON object), shown with it.")
    )
    #: Who parked it: the name of the HTTP token that did (``None`` from the library).
    owner: str | None = field(
        default=None, metadata=spec(doc="The name of the token that parked it (null without named tokens).")
    )
    #: The form a text ask's answer must take (None: any non-empty text). Set when the
    #: ask is parked and never changed.
    expect: Expect | None = field(default=None, metadata=spec(EXPECT))
    #: Who may answer (empty: anyone). Set when the ask is parked and never changed.
    responders: tuple[str, ...] = field(default=(), metadata=spec(SENDERS, doc="Who may answer (empty: anyone)."))
    #: How many responders must agree on one option to select it (1 without responders).
    quorum: int = field(default=1, metadata=spec(doc="How many responders must pick one option to select it."))
    #: Each responder's current vote, in the order cast (a changed vote moves to the end).
    votes: tuple[Vote, ...] = field(
        default=(), metadata=spec(VOTES, doc="Each responder's current vote, in order cast.")
    )
    #: The sender whose message closed the ask as selected or answered.
    answered_by: str | None = field(
        default=None, metadata=spec(doc="The sender whose message selected or answered it.")
    )
    #: The sender of the cancel word that closed it, ``operator`` for an operator's cancel.
    closed_by: str | None = field(
        default=None,
        metadata=spec(doc="The sender of the cancel word that closed it, or operator (null for an expiry)."),
    )
    #: The reminders' offsets, in seconds from the last touch, ascending (empty: none).
    remind_after: tuple[float, ...] = field(
        default=(), metadata=spec(SECONDS_LIST, doc="The reminders: seconds from the last touch, ascending.")
    )
    #: Seconds from the last touch to the escalation (``None``: none).
    escalate_after: float | None = field(
        default=None, metadata=spec(doc="Seconds from the last touch to the escalation (null: none).")
    )
    #: The responders the escalation adds.
    escalate_to: tuple[str, ...] = field(default=(), metadata=spec(SENDERS, doc="The responders the escalation adds."))
    #: How many reminders have fired (a reminder is no touch: it changes nothing else).
    reminders_sent: int = field(default=0, metadata=spec(doc="How many reminders have fired."))
    #: When the escalation fired (``None``: not yet, or none).
    escalated_at: datetime | None = field(
        default=None, metadata=spec(TIME, doc="When the escalation fired (null: not yet, or none).")
    )
    #: When the ask closed: an answer's or a cancel's moment; an expired ask's due time
    #: (``last_touched + ttl``), never the moment of the read that found it (``None``: open).
    closed_at: datetime | None = field(
        default=None,
        metadata=spec(
            TIME, doc="When it closed: an expired ask's due time, an answer's or cancel's moment (null: open)."
        ),
    )

    @property
    def is_open(self) -> bool:
        """Whether the ask is still open."""
        return self.status is AskStatus.OPEN

    @property
    def ask_id(self) -> str:
        """The ask's id (``id``), by the name its JSON gives it."""
        return self.id


#: The column of an ask's own callback URL (its field's name): a deliverer tells the ask's
#: callbacks from the events subscriber's by it (:meth:`parkgate.store.base.Outbox.claim_callbacks`).
CALLBACK_URL_COLUMN = "callback_url"


@dataclass(frozen=True, slots=True)
class Ask(AskShape):
    """One stopping point, as stored. Immutable: every step returns a new value.

    Its public fields are :class:`AskShape`'s; these are kept with it and never shown.
    """

    #: Recorded as the answer if the ask expires.
    default: str | None = field(default=None, metadata=spec(column="default_answer", public=False))
    #: Where the ask's events are posted, signed.
    callback_url: str | None = field(default=None, metadata=spec(public=False))
    #: Something waits on this ask's close (a callback, an adapter's watcher): when its
    #: TTL falls due, a due read makes the ordinary read that closes it. A store keeps it
    #: as the due time it indexes (:mod:`parkgate.store.ask_rows`).
    watched: bool = field(default=False, metadata=spec(column=None, public=False))

    @property
    def due_at(self) -> datetime:
        """When the ask falls due: the first moment after which a read closes it as expired."""
        return self.last_touched + _ttl_of(self.ttl_seconds)

    @property
    def event_offset(self) -> float | None:
        """Seconds from the last touch to the next reminder or the escalation (``None``: none remains)."""
        offsets = []
        if self.reminders_sent < len(self.remind_after):
            offsets.append(self.remind_after[self.reminders_sent])
        if self.escalate_after is not None and self.escalated_at is None:
            offsets.append(self.escalate_after)
        return min(offsets) if offsets else None

    @property
    def next_event_at(self) -> datetime | None:
        """When the next reminder or the escalation falls due (``None``: none remains)."""
        offset = self.event_offset
        return None if offset is None else self.last_touched + _ttl_of(offset)

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


#: A run's answers: text by phase, as a JSON object.
ANSWERS = replace(OBJECT, json_type=dict[str, str])


@dataclass(frozen=True, slots=True)
class Run:
    """One run: the asks parked under one id, its answers by phase, how it ended and what
    it gave (``output``)."""

    id: str = field(metadata=spec(wire="run_id"))
    conversation_id: str
    workflow: str | None
    status: RunStatus = field(metadata=spec(enum_codec(RunStatus)))
    outcome: str | None
    #: The run's answers so far, by phase (``answers`` in its JSON).
    context: dict[str, Any] = field(
        metadata=spec(ANSWERS, wire="answers", doc="The run's answers by phase; empty when its asks name no phase.")
    )
    pending_ask_id: str | None
    created_at: datetime = field(metadata=spec(TIME))
    updated_at: datetime = field(metadata=spec(TIME))
    #: Who started it (the HTTP token's name; ``None`` for the library or a server
    #: without named tokens): only its owner parks in it.
    owner: str | None = field(
        default=None, metadata=spec(doc="The name of the token that started it (null without named tokens).")
    )
    #: What the run gave when it finished, as JSON (an agent's final output; ``None``: nothing recorded).
    output: Any = field(
        default=None,
        metadata=spec(JSON_VALUE, doc="What the run gave when it finished (an agent's final output); null: nothing."),
    )

    @property
    def run_id(self) -> str:
        """The run's id (``id``), by the name its JSON gives it."""
        return self.id

    @property
    def answers(self) -> dict[str, Any]:
        """The run's answers so far, by phase (the run's ``context``; ``answers`` in its JSON)."""
        return self.context


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

    status: CallbackStatus = field(metadata=spec(enum_codec(CallbackStatus)))
    attempts: int = 0
    last_error: str | None = None
    next_attempt_at: datetime | None = field(default=None, metadata=spec(TIME))


#: One encoder for every stored reply (json.dumps with options builds a new one per call).
_COMPACT = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))


@dataclass(frozen=True, slots=True)
class Reply:
    """One outcome, always with a kind. Branch on ``kind``, never on ``text``.

    Attributes:
        kind: What was done with the message; only ``pass`` may go to a model.
        text: The line to show the person.
        parked: Whether the conversation has an open ask after this reply.
        ask_id: The ask this reply is about (the one parked, matched or bounced).
        expired_ask_id: On ``pass``, the ask this read found past its TTL and closed.
        answer: The answer taken: a selected option's label, or the text given.
        option_index: The selected option's 1-based position.
        run_id: The run the ask belongs to.
        next_ask: The ``asked`` reply of the ask the run parked next, when a workflow
            asked again after a selection or answer.
    """

    kind: ReplyKind = field(metadata=spec(enum_codec(ReplyKind)))
    text: str
    parked: bool
    ask_id: str | None = None
    expired_ask_id: str | None = None
    answer: str | None = None
    option_index: int | None = None
    run_id: str | None = None
    next_ask: Reply | None = field(
        default=None,
        metadata=spec(Codec(to_json=lambda reply: reply.to_dict(), from_json=lambda data: _reply_of(data))),
    )

    @property
    def routes_onward(self) -> bool:
        """True only for ``pass``: the one kind a caller may hand to a model."""
        return self.kind is ReplyKind.PASS

    def to_dict(self) -> dict[str, Any]:
        """The reply as JSON-ready values, one key a field, in field order.

        Returns:
            The reply's JSON object, ``next_ask`` nested as one.
        """
        return _reply_json(self)

    def to_json(self) -> str:
        """The compact form a redelivery is answered from: :meth:`from_json` reads it back.

        Fields that are ``None`` are left out (:meth:`from_dict` reads a missing one as
        ``None``): this text is stored once per inbound message, and smaller rows mean
        fewer pages written per message.
        """
        data = {key: value for key, value in self.to_dict().items() if value is not None}
        return _COMPACT.encode(data)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Reply:
        """The reply :meth:`to_dict` (or :meth:`to_json`, parsed) describes.

        Args:
            data: A reply's JSON object; a missing field is ``None``.

        Returns:
            The reply.
        """
        return _reply_of(data)

    @classmethod
    def from_json(cls, raw: str) -> Reply:
        """The reply :meth:`to_json` wrote.

        A reply stored before ``followup`` was renamed ``next_ask`` reads the same, so a
        redelivery after an upgrade returns the reply first given.
        """
        return cls.from_dict(json.loads(raw, object_hook=_renamed))


# A reply is written for every message: its writer and reader are kept, not looked up.
_reply_json: Callable[[Reply], dict[str, Any]] = json_writer(Reply)
_reply_of: Callable[[Mapping[str, Any]], Reply] = json_reader(Reply)


#: The key earlier versions stored a reply's next ask under.
_OLD_NEXT_ASK = "followup"


def _renamed(data: dict[str, Any]) -> dict[str, Any]:
    """``data`` with the stored key ``followup`` read as ``next_ask``."""
    if _OLD_NEXT_ASK in data:
        data["next_ask"] = data.pop(_OLD_NEXT_ASK)
    return data
