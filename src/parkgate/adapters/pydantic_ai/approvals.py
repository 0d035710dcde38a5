"""The Pydantic AI side of :class:`~parkgate.adapters.approvals.ToolApprovals`."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta
from typing import Any

from pydantic_ai import Agent, AgentRunResult, DeferredToolRequests, DeferredToolResults, ToolDenied
from pydantic_ai.messages import ModelMessage, ModelMessagesTypeAdapter, ModelResponse, ToolCallPart

from parkgate.adapters.approvals import DEFAULT_LEASE, AgentStep, Kept, ResultHook, ToolApprovals, ToolCall
from parkgate.client import AsyncClient, Client
from parkgate.errors import InputError
from parkgate.gateway import Gateway
from parkgate.gateway.async_gateway import AsyncGateway

#: The SDK's name in each approval's ``context``.
SDK = "pydantic-ai"


def tool_call(part: ToolCallPart) -> ToolCall:
    """A deferred call as the call to approve (its arguments as JSON text)."""
    return ToolCall(part.tool_call_id, part.tool_name, part.args_as_json_str())


class HistoryDriver:
    """Runs an agent with ``agent.run`` and keeps its message history as JSON
    (``ModelMessagesTypeAdapter``).

    Args:
        agent: The agent to run; its ``output_type`` includes ``DeferredToolRequests``.
        deps: Passed to every ``agent.run``.
    """

    sdk = SDK

    def __init__(self, agent: Agent[Any, Any], deps: Any = None) -> None:
        self.agent = agent
        self.deps = deps
        self.name = agent.name or "agent"

    async def start(self, agent_input: Any) -> AgentStep:
        """Run the agent on ``agent_input``."""
        return self._step(await self.agent.run(agent_input, deps=self.deps))

    async def pending(self, kept: Kept) -> tuple[ToolCall, ...]:
        """The kept calls, with their arguments as the kept history has them."""
        parts = {
            part.tool_call_id: part
            for message in _history(kept)
            if isinstance(message, ModelResponse)
            for part in message.parts
            if isinstance(part, ToolCallPart)
        }
        return tuple(tool_call(parts[call_id]) for call_id in kept.call_ids if call_id in parts)

    async def resume(self, kept: Kept) -> AgentStep:
        """Run the kept history on with ``DeferredToolResults`` of the decisions."""
        approvals: dict[str, bool | ToolDenied] = {
            call_id: True if decision.approved else ToolDenied(decision.message or "")
            for call_id, decision in kept.decisions.items()
            if call_id in kept.call_ids
        }
        results = DeferredToolResults(approvals=dict(approvals))
        return self._step(
            await self.agent.run(message_history=_history(kept), deferred_tool_results=results, deps=self.deps)
        )

    @staticmethod
    def _step(result: AgentRunResult[Any]) -> AgentStep:
        output = result.output
        if not isinstance(output, DeferredToolRequests):
            return AgentStep(result, final_output=output)
        if output.calls:
            raise InputError(
                f"the run stopped on {len(output.calls)} external tool call(s): "
                "DeferredApprovals resumes approvals only"
            )
        calls = tuple(tool_call(part) for part in output.approvals)
        return AgentStep(result, calls, ModelMessagesTypeAdapter.dump_json(result.all_messages()).decode())


def _history(kept: Kept) -> list[ModelMessage]:
    return ModelMessagesTypeAdapter.validate_json(kept.state)


class DeferredApprovals(ToolApprovals):
    """Runs a Pydantic AI agent for a conversation, its deferred tool approvals parked in a gateway.

    Each call of a run's ``DeferredToolRequests.approvals`` is asked (Approve / Reject,
    the tool and its arguments shown), one at a time; the message history is kept with the
    run in the gateway's store (on the server over HTTP), so any process resumes it. A decision holds
    for the arguments shown: a call whose arguments changed is asked again. See
    docs/adapters/pydantic-ai.md.

    Args:
        gateway: A :class:`Gateway` or an :class:`AsyncGateway`; or, over HTTP, a
            :class:`~parkgate.client.Client` or an :class:`~parkgate.client.AsyncClient`.
        agent: The agent to run; its ``output_type`` includes ``DeferredToolRequests``.
        deps: Passed to every ``agent.run``.
        ttl: Every approval's TTL; the gateway's by default.
        responders: Who may answer (senders); anyone when left out.
        quorum: How many responders must pick the same option (1 by default).
        lease: How long a resume may take before another waiter may take it over.
        ask_reason: After a Reject, ask why (``-``, or no answer before the TTL, gives no
            reason); the model reads "Rejected: <reason>". ``False`` resumes at once.
        on_result: Called with a :class:`~parkgate.adapters.approvals.Finished` (the run
            id and its final output, also recorded as the run's ``output``) whenever a
            resumed run finishes, in whichever call or process resumed it.

    Raises:
        InputError: ``gateway`` is none of those, or ``ttl`` is bad.
    """

    def __init__(
        self,
        gateway: Gateway | AsyncGateway | Client | AsyncClient,
        agent: Agent[Any, Any],
        deps: Any = None,
        *,
        ttl: timedelta | float | None = None,
        responders: Sequence[str] | None = None,
        quorum: int = 1,
        lease: timedelta = DEFAULT_LEASE,
        ask_reason: bool = True,
        on_result: ResultHook | None = None,
    ) -> None:
        driver = HistoryDriver(agent, deps)
        super().__init__(
            gateway,
            driver,
            ttl=ttl,
            responders=responders,
            quorum=quorum,
            lease=lease,
            ask_reason=ask_reason,
            on_result=on_result,
        )
        self.agent = agent
