"""Per-tool settings for the questions a ``HumanInTheLoopMiddleware`` review asks: a TTL,
who may answer and how many must agree, by tool name. Pure: no gateway, no graph."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import timedelta

from parkgate.adapters.langgraph.questions import Payload, Question
from parkgate.errors import InputError
from parkgate.gateway.checks import check_duration, check_quorum, check_responders

#: The parts of a review's questions: the decision (a choice), then a Respond's text or a Reject's reason.
DECISION = "decision"
RESPOND = "respond"
REASON = "reason"


@dataclass(frozen=True, slots=True)
class ToolReview:
    """How the review of one tool's calls is asked.

    Attributes:
        ttl: The TTL of each question about a call of the tool (the bridge's by default).
        responders: Who may decide (distinct senders); anyone by default.
        quorum: How many responders must pick the same decision (1 by default); the
            text that follows a Respond or a Reject takes one responder's answer.
    """

    ttl: timedelta | None = None
    responders: Sequence[str] | None = None
    quorum: int | None = None


class ToolReviews:
    """The :class:`ToolReview` of each tool, checked once, applied to each review question.

    Raises:
        InputError: A review's TTL, responders or quorum, naming the tool.
    """

    def __init__(self, by_tool: Mapping[str, ToolReview]) -> None:
        self.by_tool: dict[str, tuple[float | None, tuple[str, ...], int]] = {}
        for tool, settings in by_tool.items():
            if not isinstance(settings, ToolReview):
                raise InputError(f"the review of tool {tool!r} must be a ToolReview, not {type(settings).__name__}")
            try:
                ttl = None if settings.ttl is None else check_duration(settings.ttl, "ttl").total_seconds()
                who = check_responders(None if settings.responders is None else list(settings.responders))
                self.by_tool[tool] = (ttl, who, check_quorum(settings.quorum, who))
            except InputError as error:
                raise InputError(f"the review of tool {tool!r}: {error}") from None

    def apply(self, question: Question) -> Payload:
        """``question``'s payload with its tool's settings, when it is a review question of one."""
        payload = question.payload
        tool = (payload.context or {}).get("tool")
        if question.part not in (DECISION, RESPOND, REASON) or not isinstance(tool, str) or tool not in self.by_tool:
            return payload
        ttl, who, quorum = self.by_tool[tool]
        return dataclasses.replace(
            payload,
            ttl_seconds=payload.ttl_seconds if ttl is None else ttl,
            responders=who,
            quorum=quorum if question.part == DECISION else 1,
        )
