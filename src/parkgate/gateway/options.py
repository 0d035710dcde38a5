"""An ask's options, declared once: the keyword arguments every park takes, and the
checked value they become.

The options are declared here and nowhere else. Each call that parks takes the fields it
offers as keyword arguments typed by one of the ``TypedDict`` s below (``**options:
Unpack[AskFields]``), so a caller writes ``gw.ask("c", "Deploy?", ["Yes", "No"],
callback_url=..., ttl=60)`` and a type checker knows every option's type. The sets nest:

| fields | adds | taken by |
| --- | --- | --- |
| :class:`RunFields` | ``run_id``, ``replace``, ``responders``, ``quorum`` | ``Client.start`` |
| :class:`OwnedRunFields` | ``owner``, ``post_to`` (:class:`PostFields`) | ``Gateway.start`` |
| :class:`ParkFields` | ``ttl``, ``callback_url``, ``key``, ``remind_after``, ``escalate_*`` | ``ask_from_text`` |
| :class:`OwnedParkFields` | ``owner`` | ``Gateway.ask_from_text`` |
| :class:`PromptFields` | ``default``, ``expect``, ``context``, ``phase``, ``follow_up`` | ``POST /v1/asks`` |
| :class:`ClientAskFields` | ``post_to`` (:class:`PostFields`) | ``Client.ask`` |
| :class:`AskFields` | ``watched`` | ``Gateway.ask`` |

An option that travels in JSON says how, on its field: ``Annotated[type,
Option(form, doc, wire)]`` (:class:`~parkgate.core.shape.Option`). The HTTP input models
(``AskIn``, ``StartIn``) and the clients' request bodies are derived from these; one
without an ``Option`` is the library's only (the HTTP client sends no ``owner``: the
server records its token's name). The reminders and escalation are
:class:`~parkgate.core.schedule.ScheduleFields`, which a workflow's phase and an adapter's
payload take too.

:meth:`AskOptions.checked` turns the fields into one frozen :class:`AskOptions`, each
checked once with :mod:`parkgate.gateway.checks` (:class:`~parkgate.errors.InputError`
naming the option), and :meth:`AskOptions.fitted` checks those that depend on the question
(``default``, ``expect``). Adding an option is a field in one ``TypedDict`` and one in
:class:`AskOptions` (an ask keeps it when :class:`~parkgate.Ask` has a field of its name).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Annotated, Any, TypedDict

from parkgate.channels.base import ChannelTarget, check_target
from parkgate.core.expect import Expect, as_expect
from parkgate.core.fence import parse_callback_url
from parkgate.core.kinds import AskKind
from parkgate.core.model import Ask
from parkgate.core.schedule import ScheduleFields
from parkgate.core.shape import Form, Option
from parkgate.core.stopping_point import AskSpec
from parkgate.errors import InputError
from parkgate.gateway.checks import (
    check_before_ttl,
    check_context,
    check_default,
    check_duration,
    check_expect,
    check_flag,
    check_id,
    check_optional_id,
    check_quorum,
    check_responders,
    check_schedule,
    check_string,
)

#: The longest callback URL, in characters.
MAX_CALLBACK_URL_CHARS = 2048


class RunFields(TypedDict, total=False):
    """The run a park or a workflow's start belongs to, and what happens to an open ask."""

    #: The run to park in (a new one when left out); it must be running.
    run_id: Annotated[str | None, Option(Form.ID)]
    #: Close the conversation's open ask as ``cancelled`` (outcome ``replaced``) instead of
    #: raising :class:`~parkgate.errors.AskAlreadyOpen`.
    replace: Annotated[bool, Option(Form.FLAG)]
    #: Who may answer (distinct senders); anyone when left out. Others get ``not_yours``.
    responders: Annotated[
        list[str] | tuple[str, ...] | None,
        Option(Form.SENDERS, "Who may answer (distinct senders); anyone when left out."),
    ]
    #: How many responders must agree on one option (default 1; only with ``responders``).
    quorum: Annotated[
        int | None,
        Option(Form.COUNT, "How many responders must pick one option to select it (default 1; only with responders)."),
    ]


class PostFields(TypedDict, total=False):
    """The channel to post an ask on."""

    #: Post the ask to a channel (:mod:`parkgate.channels`): a ChannelTarget, or a
    #: ``(channel, where)`` pair; the post is updated when it closes (implies ``watched``).
    #: A workflow's later phases are posted in the same place and thread.
    post_to: ChannelTarget | tuple[str, Mapping[str, Any]] | None


class OwnedRunFields(RunFields, PostFields, total=False):
    """:class:`RunFields`, who parks (a library caller's own; the HTTP service passes its
    token's name) and the channel to post on."""

    #: Who parks the ask; an owner reaches only its own asks and runs.
    owner: str | None


