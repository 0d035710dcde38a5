"""Pydantic AI deferred tool approvals through parkgate (``pip install 'parkgate[pydantic-ai]'``).

A tool with ``requires_approval=True`` ends a run with ``DeferredToolRequests``;
:class:`DeferredApprovals` parks each call as an Approve / Reject ask bound to the exact
arguments shown, keeps the message history with the parkgate run in the store, and
resumes the agent with ``DeferredToolResults`` (``True``, or ``ToolDenied`` with the
reason) once every approval of the turn is decided, whichever process or due read closed
the last one. How it behaves, and why: docs/adapters/pydantic-ai.md.
"""

from parkgate.errors import MissingExtra

try:
    from parkgate.adapters.approvals import DEFAULT_LEASE, Finished, Turn
    from parkgate.adapters.pydantic_ai.approvals import SDK, DeferredApprovals, HistoryDriver
except ModuleNotFoundError as missing:  # the one line that says what to install
    raise MissingExtra(__name__, missing, "pydantic-ai") from None

__all__ = ["DEFAULT_LEASE", "SDK", "DeferredApprovals", "Finished", "HistoryDriver", "Turn"]
