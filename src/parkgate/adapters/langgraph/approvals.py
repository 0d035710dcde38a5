"""Who approved each reviewed tool call, written into the call's result.

The bridge resumes a ``HumanInTheLoopMiddleware`` review with the decisions and, in the
config of that run, who approved each call (by tool call id).
:class:`ApprovedBy`, an agent middleware, writes that sender into the ``ToolMessage``
the approved call returns (``response_metadata["approved_by"]``): the tool's result
keeps who let it run. (A reject names who rejected it in its own message.)
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, cast

from langchain.agents.middleware import AgentMiddleware
from langchain.agents.middleware.types import ToolCallRequest
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langgraph.config import get_config
from langgraph.types import Command

from parkgate.adapters.langgraph import review
from parkgate.adapters.langgraph.questions import Answer
from parkgate.adapters.langgraph.toolreview import DECISION
from parkgate.core import phrases as P

#: The ``configurable`` key of a resumed run that maps tool call ids to who approved them.
APPROVALS_KEY = "parkgate_approved_by"
#: The ``response_metadata`` key of an approved call's ``ToolMessage``.
APPROVED_BY = "approved_by"
Result = ToolMessage | Command[Any]


def approvals(
    pending: Sequence[tuple[str, Any]], answers: Sequence[Answer], messages: Sequence[BaseMessage]
) -> dict[str, str]:
    """Each approved tool call's id and who approved it (calls approved without a sender
    are left out): a per-call request names its call; a batched one's calls are the last
    AI message's, matched to its actions in order."""
    done = {answer.key: answer for answer in answers}
    last = next((message for message in reversed(messages) if isinstance(message, AIMessage)), None)
    calls = list(last.tool_calls) if last is not None else []
    found: dict[str, str] = {}
    for interrupt_id, value in pending:
        if not review.is_review_request(value):
            continue
        for item, (action, _) in enumerate(review.review_actions(value)):
            call = next((call for call in calls if call["name"] == action["name"]), None)
            if call is not None:
                calls.remove(call)
            decided = done.get((interrupt_id, item, DECISION))
            call_id = value.get("tool_call_id") or (call["id"] if call is not None else None)
            if decided is not None and decided.answer == P.HITL_APPROVE and decided.by and call_id:
                found[str(call_id)] = decided.by
    return found


def with_approvals(config: RunnableConfig, approved: Mapping[str, str]) -> RunnableConfig:
    """``config`` carrying ``approved`` for :class:`ApprovedBy` to read."""
    if not approved:
        return config
    configurable = {**(config.get("configurable") or {}), APPROVALS_KEY: dict(approved)}
    return cast(RunnableConfig, {**config, "configurable": configurable})


class ApprovedBy(AgentMiddleware[Any, Any]):
    """An agent middleware that writes who approved a reviewed tool call into its result.

    Add it beside ``HumanInTheLoopMiddleware``; the bridge's resume says who approved
    each call, and the ``ToolMessage`` of an approved call gets
    ``response_metadata["approved_by"]`` (the sender whose message approved it)::

        create_agent(model, tools, middleware=[HumanInTheLoopMiddleware(...), ApprovedBy()])
    """

    def wrap_tool_call(self, request: ToolCallRequest, handler: Callable[[ToolCallRequest], Result]) -> Result:
        """Run the tool; note who approved the call in its result."""
        return _noted(handler(request), request)

    async def awrap_tool_call(
        self, request: ToolCallRequest, handler: Callable[[ToolCallRequest], Awaitable[Result]]
    ) -> Result:
        """:meth:`wrap_tool_call` for asyncio runs."""
        return _noted(await handler(request), request)


def _noted(result: Result, request: ToolCallRequest) -> Result:
    try:
        config = get_config()
    except RuntimeError:  # not inside a run
        return result
    approved = (config.get("configurable") or {}).get(APPROVALS_KEY)
    by = approved.get(str(request.tool_call.get("id"))) if isinstance(approved, Mapping) else None
    if by is None or not isinstance(result, ToolMessage):
        return result
    return result.model_copy(update={"response_metadata": {**result.response_metadata, APPROVED_BY: by}})
