"""OpenAI Agents SDK tool approvals through parkgate (``pip install 'parkgate[openai-agents]'``).

A tool with ``needs_approval`` stops a run with ``result.interruptions``;
:class:`AgentApprovals` parks each as an Approve / Reject ask, keeps the run's
serialised ``RunState`` with the parkgate run in the store, and resumes the agent
(``Runner.run(agent, state)``) once every approval of the turn is decided, whichever
process or due read closed the last one. A cancel or an expiry rejects, with a message
the model sees. How it behaves, and why: docs/adapters/openai-agents.md.
"""

from parkgate.errors import MissingExtra

try:
    from parkgate.adapters.approvals import DEFAULT_LEASE, Finished, Turn
    from parkgate.adapters.openai_agents.approvals import SDK, AgentApprovals, RunStateDriver
except ModuleNotFoundError as missing:  # the one line that says what to install
    raise MissingExtra(__name__, missing, "openai-agents") from None

__all__ = ["DEFAULT_LEASE", "SDK", "AgentApprovals", "Finished", "RunStateDriver", "Turn"]
