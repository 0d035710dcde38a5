"""The JSON the API gives about asks, runs, replies and the server, as pydantic models: what
the OpenAPI schema shows for each response. The bodies it takes are
:mod:`parkgate.http.models`.

An ask's, a run's, a reply's, a vote's and a callback's model is derived from the value's
declaration (:func:`model_of`): one property a public field, each required (its JSON always
holds it). Every model forbids other keys, so the schema says exactly what is sent.
"""

from __future__ import annotations

import types
import typing
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, create_model

from parkgate.core.events import EventKind
from parkgate.core.expect import Expect
from parkgate.core.model import AskShape, CallbackState, Reply, Run, Vote
from parkgate.core.shape import Declared, public
from parkgate.errors import ParkgateError
from parkgate.gateway.shapes import SHOWN
from parkgate.http.channel_targets import ChannelPostsOut
from parkgate.http.models import ExpectJSON

#: Every response model's settings: a key it does not declare is never sent.
STRICT = ConfigDict(extra="forbid")


class Out(BaseModel):
    """A response body: every key it may hold is declared (``additionalProperties: false``)."""

    model_config = STRICT


#: The model of each declared value (and of the forms the core declares), by its class.
_MODELS: dict[type[Any], Any] = {Expect: ExpectJSON}


def model_of(
    kind: type[Any], name: str, extra: Mapping[str, tuple[Any, Any]] | None = None, base: type[Out] | None = None
) -> type[BaseModel]:
    """The response model of a declared value's public JSON, and the ``extra`` keys shown with it.

    Args:
        kind: A declared dataclass (:mod:`parkgate.core.shape`).
        name: The model's name in the schema.
        extra: Keys its JSON holds beyond the declared fields, each as ``(type, Field(...))``.
        base: A model whose keys the JSON holds too (an :class:`Out`, so it forbids others).

    Returns:
        A model with one required property a public field (typed by its codec's JSON type,
        described by its spec's ``doc``), then ``extra``; no other key.
    """
    properties: dict[str, Any] = {
        item.wire: (_json_type(item, kind, name), Field(description=item.spec.doc or None)) for item in public(kind)
    }
    properties.update(extra or {})
    model: type[BaseModel] = create_model(
        name, __base__=base or Out, __doc__=kind.__doc__, __module__=__name__, **properties
    )
    model.model_rebuild(_types_namespace={name: model})  # a value that holds one of its own (a reply's next ask)
    _MODELS[kind] = model
    return model


def _json_type(item: Declared, kind: type[Any], name: str) -> Any:
    """What a field's JSON value is: its codec's JSON type (else its own), a declared class
    as its model, ``| None`` when the field may be ``None``."""
    found = item.codec.json_type if item.codec.json_type is not None else item.type
    optional = (item.default is None and not item.required) or _is_optional(item.type)
    json_type = _as_model(_without_none(found), kind, name)
    return typing.Optional[json_type] if optional else json_type  # noqa: UP045  # json_type may be a forward reference


def _as_model(json_type: Any, kind: type[Any], name: str) -> Any:
    if json_type is kind:
        return name  # a forward reference, resolved when the model is rebuilt
    if json_type in _MODELS:
        return _MODELS[json_type]
    if typing.get_origin(json_type) is list:
        (item,) = typing.get_args(json_type)
        return list[_as_model(item, kind, name)]  # type: ignore[misc]
    return json_type


def _is_optional(hint: Any) -> bool:
    return typing.get_origin(hint) in (typing.Union, types.UnionType) and type(None) in typing.get_args(hint)


def _without_none(hint: Any) -> Any:
    if not _is_optional(hint):
        return hint
    rest = [arg for arg in typing.get_args(hint) if arg is not type(None)]
    return rest[0] if len(rest) == 1 else typing.Union[tuple(rest)]  # noqa: UP007  # built from parts


class _Posted(Out, ChannelPostsOut):
    """Where an ask is posted on a channel, under the channel's name
    (:class:`~parkgate.http.channel_targets.ChannelPostsOut`): absent until it is posted."""


VoteOut = model_of(Vote, "VoteOut")
CallbackOut = model_of(CallbackState, "CallbackOut")
ReplyOut = model_of(Reply, "ReplyOut")
RunOut = model_of(Run, "RunOut")
AskOut = model_of(
    AskShape,
    "AskOut",
    {
        "next_due_at": (str | None, Field(description=SHOWN["next_due_at"])),
        "hours_open": (float | None, Field(default=None, description=SHOWN["hours_open"])),
        "callback": (CallbackOut | None, Field(default=None, description=SHOWN["callback"])),
    },
    base=_Posted,
)


