"""Adapters that put parkgate under other agent stacks.

Each adapter is its own module and imports its framework at the top, so only the
adapter you import pulls in its framework; ``import parkgate`` and
``import parkgate.adapters`` import neither. Importing an adapter whose framework is
not installed raises :class:`~parkgate.errors.MissingExtra` (a ``ModuleNotFoundError``)
naming the extra to install: ``pip install 'parkgate[adapters]'``.

- :mod:`parkgate.adapters.langgraph`: LangGraph ``interrupt()`` payloads (LangChain's
  ``HumanInTheLoopMiddleware`` requests among them) parked through a
  :class:`~parkgate.Gateway`, and the thread resumed once whatever closes the ask: with
  the answer, or with a ``Closed`` on a cancel or an expiry, by the call that closed it or
  by the bridge's watcher (``pip install parkgate[adapters]``).
- :mod:`parkgate.adapters.mcp`: MCP elicitation. ``accept`` / ``decline`` / ``cancel``
  mapped onto parkgate's select-or-answer / cancelled / expired, in both directions,
  plus an example MCP server whose tool asks through parkgate.
"""

__all__: list[str] = []
