"""What a LangGraph ``interrupt()`` asks, question by question, and what resumes it.

Pure: no gateway, no graph. The LangGraph adapter (:mod:`parkgate.adapters.langgraph`)
asks a thread's pending interrupts one question at a time and resumes the thread once
every question is decided. This module says which questions an interrupt's value holds,
which one comes next given the answers so far, and what each interrupt is resumed with:

- an ordinary payload (:func:`parse_payload`) is one question, resumed with its answer;
- a LangChain ``HumanInTheLoopMiddleware`` request (``action_requests`` and
  ``review_configs``) is one choice per tool call (Approve, Reject, and Respond when the
  tool allows it; Respond then asks for the text), resumed once with the middleware's
  ``{"decisions": [...]}``;
- when the person's side closes without a decision (a cancel, an expiry without a
  default), or a pending interrupt cannot be asked at all (:func:`check_askable`), an
  ordinary payload is resumed with a :class:`Closed` and a middleware request with a
  ``reject`` decision per tool call whose message says why.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from parkgate.checks import MAX_CONTEXT_BYTES, check_default, check_duration
from parkgate.core import phrases as P
from parkgate.core import stopping_point
from parkgate.core.errors import InputError
from parkgate.core.model import Ask
from parkgate.core.phrases import AskKind, AskStatus
from parkgate.core.stopping_point import AskSpec, StoppingPointError

#: The context key that holds the adapter's own record of an ask (thread, interrupt, answers).
CONTEXT_KEY = "langgraph"
#: Payload keys that hold the question's text, and its options, in the order they are read.
PROMPT_KEYS = ("prompt", "question")
OPTION_KEYS = ("options", "choices")
#: Read when neither prompt key is there (agent-inbox style requests carry one).
DESCRIPTION_KEY = "description"
#: Room left in an ask's context for the adapter's record beside the payload's own keys.
PAYLOAD_CONTEXT_BYTES = MAX_CONTEXT_BYTES - 4096
#: Tool arguments longer than this (as JSON) are cut in the prompt (the context keeps them).
ARGUMENTS_SHOWN_CHARS = 1500

#: :attr:`Closed.outcome` when a pending interrupt's value cannot be parked as a question.
UNASKABLE = "unaskable"

ANSWER = "answer"
DECISION = "decision"
RESPOND = "respond"


@dataclass(frozen=True, slots=True)
class Closed:
    """What ``interrupt()`` returns when the person's side closed without an answer.

    ``outcome`` is one of:

    - ``"cancelled"``: a cancel word, an operator's cancel, a replacement;
    - ``"expired"``: nobody answered within the TTL, and the ask had no default;
    - ``"unaskable"`` (:data:`UNASKABLE`): the thread's pending interrupt could not be
      parked as a question (no text, an empty option list, a default that is not an
      option, a bad ``ttl_seconds``, a value of another type); nobody was asked, so
      ``ask_id`` is ``None``, and ``reason`` says what is wrong with the payload (the
      bridge call that found it raises that error too).

    ``ask_id`` is the parkgate ask that closed; ``answer`` what it recorded (``None``).
    A node that gets one should do nothing the answer would have allowed::

        choice = interrupt({"prompt": "Deploy?", "options": ["Deploy", "Hold"]})
        if isinstance(choice, Closed):
            return {"status": choice.outcome}   # nothing ran
    """

    outcome: str
    ask_id: str | None
    answer: str | None = None
    #: Why the interrupt could not be asked (``"unaskable"`` only).
    reason: str | None = None


@dataclass(frozen=True, slots=True)
class Payload:
    """An ordinary ``interrupt()`` payload read as an ask."""

    spec: AskSpec
    ttl_seconds: float | None = None
    default: str | None = None
    #: The payload's other keys, kept with the ask as its context (JSON values).
    context: dict[str, Any] | None = None


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
    def key(self) -> tuple[str, int, str]:
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

    @property
    def key(self) -> tuple[str, int, str]:
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
        )


def answer_of(ask: Ask, question_key: tuple[str, int, str]) -> Answer | None:
    """The answer a closed ask gives: a selection or text, or the default it expired with.

    ``None`` when it closed without one (cancelled, or expired with no default).
    """
    if ask.answer is None or ask.status not in (AskStatus.ANSWERED, AskStatus.EXPIRED):
        return None
    index = ask.option_index
    if index is None and ask.kind is AskKind.CHOICE and ask.answer in ask.options:
        index = ask.options.index(ask.answer) + 1  # a default stands in for a selection
    interrupt_id, item, part = question_key
    return Answer(interrupt_id, item, part, ask.id, ask.kind, ask.answer, index)


# -- ordinary payloads --------------------------------------------------------------------


def parse_payload(value: object) -> Payload:
    """The ask an ``interrupt(value)`` payload describes.

    - a mapping: the text under ``prompt`` or ``question`` (else ``description``), the
      options under ``options`` or ``choices`` (a choice when given, so an empty list is
      refused), ``kind`` (``"choice"`` / ``"text"``), ``ttl_seconds`` (this ask's TTL)
      and ``default`` (the answer it takes if it expires); every other key is kept with
      the ask as context;
    - a string with a ``[[ask]] ... [[/ask]]`` marker: that stopping point;
    - any other string: a free-text question;
    - an :class:`~parkgate.AskSpec`.

    Raises :class:`~parkgate.StoppingPointError` naming what cannot be parked as written
    (no text, a bad or empty option list, a default that is not an option, a
    ``ttl_seconds`` that is not a positive number of seconds an ask can take, ...).
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
    if prompt is None:
        raise StoppingPointError(f"an interrupt payload needs its text under {' or '.join(PROMPT_KEYS)}")
    if options is not None and kind is None:
        kind = AskKind.CHOICE.value  # an option list, even an empty one, means a choice (as in Gateway.ask)
    spec = stopping_point.from_json({"prompt": prompt, "options": options, "kind": kind})
    if CONTEXT_KEY in extras:
        raise StoppingPointError(f"the payload key {CONTEXT_KEY!r} is the adapter's own; name it otherwise")
    try:
        default = check_default(spec, default)
    except InputError as error:
        raise StoppingPointError(f"an interrupt payload's {error}") from None
    return Payload(spec, ttl, default, _context(extras))


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


def _context(extras: Mapping[str, Any]) -> dict[str, Any] | None:
    """The payload's other keys as JSON values (anything else as its text), or a note
    saying they were left out when they do not fit in an ask's context."""
    if not extras:
        return None
    encoded = json.dumps(dict(extras), ensure_ascii=False, default=str, allow_nan=False, sort_keys=True)
    size = len(encoded.encode("utf-8", "surrogatepass"))
    if size > PAYLOAD_CONTEXT_BYTES:
        return {"omitted": f"{', '.join(sorted(extras))}: {size} bytes as JSON, over {PAYLOAD_CONTEXT_BYTES}"}
    value: dict[str, Any] = json.loads(encoded)
    return value


# -- LangChain's HumanInTheLoopMiddleware ------------------------------------------------


def is_review_request(value: object) -> bool:
    """Whether ``value`` is a ``HumanInTheLoopMiddleware`` request (its ``HITLRequest``)."""
    return (
        isinstance(value, Mapping)
        and isinstance(value.get("action_requests"), list)
        and isinstance(value.get("review_configs"), list)
    )


def _actions(value: Mapping[str, Any]) -> list[tuple[Mapping[str, Any], list[str]]]:
    """Each tool call of a review request with the decisions allowed for it."""
    configs = value["review_configs"]
    by_name = {config.get("action_name"): config for config in configs if isinstance(config, Mapping)}
    found: list[tuple[Mapping[str, Any], list[str]]] = []
    for index, action in enumerate(value["action_requests"]):
        if not isinstance(action, Mapping) or not isinstance(action.get("name"), str):
            raise StoppingPointError(f"action request {index + 1} has no tool name")
        config = configs[index] if index < len(configs) and isinstance(configs[index], Mapping) else None
        if config is None or config.get("action_name") != action["name"]:
            config = by_name.get(action["name"])
        allowed = list(config.get("allowed_decisions") or []) if config is not None else []
        if "reject" not in allowed:
            raise StoppingPointError(
                f"tool {action['name']!r} does not allow 'reject': parkgate answers a cancel or an expiry "
                "with one, so allow it in interrupt_on"
            )
        found.append((action, allowed))
    if not found:
        raise StoppingPointError("a review request with no action requests")
    return found


def _review_question(interrupt_id: str, value: Mapping[str, Any], item: int, part: str) -> Question:
    actions = _actions(value)
    action, allowed = actions[item]
    tool = str(action["name"])
    args = action.get("args") or {}
    if part == RESPOND:
        spec = stopping_point.make_spec(AskKind.TEXT, P.HITL_RESPOND_PROMPT.format(tool=tool))
        return Question(interrupt_id, item, part, Payload(spec, context={"tool": tool, "args": args}))
    labels = [P.HITL_APPROVE] if "approve" in allowed else []
    labels.append(P.HITL_REJECT)
    if "respond" in allowed:
        labels.append(P.HITL_RESPOND)
    description = str(action.get("description") or "")
    arguments = json.dumps(args, ensure_ascii=False, default=str, sort_keys=True)
    if len(arguments) > ARGUMENTS_SHOWN_CHARS:
        arguments = arguments[:ARGUMENTS_SHOWN_CHARS] + "…"
    if str(args) not in description:  # the middleware's own description already shows them
        description = "\n".join(part for part in (description, P.HITL_ARGUMENTS.format(arguments=arguments)) if part)
    position = P.HITL_POSITION.format(number=item + 1, count=len(actions)) if len(actions) > 1 else ""
    prompt = P.HITL_PROMPT.format(tool=tool, position=position, description=description).strip()
    spec = stopping_point.make_spec(AskKind.CHOICE, prompt, labels)
    context = _context({"tool": tool, "args": args, "description": action.get("description")})
    return Question(interrupt_id, item, part, Payload(spec, context=context))


def _decision(answers: Mapping[tuple[str, int, str], Answer], interrupt_id: str, item: int) -> Any:
    chosen = answers[(interrupt_id, item, DECISION)].answer
    if chosen == P.HITL_APPROVE:
        return {"type": "approve"}
    if chosen == P.HITL_RESPOND:
        return {"type": "respond", "message": answers[(interrupt_id, item, RESPOND)].answer}
    return {"type": "reject"}


# -- the questions of a thread's pending interrupts, and what resumes them ---------------


def check_askable(interrupts: Sequence[tuple[str, Any]]) -> None:
    """Raise :class:`StoppingPointError` naming what is wrong with the first of
    ``interrupts`` (``(id, value)`` pairs) that cannot be asked, so that no question is
    put to the person while another interrupt resumed with them cannot be."""
    for _, value in interrupts:
        if is_review_request(value):
            _actions(value)
        else:
            parse_payload(value)


def next_question(interrupts: Sequence[tuple[str, Any]], answers: Sequence[Answer]) -> Question | None:
    """The first question of ``interrupts`` (``(id, value)`` pairs) not answered yet, or
    ``None`` when every one is. Raises :class:`StoppingPointError` for a value that
    cannot be asked."""
    done = {answer.key: answer for answer in answers}
    for interrupt_id, value in interrupts:
        if not is_review_request(value):
            if (interrupt_id, 0, ANSWER) not in done:
                return Question(interrupt_id, 0, ANSWER, parse_payload(value))
            continue
        for item in range(len(_actions(value))):
            decided = done.get((interrupt_id, item, DECISION))
            if decided is None:
                return _review_question(interrupt_id, value, item, DECISION)
            if decided.answer == P.HITL_RESPOND and (interrupt_id, item, RESPOND) not in done:
                return _review_question(interrupt_id, value, item, RESPOND)
    return None


def resume_values(
    interrupts: Sequence[tuple[str, Any]],
    answers: Sequence[Answer],
    value_of: Callable[[Answer], Any],
) -> dict[str, Any]:
    """What each interrupt is resumed with once every question is answered.

    ``value_of`` turns an ordinary payload's answer into the value ``interrupt()`` returns.
    """
    done = {answer.key: answer for answer in answers}
    values: dict[str, Any] = {}
    for interrupt_id, value in interrupts:
        if is_review_request(value):
            count = len(_actions(value))
            values[interrupt_id] = {"decisions": [_decision(done, interrupt_id, item) for item in range(count)]}
        else:
            values[interrupt_id] = value_of(done[(interrupt_id, 0, ANSWER)])
    return values


def closed_values(interrupts: Sequence[tuple[str, Any]], closed: Closed) -> dict[str, Any]:
    """What each interrupt is resumed with when the person's side closed without a decision:
    a :class:`Closed`, or for a middleware request a ``reject`` per tool call saying why
    (so the agent's model hears "not approved", never a success)."""
    if closed.outcome == UNASKABLE:
        reason = P.HITL_UNASKABLE.format(reason=closed.reason)
    elif closed.outcome == AskStatus.EXPIRED.value:
        reason = P.HITL_EXPIRED
    else:
        reason = P.HITL_CANCELLED
    values: dict[str, Any] = {}
    for interrupt_id, value in interrupts:
        if is_review_request(value):
            count = len(value["action_requests"])
            values[interrupt_id] = {"decisions": [{"type": "reject", "message": reason}] * count}
        else:
            values[interrupt_id] = closed
    return values


__all__ = [
    "CONTEXT_KEY",
    "UNASKABLE",
    "Answer",
    "Closed",
    "Payload",
    "Question",
    "answer_of",
    "check_askable",
    "closed_values",
    "is_review_request",
    "next_question",
    "parse_payload",
    "resume_values",
]
