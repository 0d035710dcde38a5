"""LangChain's ``HumanInTheLoopMiddleware`` requests asked as questions, and their decisions.

Pure: no gateway, no graph. A request (``action_requests`` and ``review_configs``) is one
choice per tool call among the allowed decisions a chat can give (Approve, Reject,
Respond; Respond then asks for the text, Reject for the reason the agent is told),
resumed once with ``{"decisions": [...]}``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

from parkgate.adapters.langgraph import percall
from parkgate.adapters.langgraph.questions import Answer, Payload, Question, QuestionKey, payload_context
from parkgate.adapters.langgraph.toolreview import DECISION, REASON, RESPOND
from parkgate.core import phrases as P
from parkgate.core import stopping_point
from parkgate.core.kinds import AskKind
from parkgate.core.stopping_point import StoppingPointError

#: Tool arguments longer than this (as JSON) are cut in the prompt (the context keeps them).
ARGUMENTS_SHOWN_CHARS = 1500
#: The decisions a person gives in a chat, each with the label of its option.
CHAT_DECISIONS: tuple[tuple[str, str], ...] = (
    ("approve", P.HITL_APPROVE),
    ("reject", P.HITL_REJECT),
    ("respond", P.HITL_RESPOND),
)
Action = tuple[Mapping[str, Any], list[str]]


def is_review_request(value: object) -> bool:
    """Whether ``value`` is a ``HumanInTheLoopMiddleware`` request (its ``HITLRequest``)."""
    return (
        isinstance(value, Mapping)
        and isinstance(value.get("action_requests"), list)
        and isinstance(value.get("review_configs"), list)
    )


def review_actions(value: Mapping[str, Any]) -> list[Action]:
    """Each tool call of a review request with the decisions allowed for it."""
    configs = value["review_configs"]
    by_name = {config.get("action_name"): config for config in configs if isinstance(config, Mapping)}
    found: list[Action] = []
    for index, action in enumerate(value["action_requests"]):
        if not isinstance(action, Mapping) or not isinstance(action.get("name"), str):
            raise StoppingPointError(f"action request {index + 1} has no tool name")
        config = configs[index] if index < len(configs) and isinstance(configs[index], Mapping) else None
        if config is None or config.get("action_name") != action["name"]:
            config = by_name.get(action["name"])
        allowed = [str(item) for item in (config.get("allowed_decisions") or [])] if config is not None else []
        if not any(decision in allowed for decision, _ in CHAT_DECISIONS):
            raise StoppingPointError(
                f"tool {action['name']!r} allows none of approve, reject or respond: a chat cannot decide it"
            )
        found.append((action, allowed))
    if not found:
        raise StoppingPointError("a review request with no action requests")
    return found


def review_question(interrupt_id: str, value: Mapping[str, Any], item: int, part: str) -> Question:
    """The question for tool call ``item``: its decision (a choice), or the text of a Respond."""
    actions = review_actions(value)
    action, allowed = actions[item]
    tool = str(action["name"])
    args = action.get("args") or {}
    if part in (RESPOND, REASON):
        prompt = P.HITL_RESPOND_PROMPT if part == RESPOND else P.HITL_REASON_PROMPT
        spec = stopping_point.make_spec(AskKind.TEXT, prompt.format(tool=tool, none=P.HITL_NO_REASON))
        default = P.HITL_NO_REASON if part == REASON else None  # a reason nobody gives is no reason
        return Question(interrupt_id, item, part, Payload(spec, default=default, context={"tool": tool, "args": args}))
    labels = [label for decision, label in CHAT_DECISIONS if decision in allowed]
    arguments = json.dumps(args, ensure_ascii=False, default=str, sort_keys=True)
    if len(arguments) > ARGUMENTS_SHOWN_CHARS:
        arguments = arguments[:ARGUMENTS_SHOWN_CHARS] + "…"
    description = "\n".join(part for part in (_described(action), P.HITL_ARGUMENTS.format(arguments=arguments)) if part)
    position = P.HITL_POSITION.format(number=item + 1, count=len(actions)) if len(actions) > 1 else ""
    prompt = P.HITL_PROMPT.format(tool=tool, position=position, description=description).strip()
    spec = stopping_point.make_spec(AskKind.CHOICE, prompt, labels)
    context = payload_context({"tool": tool, "args": args, "description": action.get("description")})
    return Question(interrupt_id, item, part, Payload(spec, context=context))


def _described(action: Mapping[str, Any]) -> str:
    """The tool call's description without the lines that repeat its tool and arguments
    in another format (the middleware's default shows them as Python, ``Args: {...}``,
    or as indented JSON): the prompt shows the arguments once, as JSON."""
    tool, args = str(action["name"]), action.get("args") or {}
    description = str(action.get("description") or "")
    for repeated in (f"Args: {args}", f"Arguments:\n{json.dumps(args, indent=2)}", f"Tool: {tool}"):
        description = description.replace(repeated, "")
    return "\n".join(line for line in description.strip().splitlines() if line.strip())


def next_review_question(
    interrupt_id: str, value: Mapping[str, Any], done: Mapping[QuestionKey, Answer]
) -> Question | None:
    """The first question of a review request not answered yet (``done``), or ``None``."""
    for item in range(len(review_actions(value))):
        decided = done.get((interrupt_id, item, DECISION))
        if decided is None:
            return review_question(interrupt_id, value, item, DECISION)
        follow = {P.HITL_RESPOND: RESPOND, P.HITL_REJECT: REASON}.get(decided.answer)
        if follow is not None and (interrupt_id, item, follow) not in done:
            return review_question(interrupt_id, value, item, follow)
    return None


def decisions(interrupt_id: str, value: Mapping[str, Any], done: Mapping[QuestionKey, Answer]) -> Any:
    """The middleware's resume value once every tool call of the request is decided."""
    found = [_decision(done, interrupt_id, item) for item in range(len(review_actions(value)))]
    return percall.resume_value(value, found)


