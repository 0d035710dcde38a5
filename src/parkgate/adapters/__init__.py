"""Adapters that put parkgate under other agent stacks.

Each adapter imports its framework, so only the adapter you import pulls it in;
``import parkgate.adapters`` imports none. Importing one without its framework raises
:class:`~parkgate.errors.MissingExtra` naming the extra (``pip install 'parkgate[adapters]'``).

- :mod:`parkgate.adapters.langgraph`: LangGraph ``interrupt()`` payloads (LangChain's
  ``HumanInTheLoopMiddleware`` requests among them), parked and resumed.
- :mod:`parkgate.adapters.mcp`: MCP elicitation, both directions.
- :mod:`parkgate.adapters.openai_agents`: the OpenAI Agents SDK's tool approvals
  (``parkgate[openai-agents]``).
- :mod:`parkgate.adapters.pydantic_ai`: Pydantic AI's deferred tool approvals
  (``parkgate[pydantic-ai]``).
- :mod:`parkgate.adapters.approvals`: what those two share (imports neither SDK).
"""

__all__: list[str] = []
