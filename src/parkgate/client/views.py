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
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from parkgate.channels.registry import names as channel_names
from parkgate.core.model import AskShape, CallbackState, Run
from parkgate.core.shape import TIME, from_json, nested_codec, spec


@dataclass(frozen=True, slots=True)
class AskView(AskShape):
    """One ask as the service shows it (``GET /v1/asks/{ask_id}``).

    Its public fields are :class:`~parkgate.core.model.AskShape`'s (``ask_id`` is its
    ``id``, by the name its JSON gives it). The JSON adds ``next_due_at``, when its next
    reminder or escalation falls due (``None``: none remains, or it is closed);
    ``hours_open``, set in a listing of open asks; ``callback``, where its callback
    stands, for an ask parked with a callback URL; and where it is posted on a channel,
    once it is, under the channel's name (:mod:`parkgate.channels.registry`): ``posts``
    holds them, and each registered channel's name reads its post too (``view.slack``:
    ``{channel, ts}``, ``None`` when not posted there).
    """

    next_due_at: datetime | None = field(default=None, metadata=spec(TIME))
    hours_open: float | None = None
    callback: CallbackState | None = field(default=None, metadata=spec(nested_codec(CallbackState)))
    #: Where it is posted, by channel (read from the JSON's key of each registered channel).
    posts: Mapping[str, Mapping[str, Any]] = field(default_factory=dict, metadata=spec(public=False))

    def __getattr__(self, name: str) -> Mapping[str, Any] | None:
        """A registered channel's post (``view.slack``), ``None`` when it is not posted there."""
        if name.startswith("_") or name not in channel_names():
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        return self.posts.get(name)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> AskView:
        """The ask from its JSON object; ``KeyError``/``ValueError``/``TypeError`` if it is not one."""
        view = from_json(cls, data)
        posts = {name: _location(data[name]) for name in channel_names() if data.get(name) is not None}
        return replace(view, posts=posts) if posts else view


@dataclass(frozen=True, slots=True)
class AskPage:
    """One page of asks (``GET /v1/asks``: open ones oldest first, any other status newest
    first); ``next`` is the cursor of the page after it (``None`` on the last page)."""

    asks: tuple[AskView, ...]
    next: str | None = None

    @property
    def next_cursor(self) -> str | None:
        """The cursor of the page after this one (``next``), by the name the library's
        :class:`~parkgate.core.history.HistoryPage` gives it."""
        return self.next

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


def _location(value: object) -> dict[str, Any]:
    """A channel post's location object, as given."""
    if not isinstance(value, Mapping):
        raise TypeError(f"expected an object, not {type(value).__name__}")
    return dict(value)


__all__ = ["AskPage", "AskView", "callback_from_dict", "run_from_dict"]