def _decision(done: Mapping[QuestionKey, Answer], interrupt_id: str, item: int) -> dict[str, Any]:
    decided = done[(interrupt_id, item, DECISION)]
    if decided.answer == P.HITL_APPROVE:
        return {"type": "approve"}
    if decided.answer == P.HITL_RESPOND:
        return {"type": "respond", "message": done[(interrupt_id, item, RESPOND)].answer}
    given = done.get((interrupt_id, item, REASON))
    reason = given.answer.strip() if given is not None and given.answer.strip() != P.HITL_NO_REASON else ""
    by = P.HITL_REJECTED_BY.format(sender=decided.by) if decided.by else ""
    message = f"{reason} ({by})" if reason and by else reason or by
    return {"type": "reject", "message": message} if message else {"type": "reject"}


def rejects_all(value: Mapping[str, Any]) -> bool:
    """Whether every tool call of the request allows ``reject``: then a closed review is
    resumed with a reject per call; otherwise it is closed as the middleware's node
    (:func:`rejection_messages`), since its other decisions run the tool or read as success."""
    try:
        return all("reject" in allowed for _, allowed in review_actions(value))
    except StoppingPointError:
        return False


def rejected(value: Mapping[str, Any], reason: str) -> Any:
    """The resume value that rejects every tool call of the request, saying ``reason``."""
    return percall.resume_value(value, [{"type": "reject", "message": reason}] * len(value["action_requests"]))


def rejection_messages(value: Mapping[str, Any], messages: Sequence[BaseMessage], reason: str) -> list[ToolMessage]:
    """What a reject of every tool call writes (an error ``ToolMessage`` per call, saying
    ``reason``), for a request whose tools do not all allow ``reject``: the tool calls are
    the last AI message's, matched to the request's actions in order."""
    last = next((message for message in reversed(messages) if isinstance(message, AIMessage)), None)
    calls = list(last.tool_calls) if last is not None else []
    found: list[ToolMessage] = []
    for action in value["action_requests"]:
        name = action.get("name") if isinstance(action, Mapping) else None
        wanted = value.get("tool_call_id")
        call = next((call for call in calls if call["name"] == name and wanted in (None, call.get("id"))), None)
        if call is None or not call.get("id"):
            raise StoppingPointError(f"no tool call of {name!r} to close in the thread's last AI message")
        calls.remove(call)
        content = P.HITL_NOT_RUN.format(tool=name, reason=reason)
        found.append(ToolMessage(content=content, name=name, tool_call_id=call["id"], status="error"))
    return found