class ParkFields(RunFields, ScheduleFields, total=False):
    """What every park takes, over HTTP too: :class:`RunFields`, a TTL, a callback and a
    schedule (:class:`~parkgate.core.schedule.ScheduleFields`: reminders and an escalation)."""

    #: The ask's TTL (a timedelta or seconds, positive), instead of the gateway's.
    ttl: Annotated[timedelta | float | None, Option(Form.SECONDS, wire="ttl_seconds")]
    #: Where the ask's events are posted, signed: its reminders, escalation and close.
    callback_url: Annotated[str | None, Option(Form.URL)]
    #: An idempotency key: a park with a key the owner parked before returns that ask.
    key: Annotated[
        str | None, Option(Form.ID, "An idempotency key: a park with a key this owner parked before returns that ask.")
    ]


class OwnedParkFields(ParkFields, OwnedRunFields, total=False):
    """:class:`ParkFields` and ``owner``: what :meth:`Gateway.ask_from_text <parkgate.Gateway.ask_from_text>` takes."""


class PromptFields(ParkFields, total=False):
    """:class:`ParkFields` and what a prompt's ask adds: what ``POST /v1/asks`` and the clients take."""

    #: Recorded as the answer if the ask expires; for a choice, one of the options.
    default: Annotated[str | None, Option(Form.TEXT, "Recorded as the answer if the ask expires.")]
    #: The form a text ask's answer must take (an Expect, a form's name, or a mapping).
    expect: Annotated[
        Expect | str | Mapping[str, Any] | None, Option(Form.EXPECT, "A text ask's answer form, such as an integer.")
    ]
    #: A JSON object of at most 16 KiB, kept and shown with the ask.
    context: Annotated[
        Mapping[str, Any] | None,
        Option(Form.OBJECT, "Anything else to keep and show with the ask (a JSON object, at most 16 KiB)."),
    ]
    #: The workflow step the ask belongs to.
    phase: Annotated[str | None, Option(Form.ID, "The workflow step the ask belongs to.")]
    #: A waiter acts on the close: the closed ask is listed until it says it is done.
    #: A string names that waiter: its listing (``watcher=``) holds only the asks named for it.
    follow_up: Annotated[
        bool | str,
        Option(
            Form.FLAG_OR_ID, "A waiter claims the closed ask's follow-up, then ends it; a string names that waiter."
        ),
    ]


class ClientAskFields(PromptFields, PostFields, total=False):
    """:class:`PromptFields` and the channel to post the ask on: what
    :meth:`Client.ask <parkgate.client.Client.ask>` takes.

    The client sends ``post_to`` as ``POST /v1/asks`` takes a channel, under its name
    (``slack: {...}``), and takes that key as a keyword too (``slack={"channel": "C123"}``),
    for every registered channel (:mod:`parkgate.channels.registry`); one channel at most.
    """


class AskFields(PromptFields, OwnedParkFields, total=False):
    """Every option: what :meth:`Gateway.ask <parkgate.Gateway.ask>` takes."""

    #: Something waits on the ask's close: it gets a due read at its TTL.
    watched: bool


def field_names(fields: type) -> frozenset[str]:
    """The option names a fields ``TypedDict`` (such as :class:`PromptFields`) holds."""
    keys: frozenset[str] = fields.__optional_keys__ | fields.__required_keys__  # type: ignore[attr-defined]
    return keys


def refuse_unknown(given: Mapping[str, object], fields: type, call: str) -> None:
    """Raise ``TypeError`` for an option ``call`` does not take, as Python does for a keyword."""
    unknown = sorted(set(given) - field_names(fields))
    if unknown:
        raise TypeError(f"{call}() got an unexpected keyword argument {unknown[0]!r}")


