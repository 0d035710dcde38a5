"""LangGraph adapter: ``interrupt()`` payloads parked and resumed through parkgate.

A node asks with LangGraph's own ``interrupt(payload)``; :class:`ParkgateInterrupts` parks
it as an ask, feeds the person's messages through the gateway, and resumes the thread
exactly once whatever closes the ask: with the answer, or with a :class:`Closed` on a
cancel or an expiry (LangChain's ``HumanInTheLoopMiddleware`` requests with a rejection).
How it behaves, and why: docs/adapters/langgraph.md.
"""

from parkgate.errors import MissingExtra

try:
    from parkgate.adapters.langgraph.approvals import ApprovedBy
    from parkgate.adapters.langgraph.bridge import DEFAULT_LEASE, ParkgateInterrupts
    from parkgate.adapters.langgraph.questions import CHECKPOINT_TYPES, UNASKABLE, Closed, parse_payload
    from parkgate.adapters.langgraph.threads import (
        INTERRUPT_KEY,
        MAX_CLOSED_RESUMES,
        Drive,
        Graph,
        GraphKeepsAsking,
        NotThisGraph,
        pending_interrupts,
        thread_id,
    )
    from parkgate.adapters.langgraph.toolreview import ToolReview
    from parkgate.core.stopping_point import AskSpec
except ModuleNotFoundError as missing:  # the one line that says what to install
    raise MissingExtra(__name__, missing) from None


def spec_from_payload(value: object) -> AskSpec:
    """The question an ``interrupt(value)`` payload asks (see :func:`parse_payload`)."""
    return parse_payload(value).spec


__all__ = [
    "CHECKPOINT_TYPES",
    "DEFAULT_LEASE",
    "INTERRUPT_KEY",
    "MAX_CLOSED_RESUMES",
    "UNASKABLE",
    "ApprovedBy",
    "Closed",
    "Drive",
    "Graph",
    "GraphKeepsAsking",
    "NotThisGraph",
    "ParkgateInterrupts",
    "ToolReview",
    "pending_interrupts",
    "spec_from_payload",
    "thread_id",
]
