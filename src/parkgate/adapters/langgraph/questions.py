"""An ordinary ``interrupt()`` payload read as one question, and what resumes it.

Pure: no gateway, no graph. :class:`Closed` is what a node gets when the person's side
closed without an answer; :class:`Answer` is a question's answer kept until the thread
is resumed.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from parkgate.adapters.common import option_position
from parkgate.core import stopping_point
from parkgate.core.kinds import AskKind, AskStatus
from parkgate.core.model import Ask
from parkgate.core.schedule import SCHEDULE_KEYS, ScheduleFields
from parkgate.core.stopping_point import AskSpec, StoppingPointError
from parkgate.errors import InputError
from parkgate.gateway.checks import MAX_CONTEXT_BYTES, check_default, check_duration, check_quorum, check_responders

#: The context key that holds the adapter's own record of an ask (thread, interrupt, answers).
CONTEXT_KEY = "langgraph"
#: Payload keys that hold the question's text, and its options, in the order they are read.
PROMPT_KEYS = ("prompt", "question")
OPTION_KEYS = ("options", "choices")
#: Read when neither prompt key is there (agent-inbox style requests carry one).
DESCRIPTION_KEY = "description"
#: Room left in an ask's context for the adapter's record beside the payload's own keys.
PAYLOAD_CONTEXT_BYTES = MAX_CONTEXT_BYTES - 4096
#: :attr:`Closed.outcome` when a pending interrupt's value cannot be parked as a question.
UNASKABLE = "unaskable"
#: The module a checkpoint names :class:`Closed` by (its public home, whatever file defines it).
PUBLIC_MODULE = "parkgate.adapters.langgraph"
#: The ``(module, name)`` entries a LangGraph checkpoint serializer's msgpack allowlist needs
#: for the values the bridge resumes threads with.
CHECKPOINT_TYPES: frozenset[tuple[str, str]] = frozenset({(PUBLIC_MODULE, "Closed")})

ANSWER = "answer"
QuestionKey = tuple[str, int, str]


@dataclass(frozen=True, slots=True)
class Closed:
    """What ``interrupt()`` returns when the person's side closed without an answer.

    ``outcome`` is ``"cancelled"`` (a cancel word, an operator's cancel, a replacement),
    ``"expired"`` (nobody answered within the TTL, and the ask had no default), or
    ``"unaskable"`` (:data:`UNASKABLE`: the payload could not be parked as a question;
    ``ask_id`` is then ``None`` and ``reason`` says why). ``answer`` is what the ask
    recorded (``None``). A node that gets one does nothing the answer would have allowed::

        choice = interrupt({"prompt": "Deploy?", "options": ["Deploy", "Hold"]})
        if isinstance(choice, Closed):
            return {"status": choice.outcome}   # nothing ran
    """

    outcome: str
    ask_id: str | None
    answer: str | None = None
    #: Why the interrupt could not be asked (``"unaskable"`` only).
    reason: str | None = None


Closed.__module__ = PUBLIC_MODULE  # the name checkpoints store: stable across the package's files


@dataclass(frozen=True, slots=True)
class Payload:
    """An ordinary ``interrupt()`` payload read as an ask."""

    spec: AskSpec
    ttl_seconds: float | None = None
    default: str | None = None
    #: The payload's other keys, kept with the ask as its context (JSON values).
    context: dict[str, Any] | None = None
    #: Who may answer (empty: anyone), and how many of them must agree.
    responders: tuple[str, ...] = ()
    quorum: int = 1
    #: The reminders and escalation as given (checked on park).
    schedule: ScheduleFields | None = None


@dataclass(frozen=True, slots=True)
class Question:
    """One question of a pending interrupt: what to park, and where its answer goes."""

    interrupt_id: str
    #: Which tool call of a middleware request (0 for an ordinary payload).
    item: int
    #: ``answer`` (an ordinary payload), ``decision`` or ``respond`` (a middleware request).
    part: str
    payload: Payload

    @property
    def key(self) -> QuestionKey:
        return (self.interrupt_id, self.item, self.part)


@dataclass(frozen=True, slots=True)
class Answer:
    """A question's answer, as the adapter keeps it until the interrupt is resumed."""

    interrupt_id: str
    item: int
    part: str
    ask_id: str
    kind: AskKind
    answer: str
    option_index: int | None
    #: The sender whose message gave the answer (``None``: no sender, or a default).
    by: str | None = None

    @property
    def key(self) -> QuestionKey:
        return (self.interrupt_id, self.item, self.part)

    def to_json(self) -> dict[str, Any]:
        return {
            "interrupt_id": self.interrupt_id,
            "item": self.item,
            "part": self.part,
            "ask_id": self.ask_id,
            "kind": self.kind.value,
            "answer": self.answer,
            "option_index": self.option_index,
            "by": self.by,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Answer:
        return cls(
            str(data["interrupt_id"]),
            int(data["item"]),
            str(data["part"]),
            str(data["ask_id"]),
            AskKind(data["kind"]),
            str(data["answer"]),
            None if data.get("option_index") is None else int(data["option_index"]),
            None if data.get("by") is None else str(data["by"]),
        )


def answer_of(ask: Ask, question_key: QuestionKey) -> Answer | None:
    """The answer a closed ask gives: a selection or text, or the default it expired with.

    ``None`` when it closed without one (cancelled, or expired with no default).
    """
    if ask.answer is None or ask.status not in (AskStatus.ANSWERED, AskStatus.EXPIRED):
        return None
    index = ask.option_index
    if index is None and ask.kind is AskKind.CHOICE:
        index = option_position(ask.options, ask.answer)  # a default stands in for a selection
    interrupt_id, item, part = question_key
    return Answer(interrupt_id, item, part, ask.id, ask.kind, ask.answer, index, ask.answered_by)


def parse_payload(value: object) -> Payload:
    """The ask an ``interrupt(value)`` payload describes.

    - a mapping: the text under ``prompt`` or ``question`` (else ``description``), the
      options under ``options`` or ``choices`` (a choice when given, so an empty list is
      refused), ``kind`` (``"choice"`` / ``"text"``), ``ttl_seconds`` (this ask's TTL),
      ``default`` (the answer it takes if it expires), ``responders`` (who may answer)
      and ``quorum`` (how many of them must agree), and ``remind_after``,
      ``escalate_after``, ``escalate_to`` (its reminders and escalation); every other key
      is kept with the ask as context;
    - a string with a ``[[ask]] ... [[/ask]]`` marker: that stopping point;
    - any other string: a free-text question;
    - an :class:`~parkgate.AskSpec`.

    Raises :class:`~parkgate.StoppingPointError` naming what cannot be parked as written.
    """
    if isinstance(value, AskSpec):
        return Payload(stopping_point.make_spec(value.kind, value.prompt, value.options))
    if isinstance(value, Mapping):
        return _from_mapping(value)
    if isinstance(value, str):
        marked = stopping_point.find(value)
        return Payload(marked if marked is not None else stopping_point.make_spec(AskKind.TEXT, value))
    raise StoppingPointError(
        f"an interrupt payload must be a mapping with a prompt, or a string, not {type(value).__name__}"
    )


def _from_mapping(data: Mapping[Any, Any]) -> Payload:
    extras = {str(key): item for key, item in data.items()}
    prompt = _one_of(extras, PROMPT_KEYS)
    if prompt is None:
        prompt = extras.pop(DESCRIPTION_KEY, None)
    options = _one_of(extras, OPTION_KEYS)
    kind = extras.pop("kind", None)
    ttl = _ttl(extras.pop("ttl_seconds", None))
    default = extras.pop("default", None)
    responders, quorum = extras.pop("responders", None), extras.pop("quorum", None)
    # The payload keys of an ask's reminders and escalation, as Gateway.ask names them.
    schedule = ScheduleFields(**{key: extras.pop(key) for key in SCHEDULE_KEYS if key in extras})  # type: ignore[typeddict-item]
    if prompt is None:
        raise StoppingPointError(f"an interrupt payload needs its text under {' or '.join(PROMPT_KEYS)}")
    if options is not None and kind is None:
        kind = AskKind.CHOICE.value  # an option list, even an empty one, means a choice (as in Gateway.ask)
    spec = stopping_point.from_json({"prompt": prompt, "options": options, "kind": kind})
    if CONTEXT_KEY in extras:
        raise StoppingPointError(f"the payload key {CONTEXT_KEY!r} is the adapter's own; name it otherwise")
    try:
        default = check_default(spec, default)
        who = check_responders(responders)
        agree = check_quorum(quorum, who)
    except InputError as error:
        raise StoppingPointError(f"an interrupt payload's {error}") from None
    if agree > 1 and spec.kind is AskKind.TEXT:
        raise StoppingPointError(f"an interrupt payload's quorum of {agree} is for a choice, not a text question")
    return Payload(spec, ttl, default, payload_context(extras), who, agree, schedule or None)


def _one_of(data: dict[str, Any], keys: Sequence[str]) -> Any:
    given = [key for key in keys if key in data]
    if len(given) > 1:
        raise StoppingPointError(f"an interrupt payload has both {given[0]!r} and {given[1]!r}: give one")
    return data.pop(given[0]) if given else None


def _ttl(value: object) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        raise StoppingPointError(f"ttl_seconds must be a positive number of seconds, not {value!r}")
    try:
        check_duration(value, "ttl_seconds")  # one an ask takes: not too long, not below a microsecond
    except InputError as error:
        raise StoppingPointError(f"an interrupt payload's {error}") from None
    return float(value)


def payload_context(extras: Mapping[str, Any]) -> dict[str, Any] | None:
    """``extras`` as JSON values (anything else as its text), or a note saying they were
    left out when they do not fit in an ask's context."""
    if not extras:
        return None
    encoded = json.dumps(dict(extras), ensure_ascii=False, default=str, allow_nan=False, sort_keys=True)
    size = len(encoded.encode("utf-8", "surrogatepass"))
    if size > PAYLOAD_CONTEXT_BYTES:
        return {"omitted": f"{', '.join(sorted(extras))}: {size} bytes as JSON, over {PAYLOAD_CONTEXT_BYTES}"}
    value: dict[str, Any] = json.loads(encoded)
    return value
