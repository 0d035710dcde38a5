"""What a channel implements (:class:`Channel`), and the values it is handed and returns.

A channel is a platform where people answer (Slack, Telegram, ...). It does three
things, each a job of the durable queue (:mod:`parkgate.channels.jobs`), run by the
deliverer in a thread of its own, never on a person's reply path:

- :meth:`Channel.post`: post an open ask where :class:`ChannelTarget` says; return where
  it went (:class:`Posted`: the location kept with the ask, and the thread whose replies
  and buttons go to the ask);
- :meth:`Channel.closed`: update the posted ask once it closed (answered, dropped,
  expired), from the ask's final state;
- :meth:`Channel.reply`: post a reply's text in the ask's thread (retry, escalated,
  reshown, voted; ``not_yours`` privately to its sender where the platform allows).

A channel may also refuse an ask when it is parked (:class:`ChecksPosts`: a question
longer than the platform posts), before anything is written.

Inbound, a channel turns a platform event into
:meth:`Gateway.handle_in_channel <parkgate.Gateway.handle_in_channel>` with the
platform's user as ``sender`` and the event's id as ``message_id``. A method that raises
is retried with backoff; :class:`ChannelJobFailed` gives the job up at once.
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from parkgate.core.kinds import EventType, ReplyKind
from parkgate.core.machine import joined_names
from parkgate.core.model import Ask
from parkgate.core.phrases import PHRASES
from parkgate.errors import ChannelJobFailed as ChannelJobFailed
from parkgate.errors import ChannelRetryLater as ChannelRetryLater
from parkgate.errors import InputError

#: The largest target a park takes, in characters of its JSON.
MAX_TARGET_CHARS = 2048


@dataclass(frozen=True, slots=True)
class ChannelTarget:
    """Where a park posts its ask: a channel's name and that channel's JSON object.

    Slack's is ``ChannelTarget("slack", {"channel": "C123", "thread_ts": "..."})``
    (``thread_ts`` optional); over HTTP it is the ask's ``slack`` field.
    """

    channel: str
    where: Mapping[str, Any] = field(default_factory=dict)

    def to_json(self) -> str:
        """The target as stored with the ask's post."""
        return json.dumps(dict(self.where), ensure_ascii=False, sort_keys=True)


def check_target(value: object) -> ChannelTarget | None:
    """``value`` as a :class:`ChannelTarget` (a ``(channel, mapping)`` pair is taken too).

    Raises:
        InputError: It is not a target: a channel name that is not a short id, or a
            ``where`` that is not a JSON object of at most :data:`MAX_TARGET_CHARS`.
    """
    if value is None:
        return None
    if isinstance(value, tuple) and len(value) == 2:
        value = ChannelTarget(value[0], value[1])
    if not isinstance(value, ChannelTarget):
        raise InputError(f"post_to must be a ChannelTarget, not {type(value).__name__}")
    if not isinstance(value.channel, str) or not value.channel.isidentifier() or len(value.channel) > 40:
        raise InputError("post_to's channel must be a channel's name: an identifier of at most 40 characters")
    if not isinstance(value.where, Mapping):
        raise InputError(f"post_to's where must be a JSON object, not {type(value.where).__name__}")
    try:
        encoded = value.to_json()
    except (TypeError, ValueError) as error:
        raise InputError(f"post_to's where is not JSON: {error}") from None
    if len(encoded) > MAX_TARGET_CHARS:
        raise InputError(f"post_to's where is over {MAX_TARGET_CHARS} characters of JSON")
    return value


@dataclass(frozen=True, slots=True)
class Posted:
    """Where a channel posted an ask.

    ``location`` is kept with the ask (its JSON shows it under the channel's name, such as
    Slack's ``{"channel": "C1", "ts": "..."}``) and handed back to :meth:`Channel.closed`
    and :meth:`Channel.reply`; ``thread_key`` names the platform thread whose replies and
    buttons go to the ask (``None``: none is routed by thread).
    """

    location: Mapping[str, Any]
    thread_key: str | None = None


@dataclass(frozen=True, slots=True)
class ChannelReply:
    """A line to post in an ask's thread: a message's reply (its kind), or an event of the
    ask's own (a reminder, an escalation); its text; who sent the message; and the people
    the line names, which each channel shows its own way (a Slack mention, a Telegram
    ``@username``): the text holds :data:`NAMES_SLOT` where they go."""

    kind: ReplyKind | EventType
    text: str
    #: The sender of the message replied to (a ``not_yours`` line goes to them alone).
    to: str | None = None
    #: The sender ids the line names at :data:`NAMES_SLOT` ("U_ALICE or U_BOB").
    names: tuple[str, ...] = ()

    def shown(self, name: Callable[[str], str], escape: Callable[[str], str] = str) -> str:
        """The line as a channel posts it: its text through ``escape`` (the platform's
        escaping), with the people it names put in as ``name`` shows each, unescaped (a
        mention is markup the channel means)."""
        parts = [escape(part) for part in self.text.split(NAMES_SLOT)]
        return joined_names(self.names, name).join(parts) if self.names else "".join(parts)

    def to_json(self) -> str:
        """The reply job's payload."""
        value = {"kind": self.kind.value, "text": self.text, "to": self.to, "names": list(self.names)}
        return json.dumps(value, ensure_ascii=False)

    @classmethod
    def from_json(cls, payload: str) -> ChannelReply:
        """The reply a job's payload holds."""
        value = json.loads(payload)
        kind = str(value["kind"])
        shown = EventType(kind) if kind.startswith("ask.") else ReplyKind(kind)
        return cls(shown, str(value["text"]), value.get("to"), tuple(str(name) for name in value.get("names", ())))


