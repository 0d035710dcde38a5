"""Adapters that put parkgate under other agent stacks.

Each adapter is its own module and imports its framework at the top, so only the
adapter you import pulls in its framework; ``import parkgate`` and
``import parkgate.adapters`` import neither.

- :mod:`parkgate.adapters.langgraph`: LangGraph ``interrupt()`` payloads parked through
  a :class:`~parkgate.Gateway` and resumed with ``Command(resume=...)`` only when the
  person's reply selects or answers (``pip install parkgate[adapters]``).
- :mod:`parkgate.adapters.mcp`: MCP elicitation. ``accept`` / ``decline`` / ``cancel``
  mapped onto parkgate's select-or-answer / cancelled / expired, in both directions,
  plus an example MCP server whose tool asks through parkgate.
"""

__all__: list[str] = []