@dataclass(frozen=True, slots=True)
class AskOptions:
    """An ask's options, checked: what the gateway parks with (made by :meth:`checked`)."""

    run_id: str | None = None
    ttl: timedelta | None = None
    replace: bool = False
    default: str | None = None
    callback_url: str | None = None
    phase: str | None = None
    context: Mapping[str, Any] | None = None
    watched: bool = False
    owner: str | None = None
    expect: Expect | None = None
    follow_up: bool | str = False
    responders: tuple[str, ...] = ()
    quorum: int = 1
    key: str | None = None
    post_to: ChannelTarget | None = None
    remind_after: tuple[float, ...] = ()
    escalate_after: float | None = None
    escalate_to: tuple[str, ...] = ()

    @classmethod
    def checked(cls, given: Mapping[str, object], fields: type = AskFields, call: str = "ask") -> AskOptions:
        """The options ``given`` (keyword arguments of ``call``, which takes ``fields``), checked.

        Args:
            given: The keyword arguments, by name; a missing one takes its default.
            fields: The ``TypedDict`` of the options ``call`` takes.
            call: The call's name, for the ``TypeError`` an option it does not take raises.

        Returns:
            The checked options. ``watched`` is set whenever something waits on the close
            (a ``callback_url``, ``follow_up`` or ``post_to``).

        Raises:
            InputError: An option is not usable; the message names it.
            TypeError: ``given`` holds an option ``call`` does not take.
        """
        refuse_unknown(given, fields, call)
        # In the order the options are documented: with several bad, the first is named.
        run_id = check_optional_id(given.get("run_id"), "run_id")
        ttl = given.get("ttl")
        checked_ttl = None if ttl is None else check_duration(ttl, "ttl")
        replace = check_flag(given.get("replace", False), "replace")
        callback_url = _callback_url(given.get("callback_url"))
        phase = check_optional_id(given.get("phase"), "phase")
        watched = check_flag(given.get("watched", False), "watched")
        follow_up = _follow_up(given.get("follow_up", False))
        context = check_context(given.get("context"))
        owner = check_optional_id(given.get("owner"), "owner")
        default = given.get("default")
        responders = check_responders(given.get("responders"))
        quorum = check_quorum(given.get("quorum"), responders)
        key = check_optional_id(given.get("key"), "key")
        post_to = check_target(given.get("post_to"))
        remind_after, escalate_after, escalate_to = check_schedule(given)
        scheduled = bool(remind_after) or escalate_after is not None
        return cls(
            run_id=run_id,
            ttl=checked_ttl,
            replace=replace,
            default=None if default is None else check_string(default, "default"),
            callback_url=callback_url,
            phase=phase,
            context=context,
            watched=watched or bool(follow_up) or callback_url is not None or post_to is not None or scheduled,
            owner=owner,
            expect=as_expect(given.get("expect")),
            follow_up=follow_up,
            responders=responders,
            quorum=quorum,
            key=key,
            post_to=post_to,
            remind_after=remind_after,
            escalate_after=escalate_after,
            escalate_to=escalate_to,
        )

    def with_schedule(self, given: ScheduleFields) -> AskOptions:
        """These options with the schedule ``given`` (a workflow phase's), checked, when it
        holds one; an ask with a schedule is watched (its due reads fire it)."""
        remind_after, escalate_after, escalate_to = check_schedule(given)
        if not remind_after and escalate_after is None:
            return self
        return dataclasses.replace(
            self, remind_after=remind_after, escalate_after=escalate_after, escalate_to=escalate_to, watched=True
        )

    def kept(self) -> dict[str, Any]:
        """The options an ask keeps as its own fields: those :class:`~parkgate.Ask` declares
        too, but ``run_id`` (the run it is parked in gives it)."""
        return {name: getattr(self, name) for name in _KEPT}

    def check_schedule(self, ttl: timedelta) -> None:
        """Check that each reminder and the escalation fall due before ``ttl``, the ask's TTL.

        Raises:
            InputError: One does not; the message names it.
        """
        for offset in self.remind_after:
            check_before_ttl(offset, ttl, "remind_after")
        if self.escalate_after is not None:
            check_before_ttl(self.escalate_after, ttl, "escalate_after")

    def fitted(self, spec: AskSpec) -> AskOptions:
        """These options for the question ``spec``: a choice's ``default`` as its option's
        label, ``expect`` only for a text ask, with a ``default`` of its form, a ``quorum``
        above 1 only for a choice ask, and the responders and quorum a stopping point
        names when these options name none.

        Raises:
            InputError: ``default`` is not one of the options or not of the form, a
                choice ask has an ``expect``, a text ask a quorum above 1, or the
                stopping point names a responder that is not a usable sender.
        """
        who = self
        if not self.responders and spec.responders:  # the caller's responders, when given, decide
            responders = check_responders(list(spec.responders))
            who = dataclasses.replace(self, responders=responders, quorum=check_quorum(spec.quorum, responders))
        if spec.kind is AskKind.TEXT and who.quorum > 1:
            raise InputError(f"quorum of {who.quorum} is for choice asks: a text ask takes quorum 1")
        default = check_default(spec, who.default)
        return dataclasses.replace(who, default=default, expect=check_expect(spec, who.expect, default))


#: The options an ask keeps (:meth:`AskOptions.kept`).
_KEPT = tuple(
    item.name
    for item in dataclasses.fields(AskOptions)
    if item.name in {field.name for field in dataclasses.fields(Ask)} - {"run_id"}
)


def _callback_url(value: object) -> str | None:
    """A callback URL that parses (:func:`~parkgate.core.fence.parse_callback_url`); the fence's
    address rules are applied where it is delivered, and by the HTTP service on park."""
    if value is None:
        return None
    url = check_string(value, "callback_url", limit=MAX_CALLBACK_URL_CHARS)
    parse_callback_url(url)
    return url


def _follow_up(value: object) -> bool | str:
    """``follow_up``: a flag, or the name (an id) of the watcher that follows the ask up."""
    return check_id(value, "follow_up") if isinstance(value, str) else check_flag(value, "follow_up")
