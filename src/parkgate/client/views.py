"""What the client reads back: the service's JSON as typed values.

A reply is the library's :class:`~parkgate.Reply`, a run its
:class:`~parkgate.store.Run` and a callback's state its
:class:`~parkgate.store.base.CallbackState`; an ask is an :class:`AskView`, the ask's
public fields (:class:`~parkgate.core.model.AskShape`, the stored
:class:`~parkgate.Ask`'s public part) and what its JSON adds. Each is read from its JSON
by its declaration (:func:`parkgate.core.shape.from_json`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from parkgate.core.model import AskShape, CallbackState, Run
from parkgate.core.shape import TIME, Codec, from_json, nested_codec, spec


def _location(value: object) -> dict[str, Any]:
    """A channel post's location object, as given."""
    if not isinstance(value, Mapping):
        raise TypeError(f"expected an object, not {type(value).__name__}")
    return dict(value)


#: Where an ask is posted on a channel: its location object, as the service gives it.
_LOCATION = Codec(from_json=_location)


@dataclass(frozen=True, slots=True)
class AskView(AskShape):
    """One ask as the service shows it (``GET /v1/asks/{ask_id}``).

    Its public fields are :class:`~parkgate.core.model.AskShape`'s (``ask_id`` is its
    ``id``, by the name its JSON gives it). The JSON adds ``next_due_at``, when its next
    reminder or escalation falls due (``None``: none remains, or it is closed);
    ``hours_open``, set in a listing of open asks; ``callback``, where its callback
    stands, for an ask parked with a callback URL; and ``slack`` (``{channel, ts}``) and
    ``telegram`` (``{chat_id, message_id}``), where it is posted on a channel, once it is.
    """

    next_due_at: datetime | None = field(default=None, metadata=spec(TIME))
    hours_open: float | None = None
    callback: CallbackState | None = field(default=None, metadata=spec(nested_codec(CallbackState)))
    slack: Mapping[str, str] | None = field(default=None, metadata=spec(_LOCATION))
    telegram: Mapping[str, int] | None = field(default=None, metadata=spec(_LOCATION))

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> AskView:
        """The ask from its JSON object; ``KeyError``/``ValueError``/``TypeError`` if it is not one."""
        return from_json(cls, data)


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
    return from_json(CallbackState, data)


def run_from_dict(data: Mapping[str, Any]) -> Run:
    """A run's JSON (``GET /v1/runs/{run_id}``) as the library's :class:`Run`; its
    ``answers`` are the run's ``context``."""
    return from_json(Run, data)


__all__ = ["AskPage", "AskView", "callback_from_dict", "run_from_dict"]