#: Where a :class:`ChannelReply`'s text takes the people it names (a NUL: no text a
#: person or a prompt can hold has one).
NAMES_SLOT = "\x00"


def not_yours_reply(ask: Ask, to: str | None) -> ChannelReply:
    """The ``not_yours`` line for ``to``, naming the ask's responders as the channel shows them."""
    return ChannelReply(
        ReplyKind.NOT_YOURS, PHRASES[ReplyKind.NOT_YOURS].format(responders=NAMES_SLOT), to, ask.responders
    )


class Channel(Protocol):
    """A platform where people answer asks: what the deliverer calls to run its jobs.

    Each method runs in a worker thread, may block on the platform's API (bounded by the
    channel's own timeout), and raises to be retried later.
    """

    #: The channel's name: the key of its targets, its jobs and its ask JSON field.
    name: str

    def post(self, ask: Ask, target: Mapping[str, Any]) -> Posted:
        """Post open ``ask`` (its prompt, a button per option, Cancel and Show options) at ``target``."""
        ...

    def closed(self, ask: Ask, location: Mapping[str, Any]) -> None:
        """Update the message at ``location`` to say how closed ``ask`` ended (buttons removed)."""
        ...

    def reply(self, ask: Ask, location: Mapping[str, Any], reply: ChannelReply) -> None:
        """Post ``reply`` in the thread of ``ask``'s message at ``location``."""
        ...


class SeenNames:
    """The names of people a channel has seen on its platform, by user id: the latest
    :data:`NAMES_KEPT` people (the one seen longest ago goes first). A name kept as
    ``@handle`` is the platform's unique handle; any other (a first name its owner chose)
    serves the channel's own lines only and is never given out by :meth:`handles`.
    Thread-safe: a channel's workers and the request path share one.
    """

    def __init__(self) -> None:
        self._names: OrderedDict[str, str] = OrderedDict()
        self._lock = threading.Lock()

    def saw(self, user_id: str, name: str) -> None:
        """Remember ``name`` for ``user_id`` (an empty name is not kept)."""
        if not name:
            return
        with self._lock:
            self._names[user_id] = name
            self._names.move_to_end(user_id)
            while len(self._names) > NAMES_KEPT:
                self._names.popitem(last=False)

    def saw_handle(self, user_id: str, handle: object) -> None:
        """Remember ``handle`` (a platform's unique username, as a payload gives it) as
        ``@handle`` for ``user_id``; anything but a non-empty string is ignored."""
        if isinstance(handle, str) and handle.strip() and not handle.startswith("@"):
            self.saw(user_id, "@" + handle.strip())

    def name(self, user_id: str) -> str:
        """``user_id``'s name as last seen, else the id itself."""
        with self._lock:
            return self._names.get(user_id, user_id)

    def handles(self) -> dict[str, str]:
        """Each user id seen with a unique ``@handle``, and that handle (:class:`KnowsNames`)."""
        with self._lock:
            return {user_id: name for user_id, name in self._names.items() if name.startswith("@")}


#: How many people's names a channel keeps (:class:`SeenNames`).
NAMES_KEPT = 4096


@runtime_checkable
class KnowsNames(Protocol):
    """A channel that learns people's names from its platform as it reads their messages
    and clicks (a Telegram, Slack or Discord ``@username``, kept in :class:`SeenNames`):
    the console shows them in place of sender ids
    (:mod:`parkgate.core.directory`), where the configured directory has none.

    Only names the platform keeps unique are given (a handle, never a display name its
    owner chooses), so nobody can take another person's name on the console.
    """

    def known_names(self) -> Mapping[str, str]:
        """Each sender id this process has a unique name for, and that name."""
        ...


@runtime_checkable
class ChecksPosts(Protocol):
    """A channel that checks, when an ask is parked, that it can post the ask where asked.

    The gateway calls :meth:`check_post` before anything is written, so an ask the
    platform would refuse (a Telegram message over 4,096 characters) is the park's
    :class:`~parkgate.errors.InputError` (a 422 over HTTP), never a post that fails later.
    """

    def check_post(self, ask: Ask, where: Mapping[str, Any]) -> None:
        """Raise :class:`~parkgate.errors.InputError` naming why ``ask`` cannot be posted at ``where``."""
        ...
