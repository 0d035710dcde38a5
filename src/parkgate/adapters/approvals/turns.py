"""What an agent SDK adapter drives (:class:`AgentDriver`), what one run of the agent gave
(:class:`AgentStep`), what one call of the adapter did (:class:`Turn`), and what a result
hook hears of a resumed run that finished (:class:`Finished`)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol

from parkgate.adapters import common
from parkgate.adapters.approvals.records import Kept, ToolCall
from parkgate.core.model import Reply


@dataclass(frozen=True, slots=True)
class AgentStep:
    """One run of the agent: the SDK's ``result``; the tool ``calls`` it stopped on for
    approval and the serialised ``state`` that resumes it (none when it finished, with
    ``final_output``)."""

    result: Any
    calls: tuple[ToolCall, ...] = ()
    state: str = ""
    final_output: Any = None


class AgentDriver(Protocol):
    """An SDK's side of the adapter: start the agent, read the calls a kept state waits
    on, resume it with the decisions taken."""

    #: The SDK's name, recorded in each ask's ``context``.
    sdk: str
    #: The agent's name, recorded in each ask's ``context``: an adapter follows up only
    #: its own agent's asks.
    name: str

    async def start(self, agent_input: Any) -> AgentStep:
        """Run the agent on ``agent_input``."""
        ...

    async def pending(self, kept: Kept) -> tuple[ToolCall, ...]:
        """The calls ``kept.state`` waits on, with their arguments as the state has them."""
        ...

    async def resume(self, kept: Kept) -> AgentStep:
        """Resume ``kept.state`` with ``kept.decisions`` (one for every pending call)."""
        ...


@dataclass(frozen=True, slots=True)
class Finished:
    """An agent run that finished after it was resumed, whichever call or process resumed
    it: the parkgate run it was parked in (``run_id``, its ``output`` recorded there), its
    ``final_output`` and the SDK's ``result``."""

    conversation_id: str
    run_id: str
    final_output: Any
    result: Any


#: A result hook: called with each resumed run that finished (its return awaited when it is awaitable).
ResultHook = Callable[[Finished], Awaitable[object] | object]


@dataclass(frozen=True, slots=True)
class Turn:
    """What one call of the adapter did.

    ``reply`` is the gateway's reply to the person's message (for ``run``, the ``asked``
    reply of the first approval, or ``pass`` when the agent finished without one).
    ``result`` is the SDK's result when the agent ran in this call, ``final_output`` the
    run's final output when it finished in this call (``finished``), and ``asked`` the
    approval parked next.
    """

    reply: Reply
    result: Any = None
    final_output: Any = None
    asked: Reply | None = None
    finished: bool = False

    @property
    def text(self) -> str:
        """Everything to show the person, in order (empty for a plain ``pass``)."""
        return common.turn_text(self.reply, self.asked)

    @property
    def parked(self) -> bool:
        """True when the conversation has an open approval after this call."""
        return (self.asked or self.reply).parked
