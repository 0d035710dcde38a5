"""The OpenAI Agents SDK side of :class:`~parkgate.adapters.approvals.ToolApprovals`."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta
from typing import Any

from agents import Agent, RunConfig, Runner, RunResult, RunState, ToolApprovalItem

from parkgate.adapters.approvals import DEFAULT_LEASE, AgentStep, Kept, ResultHook, ToolApprovals, ToolCall
from parkgate.client import AsyncClient, Client
from parkgate.gateway import Gateway
from parkgate.gateway.async_gateway import AsyncGateway

#: The SDK's name in each approval's ``context``.
SDK = "openai-agents"


def tool_call(item: ToolApprovalItem) -> ToolCall:
    """An interruption as the call to approve (its arguments as JSON text)."""
    return ToolCall(str(item.call_id or ""), str(item.qualified_name or item.name or "tool"), item.arguments or "{}")


class RunStateDriver:
    """Runs an agent with ``Runner.run`` and keeps its ``RunState`` as ``to_string()`` text.

    Args:
        agent: The agent every run starts from (and every state is read back with).
        run_config: Passed to every ``Runner.run``.
    """

    sdk = SDK

    def __init__(self, agent: Agent[Any], run_config: RunConfig | None = None) -> None:
        self.agent = agent
        self.run_config = run_config
        self.name = agent.name

    async def start(self, agent_input: Any) -> AgentStep:
        """Run the agent on ``agent_input``."""
        return self._step(await Runner.run(self.agent, agent_input, run_config=self.run_config))

    async def pending(self, kept: Kept) -> tuple[ToolCall, ...]:
        """The interruptions of the kept state."""
        state = await RunState.from_string(self.agent, kept.state)
        return tuple(tool_call(item) for item in state.get_interruptions())

    async def resume(self, kept: Kept) -> AgentStep:
        """Approve or reject each interruption of the kept state, then run it on."""
        state = await RunState.from_string(self.agent, kept.state)
        for item in state.get_interruptions():
            decision = kept.decisions[str(item.call_id or "")]
            if decision.approved:
                state.approve(item)
            else:
                state.reject(item, rejection_message=decision.message)
        return self._step(await Runner.run(self.agent, state, run_config=self.run_config))

    @staticmethod
    def _step(result: RunResult) -> AgentStep:
        if not result.interruptions:
            return AgentStep(result, final_output=result.final_output)
        calls = tuple(tool_call(item) for item in result.interruptions)
        return AgentStep(result, calls, result.to_state().to_string())


class AgentApprovals(ToolApprovals):
    """Runs an OpenAI Agents SDK agent for a conversation, its tool approvals parked in a gateway.

    Each ``ToolApprovalItem`` of a run's ``interruptions`` is asked (Approve / Reject, the
    tool and its arguments shown), one at a time; the ``RunState`` is kept with the run in
    the gateway's store (on the server over HTTP), so any process resumes it. See
    docs/adapters/openai-agents.md.

    Args:
        gateway: A :class:`Gateway` or an :class:`AsyncGateway`; or, over HTTP, a
            :class:`~parkgate.client.Client` or an :class:`~parkgate.client.AsyncClient`.
        agent: The agent to run.
        run_config: Passed to every ``Runner.run``.
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
        agent: Agent[Any],
        run_config: RunConfig | None = None,
        *,
        ttl: timedelta | float | None = None,
        responders: Sequence[str] | None = None,
        quorum: int = 1,
        lease: timedelta = DEFAULT_LEASE,
        ask_reason: bool = True,
        on_result: ResultHook | None = None,
    ) -> None:
        driver = RunStateDriver(agent, run_config)
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
