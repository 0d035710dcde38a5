"""What the OpenAI Agents and the Pydantic AI adapters share: a tool call waiting for
approval parked as an ask, the SDK's state kept with the run, the agent resumed once.

Imports no agent SDK: each adapter brings its own (:class:`AgentDriver`).
"""

from parkgate.adapters.approvals.bridge import DEFAULT_LEASE, ToolApprovals
from parkgate.adapters.approvals.records import CONTEXT_KEY, Decision, Kept, ToolCall
from parkgate.adapters.approvals.turns import AgentDriver, AgentStep, Finished, ResultHook, Turn

__all__ = [
    "CONTEXT_KEY",
    "DEFAULT_LEASE",
    "AgentDriver",
    "AgentStep",
    "Decision",
    "Finished",
    "Kept",
    "ResultHook",
    "ToolApprovals",
    "ToolCall",
    "Turn",
]
