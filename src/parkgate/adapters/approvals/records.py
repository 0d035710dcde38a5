"""What an agent SDK's tool approval is to parkgate: the call shown, the decision taken,
the state kept with the run, and the question asked. Pure: no gateway, no SDK.

Shared by the OpenAI Agents and the Pydantic AI adapters, so both ask, decide and resume
by the same rules.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from parkgate.core import phrases as P
from parkgate.core import stopping_point
from parkgate.core.display import format_hours, json_line
from parkgate.core.kinds import AskKind, AskStatus
from parkgate.core.model import Ask
from parkgate.core.stopping_point import AskSpec

#: The key of an approval's record in its ask's ``context``.
CONTEXT_KEY = "agent_approval"
#: Tool arguments longer than this (as JSON) are cut where they are shown (prompt, context).
ARGUMENTS_SHOWN_CHARS = 1500
#: The options of every approval, in order.
OPTIONS = (P.HITL_APPROVE, P.HITL_REJECT)
#: What a record's ``asks`` says of the question asked after a Reject: why.
REASON = "reason"


@dataclass(frozen=True, slots=True)
class ToolCall:
    """A tool call waiting for approval: its id, its tool, and its arguments as JSON text."""

    call_id: str
    tool: str
    arguments: str


@dataclass(frozen=True, slots=True)
class Decision:
    """What was decided for a tool call: ``approved``, else the ``message`` the model gets;
    ``arguments`` are those shown when it was decided; ``by`` the sender who answered."""

    approved: bool
    arguments: str
    message: str | None = None
    by: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"approved": self.approved, "arguments": self.arguments, "message": self.message, "by": self.by}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Decision:
        return cls(bool(data["approved"]), str(data["arguments"]), data.get("message"), data.get("by"))


@dataclass(frozen=True, slots=True)
class Kept:
    """What is kept with a run while its agent waits: the SDK's serialised ``state``, the
    ids of the calls it waits on, and the decisions taken so far."""

    state: str
    call_ids: tuple[str, ...]
    decisions: Mapping[str, Decision] = field(default_factory=dict)

    def to_text(self) -> str:
        data = {
            "state": self.state,
            "call_ids": list(self.call_ids),
            "decisions": {call_id: decision.to_json() for call_id, decision in self.decisions.items()},
        }
        return json.dumps(data, ensure_ascii=False)

    @classmethod
    def from_text(cls, text: str) -> Kept:
        data = json.loads(text)
        decisions = {str(key): Decision.from_json(value) for key, value in data["decisions"].items()}
        return cls(str(data["state"]), tuple(str(item) for item in data["call_ids"]), decisions)

    def deciding(self, call_id: str, decision: Decision) -> Kept:
        """This record with ``decision`` taken for ``call_id``."""
        return Kept(self.state, self.call_ids, {**self.decisions, call_id: decision})


def digest(arguments: str) -> str:
    """What binds a decision to the arguments shown: their SHA-256."""
    return hashlib.sha256(arguments.encode("utf-8", "surrogatepass")).hexdigest()


def shown_arguments(arguments: str) -> str:
    """A call's arguments as shown: hidden characters escaped, cut at :data:`ARGUMENTS_SHOWN_CHARS`."""
    try:
        shown = json_line(json.loads(arguments))
    except ValueError:
        shown = json_line(arguments)
    return shown if len(shown) <= ARGUMENTS_SHOWN_CHARS else shown[:ARGUMENTS_SHOWN_CHARS] + "…"


def undecided(calls: Sequence[ToolCall], decisions: Mapping[str, Decision]) -> list[ToolCall]:
    """The calls with no decision on the arguments they have now: a call whose arguments
    changed since it was decided is asked again."""
    return [
        call for call in calls if call.call_id not in decisions or decisions[call.call_id].arguments != call.arguments
    ]


def question(call: ToolCall, position: int = 1, count: int = 1) -> AskSpec:
    """The Approve / Reject question for ``call`` (the ``position``-th of ``count`` of its turn)."""
    where = P.HITL_POSITION.format(number=position, count=count) if count > 1 else ""
    description = P.HITL_ARGUMENTS.format(arguments=shown_arguments(call.arguments))
    prompt = P.HITL_PROMPT.format(tool=json_line(call.tool)[1:-1], position=where, description=description)
    return stopping_point.make_spec(AskKind.CHOICE, prompt, OPTIONS)


def record(sdk: str, agent: str, call: ToolCall, **more: Any) -> dict[str, Any]:
    """The ask's ``context`` for ``call``: who asks (``sdk``, ``agent``) and what is shown
    (and ``more``: a reason question's ``asks`` and ``rejected_by``)."""
    return {
        CONTEXT_KEY: {
            "sdk": sdk,
            "agent": agent,
            "call_id": call.call_id,
            "tool": call.tool,
            "arguments": shown_arguments(call.arguments),
            "digest": digest(call.arguments),
            **more,
        }
    }


def reason_question(call: ToolCall) -> AskSpec:
    """The question asked after ``call`` was rejected: why (a text; ``-`` gives no reason)."""
    prompt = P.HITL_REASON_PROMPT.format(tool=json_line(call.tool)[1:-1], none=P.HITL_NO_REASON)
    return stopping_point.make_spec(AskKind.TEXT, prompt)


def reason_of(ask: Ask) -> str | None:
    """The reason a closed reason question gave: its answer, unless it gave none (``-``,
    the default an expiry records, or a close without an answer)."""
    if ask.status is not AskStatus.ANSWERED:
        return None
    reason = (ask.answer or "").strip()
    return reason if reason and reason != P.HITL_NO_REASON else None


def record_of(ask: Ask, sdk: str, agent: str) -> Mapping[str, Any] | None:
    """The approval record of ``ask`` when ``sdk``'s adapter for ``agent`` parked it."""
    data = (ask.context or {}).get(CONTEXT_KEY)
    if not isinstance(data, Mapping) or data.get("sdk") != sdk or data.get("agent") != agent:
        return None
    return data if isinstance(data.get("call_id"), str) else None


def decision_of(ask: Ask, arguments: str, reason: str | None = None) -> Decision:
    """What a closed ask decides for its call: Approve approves; Reject (with the person's
    ``reason``, when given), a cancel and an expiry reject, with the message the model gets."""
    if ask.status is AskStatus.ANSWERED:
        if ask.answer == P.HITL_APPROVE:
            return Decision(True, arguments, by=ask.answered_by)
        return rejection(arguments, reason, ask.answered_by)
    return Decision(False, arguments, closed_message(ask))


def rejection(arguments: str, reason: str | None, by: str | None) -> Decision:
    """A Reject by ``by``: the model reads the person's ``reason``, or that they gave none."""
    message = P.AGENT_REJECTED_BECAUSE.format(reason=reason) if reason else P.AGENT_REJECTED
    return Decision(False, arguments, message, by)


def closed_message(ask: Ask) -> str:
    """Why a call was not run when its ask closed without an answer."""
    if ask.status is AskStatus.EXPIRED:
        return P.AGENT_EXPIRED.format(duration=duration_text(ask.ttl_seconds))
    return P.AGENT_CANCELLED


def duration_text(seconds: float) -> str:
    """A TTL as a person writes it: ``6 h``, ``30 min``, ``45 s`` (hours from an hour up)."""
    if seconds >= 3600:
        return f"{format_hours(seconds)} h"
    value, unit = (seconds / 60, "min") if seconds >= 60 else (seconds, "s")
    return f"{value:.2f}".rstrip("0").rstrip(".") + f" {unit}"