class ConversationOut(Out):
    """A conversation as a surface sees it: its open ask, ``null`` when nothing is parked."""

    conversation_id: str
    ask: AskOut | None  # type: ignore[valid-type]


class AskListOut(Out):
    """One page of asks (open ones oldest first, each with ``hours_open``; any other status
    newest first); ``next`` is the ``cursor`` of the page after it (``null`` on the last page)."""

    asks: list[AskOut]  # type: ignore[valid-type]
    next: str | None


class WorkflowsOut(Out):
    """The workflows this server can start, by name."""

    workflows: list[str]


def _error_fields() -> dict[str, tuple[Any, Any]]:
    """The keys an error body may carry past ``error`` and ``detail`` that an error class
    states (its ``wire_fields``: :mod:`parkgate.errors`), each with the codes that send it."""
    sent_with: dict[str, set[str]] = {}
    pending: list[type[ParkgateError]] = [ParkgateError]
    while pending:
        error = pending.pop()
        pending.extend(error.__subclasses__())
        for key in vars(error).get("wire_fields", {}):
            sent_with.setdefault(key, set()).update(error.declared_codes())
    return {
        key: (str | None, Field(default=None, description=f"Sent with {', '.join(sorted(codes))}."))
        for key, codes in sorted(sent_with.items())
    }


_ERROR_FIELDS: dict[str, Any] = {
    "error": (str, Field(description="The error's code.")),
    "detail": (str, Field(description="What is wrong, in a sentence.")),
    **_error_fields(),
    "scope": (str | None, Field(default=None, description="The scope a 403 missing_scope says the token lacks.")),
    "deliverer": (str | None, Field(default=None, description="The deliverer's state, when it is failing (503).")),
    "failing_since": (str | None, Field(default=None, description="Since when the deliverer fails.")),
    "last_pass": (str | None, Field(default=None, description="When the deliverer last finished a pass.")),
}
#: Every error: a short code and a sentence naming what is wrong, and the keys naming what
#: a client acts on next where there are some.
ErrorOut = create_model(
    "ErrorOut",
    __base__=Out,
    __doc__="Every error: a short code and a sentence naming what is wrong, and the keys naming what a client "
    "acts on next where there are some.",
    __module__=__name__,
    **_ERROR_FIELDS,
)


class HealthOut(Out):
    """The service answers, its store is reachable and its deliverer (if any) is not failing."""

    status: Literal["ok"]
    store: str
    schema_version: int
    deliverer: Literal["starting", "running", "off"] = Field(
        description="This process's deliverer: starting (no pass yet), running, or off (none runs here)"
    )


__all__ = [
    "AskListOut",
    "AskOut",
    "CallbackOut",
    "ConversationOut",
    "ErrorOut",
    "HealthOut",
    "Out",
    "ReplyOut",
    "RunOut",
    "VoteOut",
    "WorkflowsOut",
    "model_of",
]


class EventOut(Out):
    """One event of an ask's log (:mod:`parkgate.core.events`)."""

    seq: int = Field(description="Its place among its ask's events, from 1.")
    at: str = Field(description="When it happened (ISO 8601).")
    type: Literal[tuple(kind.value for kind in EventKind)]  # type: ignore[valid-type]
    ask_id: str
    sender: str | None = Field(description="Who caused it (null for the clock's events).")
    data: dict[str, Any] = Field(description="What its type records.")


class EventsOut(Out):
    """An ask's timeline: its events in order."""

    ask_id: str
    events: list[EventOut]


class TimeToAnswerOut(Out):
    """Seconds from asked to answered over a window's answered asks (nearest rank; null when none)."""

    p50: float | None
    p90: float | None
    p99: float | None
    count: int


class FiguresOut(Out):
    """One window's (or group's) figures, each defined in :mod:`parkgate.core.stats`."""

    opened: int
    answered: int
    expired: int
    cancelled: int
    time_to_answer: TimeToAnswerOut
    reminders: int
    escalations: int
    misses_per_ask: float | None
    open_by_age: dict[str, int] = Field(description="Open asks by age: <1h, 1-6h, 6-24h, >24h.")


class GroupFiguresOut(FiguresOut):
    """One group's figures and its key (a UTC day, a sender, a channel target)."""

    key: str


class StatsOut(Out):
    """The figures of ``[since, until)``, in all and per group."""

    since: str | None
    until: str | None
    by: Literal["day", "responder", "channel"] | None
    total: FiguresOut
    groups: list[GroupFiguresOut]
    truncated: bool = Field(description="The rows read reached the bound: older asks are left out.")
