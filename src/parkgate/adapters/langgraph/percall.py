"""``HumanInTheLoopMiddleware`` per-call interrupts read as one-call review requests.

Pure: no gateway, no graph. In ``interrupt_mode="per_call"`` the middleware interrupts
once per gated tool call with a ``ToolApprovalRequest`` and lists the allowed decisions
only in the interrupt's ``response_schema``; LangGraph checks the resume value against
that schema, so the value is a single decision, not ``{"decisions": [...]}``. Reading such
an interrupt as a review request of one action lets :mod:`.review` ask and close it as a
batched one.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

#: Marks a review request read from a per-call interrupt (its resume value is one decision).
PER_CALL = "parkgate_per_call"


def is_tool_approval(value: object) -> bool:
    """Whether ``value`` is the middleware's per-call ``ToolApprovalRequest``."""
    return isinstance(value, Mapping) and value.get("type") == "tool_approval" and isinstance(value.get("name"), str)


def allowed_decisions(response_schema: object) -> list[str]:
    """The decision types a per-call interrupt's JSON ``response_schema`` accepts, in order."""
    return list(dict.fromkeys(_decision_types(response_schema)))


def _decision_types(schema: object) -> Iterator[str]:
    if isinstance(schema, Mapping):
        kind = (schema.get("properties") or {}).get("type") if isinstance(schema.get("properties"), Mapping) else None
        if isinstance(kind, Mapping) and isinstance(kind.get("const"), str):
            yield kind["const"]
            return
        for key in ("$defs", "oneOf", "anyOf"):
            part = schema.get(key)
            yield from _decision_types(list(part.values()) if isinstance(part, Mapping) else part)
    elif isinstance(schema, list):
        for item in schema:
            yield from _decision_types(item)


def as_review_request(value: Mapping[str, Any], response_schema: object) -> dict[str, Any]:
    """A per-call interrupt as a review request of its one tool call."""
    action = {"name": value["name"], "args": value.get("args") or {}, "description": value.get("description")}
    config = {"action_name": value["name"], "allowed_decisions": allowed_decisions(response_schema)}
    return {
        "action_requests": [action],
        "review_configs": [config],
        PER_CALL: True,
        "tool_call_id": value.get("tool_call_id"),
    }


def is_per_call(value: Mapping[str, Any]) -> bool:
    """Whether the review request ``value`` was read from a per-call interrupt."""
    return bool(value.get(PER_CALL))


def resume_value(value: Mapping[str, Any], decisions: list[dict[str, Any]]) -> Any:
    """What resumes the review request ``value``: the one decision of a per-call
    interrupt, or the batched ``{"decisions": [...]}``."""
    if is_per_call(value):
        return decisions[0]
    return {"decisions": decisions}
