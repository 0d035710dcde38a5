"""What the client reads back: the service's JSON as typed values.

A reply is the library's :class:`~parkgate.Reply`, a run its
:class:`~parkgate.store.Run` and a callback's state its
:class:`~parkgate.store.base.CallbackState`; an ask is an :class:`AskView`, the ask's
public JSON field for field (``ask_to_dict``): the stored :class:`~parkgate.Ask` holds
more than the service shows.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from parkgate.channels.registry import names as channel_names
from parkgate.core.expect import Expect
from parkgate.core.kinds import AskKind, AskStatus, RunStatus
from parkgate.core.model import CallbackState, CallbackStatus, Run, Vote


@dataclass(frozen=True, slots=True)
class AskView:
    """One ask as the service shows it (``GET /v1/asks/{ask_id}``).

    ``hours_open`` is set in a listing of open asks; ``callback`` (where its callback
    stands) for an ask parked with a ``callback_url``; ``context`` is what was parked
    with it; ``owner`` the name of the token that parked it (``None`` without named tokens).
    ``responders`` and ``quorum`` say who may answer; ``votes`` holds each responder's
    current vote; ``answered_by`` and ``closed_by`` who selected or answered it, and who
    cancelled it (``operator`` for an operator's cancel). ``reminders_sent`` counts its
    reminders so far, ``escalated_at`` says when it escalated, and ``next_due_at`` when its
    next reminder or escalation falls due (``None``: none remains, or it is closed).
    ``posts`` says where it is posted on a channel, once it is, under the channel's name
    (:mod:`parkgate.channels.registry`), as the ask's JSON does; each registered channel's
    name reads its post too (``view.slack``: ``{channel, ts}``, ``None`` when not posted there).
    """

    ask_id: str
    conversation_id: str
    run_id: str
    kind: AskKind
    prompt: str
    options: tuple[str, ...]
    status: AskStatus
    mismatches: int
    ttl_seconds: float
    asked_at: datetime
    last_touched: datetime
    outcome: str | None = None
    answer: str | None = None
    option_index: int | None = None
    phase: str | None = None
    expect: Expect | None = None
    answered_at: datetime | None = None
    context: Mapping[str, Any] | None = None
    owner: str | None = None
    hours_open: float | None = None
    callback: CallbackState | None = None
    responders: tuple[str, ...] = ()
    quorum: int = 1
    votes: tuple[Vote, ...] = ()
    answered_by: str | None = None
    closed_by: str | None = None
    remind_after: tuple[float, ...] = ()
    escalate_after: float | None = None
    escalate_to: tuple[str, ...] = ()
    reminders_sent: int = 0
    escalated_at: datetime | None = None
    next_due_at: datetime | None = None
    posts: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)

    def __getattr__(self, name: str) -> Mapping[str, Any] | None:
        """A registered channel's post (``view.slack``), ``None`` when it is not posted there."""
        if name.startswith("_") or name not in channel_names():
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        return self.posts.get(name)

    @property
    def is_open(self) -> bool:
        """Whether the ask is still open."""
        return self.status is AskStatus.OPEN

    @property
    def id(self) -> str:
        """The ask's id (``ask_id``), by the name the library's :class:`~parkgate.Ask` gives it."""
        return self.ask_id

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> AskView:
        """The ask from its JSON object; ``KeyError``/``ValueError``/``TypeError`` if it is not one."""
        expect = data.get("expect")
        context = data.get("context")
        callback = data.get("callback")
        return cls(
            ask_id=_text(data["ask_id"]),
            conversation_id=_text(data["conversation_id"]),
            run_id=_text(data["run_id"]),
            kind=AskKind(data["kind"]),
            prompt=_text(data["prompt"]),
            options=tuple(_text(label) for label in data["options"]),
            status=AskStatus(data["status"]),
            mismatches=int(data["mismatches"]),
            ttl_seconds=float(data["ttl_seconds"]),
            asked_at=_stamp(data["asked_at"]),
            last_touched=_stamp(data["last_touched"]),
            outcome=data.get("outcome"),
            answer=data.get("answer"),
            option_index=data.get("option_index"),
            phase=data.get("phase"),
            expect=None if expect is None else Expect(**expect),
            answered_at=_maybe_stamp(data.get("answered_at")),
            context=None if context is None else dict(context),
            owner=data.get("owner"),
            hours_open=data.get("hours_open"),
            callback=None if callback is None else callback_from_dict(callback),
            responders=tuple(_text(name) for name in data.get("responders") or ()),
            quorum=int(data.get("quorum", 1)),
            votes=tuple(Vote.from_dict(vote) for vote in data.get("votes") or ()),
            answered_by=data.get("answered_by"),
            closed_by=data.get("closed_by"),
            remind_after=tuple(float(offset) for offset in data.get("remind_after") or ()),
            escalate_after=data.get("escalate_after"),
            escalate_to=tuple(_text(name) for name in data.get("escalate_to") or ()),
            reminders_sent=int(data.get("reminders_sent", 0)),
            escalated_at=_maybe_stamp(data.get("escalated_at")),
            next_due_at=_maybe_stamp(data.get("next_due_at")),
            posts={name: _location(data[name]) for name in channel_names() if data.get(name) is not None},
        )


@dataclass(frozen=True, slots=True)
class AskPage:
    """One page of open asks, oldest first; ``next`` is the cursor of the page after it
    (``None`` on the last page)."""

    asks: tuple[AskView, ...]
    next: str | None = None

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> AskPage:
        """The page from its JSON object (``GET /v1/asks``)."""
        following = data.get("next")
        return cls(tuple(AskView.from_dict(ask) for ask in data["asks"]), None if following is None else str(following))


def callback_from_dict(data: Mapping[str, Any]) -> CallbackState:
    """An ask's ``callback`` object as the library's :class:`CallbackState`."""
    return CallbackState(
        status=CallbackStatus(data["status"]),
        attempts=int(data["attempts"]),
        last_error=data.get("last_error"),
        next_attempt_at=_maybe_stamp(data.get("next_attempt_at")),
    )


def run_from_dict(data: Mapping[str, Any]) -> Run:
    """A run's JSON (``GET /v1/runs/{run_id}``) as the library's :class:`Run`; its
    ``answers`` are the run's ``context``."""
    return Run(
        id=_text(data["run_id"]),
        conversation_id=_text(data["conversation_id"]),
        workflow=data.get("workflow"),
        status=RunStatus(_text(data["status"])),
        outcome=data.get("outcome"),
        context=dict(data["answers"]),
        pending_ask_id=data.get("pending_ask_id"),
        created_at=_stamp(data["created_at"]),
        updated_at=_stamp(data["updated_at"]),
        owner=data.get("owner"),
        output=data.get("output"),
    )


def _location(value: object) -> dict[str, Any]:
    """A channel post's location object, as given."""
    if not isinstance(value, Mapping):
        raise TypeError(f"expected an object, not {type(value).__name__}")
    return dict(value)


def _text(value: object) -> str:
    if not isinstance(value, str):
        raise TypeError(f"expected a string, not {type(value).__name__}")
    return value


def _stamp(value: object) -> datetime:
    return datetime.fromisoformat(_text(value))


def _maybe_stamp(value: object) -> datetime | None:
    return None if value is None else _stamp(value)


__all__ = ["AskPage", "AskView", "callback_from_dict", "run_from_dict"]
