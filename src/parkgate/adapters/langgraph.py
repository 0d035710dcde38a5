"""LangGraph adapter: ``interrupt()`` payloads parked and resumed through parkgate.

A graph node asks the person with LangGraph's own ``interrupt(payload)``; this module
parks that payload as a parkgate ask and feeds the person's messages through
:meth:`Gateway.handle <parkgate.Gateway.handle>`. The graph is resumed with
``Command(resume=...)`` **only** when a reply selects an option or answers a text
question. Every other reply leaves the graph exactly where it is::

    from langgraph.types import interrupt

    def pick(state):
        choice = interrupt({"prompt": "Which diagram?", "options": ["Sequence", "Class"]})
        return {"diagram": choice}

    bridge = ParkgateInterrupts(gateway)
    config = {"configurable": {"thread_id": "t-1"}}
    first = bridge.start(graph, {"topic": "login"}, config, "chat-1")
    show(first.text)                                # the numbered menu
    step = bridge.drive(graph, config, "chat-1", "2")
    show(step.text)                                 # "Selected 2. Class"; the graph ran on

Payloads (the value given to ``interrupt()``), see :func:`spec_from_payload`:

- a mapping ``{"prompt": str, "options": [str, ...], "kind": "choice" | "text"}``
  (the structured stopping-point form; unknown keys are an error);
- a string holding a ``[[ask]] ... [[/ask]]`` stopping-point marker;
- any other string: a free-text question;
- an :class:`~parkgate.AskSpec`.

What each reply kind does to the graph (:meth:`ParkgateInterrupts.drive`):

- ``selected`` / ``answered``: resumed with ``Command(resume={interrupt_id: value})``,
  where ``value`` is the option's label or the text as given (``resume_with`` changes
  it). The next interrupt, if any, is parked; a graph that runs to its end closes the
  run as ``done``.
- ``retry`` / ``escalated`` / ``reshown``: the graph is not touched; the bounce text
  goes back to the person.
- ``cancelled``: **not resumed**. "Dropped the menu, nothing ran." is a promise, and
  resuming would run the rest of the node. The gateway has already closed the ask and
  marked the run complete (outcome ``cancelled``). The thread's checkpoint still holds
  its pending interrupt (LangGraph has no way to withdraw one): start a new thread to
  ask again, or resume it yourself with a value of your choosing.
- ``pass``: the graph is not touched. Nothing is parked in the conversation (route the
  message onward), or the ask just expired (``expired_ask_id`` is set and the gateway
  closed the run as ``expired``).

The run id of every ask is the LangGraph ``thread_id``; the ask's ``phase`` is the
name of the node that interrupted. A selection is applied to the graph only if the
reply belongs to this thread's pending ask, so a redelivered message (same
``message_id``: the gateway returns its first reply again) never resumes the graph
twice. It returns what the first delivery left instead: the same reply, with the
thread's next question (``asked``, still parked) or ``finished`` when the run closed as
``done``; ``resumed`` is false and ``output`` is ``None``, since the graph did not run on
that call. Calls for one thread should come from one worker at a time.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.pregel import Pregel
from langgraph.types import Command, GraphOutput, Interrupt, StateSnapshot

from parkgate.core import stopping_point
from parkgate.core.model import Ask
from parkgate.core.phrases import PHRASES, AskKind, ReplyKind
from parkgate.core.stopping_point import AskSpec, StoppingPointError
from parkgate.errors import InputError, RunStillAsking
from parkgate.gateway import Gateway, asked_reply
from parkgate.reply import Reply

#: The key LangGraph puts interrupts under in a ``version="v1"`` ``invoke()`` result.
INTERRUPT_KEY = "__interrupt__"

Graph = Pregel[Any, Any, Any, Any]
"""Any compiled LangGraph graph (``StateGraph(...).compile(checkpointer=...)``)."""


def spec_from_payload(value: object) -> AskSpec:
    """The ask an ``interrupt(value)`` payload describes.

    Raises :class:`~parkgate.StoppingPointError` naming what is wrong when the payload
    cannot be parked as written (a malformed marker, an unknown key, no prompt, ...).
    """
    if isinstance(value, AskSpec):
        return stopping_point.make_spec(value.kind, value.prompt, value.options)
    if isinstance(value, Mapping):
        return stopping_point.from_json(value)
    if isinstance(value, str):
        marked = stopping_point.find(value)
        if marked is not None:
            return marked
        return stopping_point.make_spec(AskKind.TEXT, value)
    raise StoppingPointError(
        f"an interrupt payload must be a mapping with a prompt, or a string, not {type(value).__name__}"
    )


def pending_interrupts(source: object) -> tuple[Interrupt, ...]:
    """The interrupts waiting for an answer in ``source``.

    ``source`` is what a graph call gives back: an ``invoke()`` result (a mapping with
    ``__interrupt__``, or a ``version="v2"`` ``GraphOutput``), a ``StateSnapshot`` from
    ``get_state()``, one ``Interrupt`` or a sequence of them. Anything else has none.
    """
    if isinstance(source, Interrupt):
        return (source,)
    if isinstance(source, StateSnapshot):
        return tuple(source.interrupts)
    if isinstance(source, GraphOutput):
        return tuple(source.interrupts)
    if isinstance(source, Mapping):
        found = source.get(INTERRUPT_KEY, ())
        return tuple(item for item in found if isinstance(item, Interrupt))
    if isinstance(source, Sequence) and not isinstance(source, (str, bytes)):
        return tuple(item for item in source if isinstance(item, Interrupt))
    return ()


def thread_id(config: RunnableConfig) -> str:
    """The ``thread_id`` of a LangGraph config, as the run id parkgate files asks under."""
    configurable = config.get("configurable") or {}
    value = configurable.get("thread_id")
    if value is None:
        raise InputError('the LangGraph config has no configurable "thread_id"')
    return str(value)


def _node_of(snapshot: StateSnapshot, interrupt: Interrupt) -> str | None:
    for task in snapshot.tasks:
        if any(item.id == interrupt.id for item in task.interrupts):
            return task.name
    return None


def _same_question(ask: Ask, interrupt: Interrupt) -> bool:
    try:
        spec = spec_from_payload(interrupt.value)
    except StoppingPointError:
        return False
    return spec == AskSpec(ask.kind, ask.prompt, ask.options)


def _pass() -> Reply:
    return Reply(ReplyKind.PASS, PHRASES[ReplyKind.PASS], parked=False)


def _answer(reply: Reply) -> Any:
    return reply.answer


@dataclass(frozen=True, slots=True)
class Drive:
    """What one graph call through parkgate did.

    ``reply`` is the gateway's reply to the person's message (for :meth:`~ParkgateInterrupts.start`,
    the ``asked`` reply of the first interrupt, or ``pass`` when the graph did not ask).
    ``resumed`` says whether the graph ran; ``output`` is what that graph call returned.
    ``asked`` is the next interrupt parked after resuming, ``finished`` that the graph
    ran to its end and its run was closed.
    """

    reply: Reply
    resumed: bool = False
    output: Any = None
    asked: Reply | None = None
    finished: bool = False

    @property
    def text(self) -> str:
        """Everything to show the person, in order (empty for a plain ``pass``)."""
        parts = [self.reply.text]
        if self.asked is not None and self.asked is not self.reply:
            parts.append(self.asked.text)
        return "\n\n".join(part for part in parts if part)

    @property
    def parked(self) -> bool:
        """True when the conversation has an open ask after this call."""
        if self.asked is not None:
            return self.asked.parked
        return self.reply.parked


class ParkgateInterrupts:
    """Parks a LangGraph thread's ``interrupt()`` payloads in a gateway and resumes them.

    ``resume_with`` turns a ``selected``/``answered`` reply into the value the graph's
    ``interrupt()`` call returns (default: ``reply.answer``, the option's label or the
    text as given). ``ttl`` and ``replace`` are passed to :meth:`Gateway.ask`.
    """

    def __init__(
        self,
        gateway: Gateway,
        *,
        ttl: timedelta | None = None,
        replace: bool = False,
        resume_with: Callable[[Reply], Any] = _answer,
    ) -> None:
        self.gateway = gateway
        self.ttl = ttl
        self.replace = replace
        self.resume_with = resume_with

    # -- the two halves ----------------------------------------------------------
    def park(
        self,
        conversation_id: str,
        source: object,
        *,
        run_id: str | None = None,
        phase: str | None = None,
    ) -> Reply:
        """Park the first pending interrupt in ``source`` as an ask; the reply is ``asked``.

        ``source`` is anything :func:`pending_interrupts` reads. With no pending interrupt
        (the graph ran to its end) nothing is parked and the reply is ``pass``. Pass the
        graph's ``thread_id`` as ``run_id`` so that :meth:`drive` can tie the answer back
        to the thread. Interrupts beyond the first are parked one after another as
        earlier ones are answered (one open ask per conversation).
        """
        found = pending_interrupts(source)
        if not found:
            return _pass()
        first = found[0]
        spec = spec_from_payload(first.value)
        if phase is None and isinstance(source, StateSnapshot):
            phase = _node_of(source, first)
        return self.gateway.ask(
            conversation_id,
            spec.prompt,
            list(spec.options) or None,
            kind=spec.kind,
            run_id=run_id,
            ttl=self.ttl,
            replace=self.replace,
            phase=phase,
        )

    def resume_value(self, reply: Reply, interrupt_id: str | None = None) -> Command[Any] | None:
        """The ``Command`` that feeds ``reply`` to the graph, or ``None`` to leave it be.

        Only ``selected`` and ``answered`` resume. With ``interrupt_id`` the command
        answers exactly that interrupt (``resume={interrupt_id: value}``, which LangGraph
        requires when several are pending); without it, the next one.
        """
        if reply.kind not in (ReplyKind.SELECTED, ReplyKind.ANSWERED):
            return None
        value = self.resume_with(reply)
        if interrupt_id is None:
            return Command(resume=value)
        return Command(resume={interrupt_id: value})

    # -- whole steps (sync) --------------------------------------------------------
    def start(
        self,
        graph: Graph,
        graph_input: Any,
        config: RunnableConfig,
        conversation_id: str,
    ) -> Drive:
        """Run ``graph`` on ``graph_input`` and park the interrupt it stops at, if any.

        A graph that finishes without asking gives a ``pass`` reply and ``finished``.
        """
        output = graph.invoke(graph_input, config)
        return self._after_run(graph.get_state(config), config, conversation_id, _pass(), output, resumed=False)

    def drive(
        self,
        graph: Graph,
        config: RunnableConfig,
        conversation_id: str,
        text: str | bytes,
        *,
        message_id: str | None = None,
    ) -> Drive:
        """Handle one message from the person; resume the graph only if it selects/answers.

        The message goes through :meth:`Gateway.handle` first, so every parkgate rule
        applies (bounces, the escalated line, ``menu``, the cancel words, expiry). On a
        selection or answer that belongs to this thread's pending interrupt, the graph
        is resumed with it; its next interrupt is parked (``asked``), or, when it ran to
        its end, the run is closed as ``done`` (``finished``).
        """
        reply = self.gateway.handle(conversation_id, text, message_id)
        earlier = self._redelivered(reply, config, conversation_id)
        if earlier is not None:
            return earlier
        target = self._target(reply, config, graph.get_state(config))
        if target is None:
            return Drive(reply)
        command = self.resume_value(reply, target)
        output = graph.invoke(command, config)
        return self._after_run(graph.get_state(config), config, conversation_id, reply, output, resumed=True)

    # -- whole steps (asyncio) -----------------------------------------------------
    async def astart(
        self,
        graph: Graph,
        graph_input: Any,
        config: RunnableConfig,
        conversation_id: str,
    ) -> Drive:
        """:meth:`start` for asyncio code (``ainvoke``; the gateway runs in a worker thread)."""
        output = await graph.ainvoke(graph_input, config)
        snapshot = await graph.aget_state(config)
        return await asyncio.to_thread(
            self._after_run, snapshot, config, conversation_id, _pass(), output, resumed=False
        )

    async def adrive(
        self,
        graph: Graph,
        config: RunnableConfig,
        conversation_id: str,
        text: str | bytes,
        *,
        message_id: str | None = None,
    ) -> Drive:
        """:meth:`drive` for asyncio code (``ainvoke``; the gateway runs in a worker thread)."""
        reply = await asyncio.to_thread(self.gateway.handle, conversation_id, text, message_id)
        earlier = await asyncio.to_thread(self._redelivered, reply, config, conversation_id)
        if earlier is not None:
            return earlier
        snapshot = await graph.aget_state(config)
        target = await asyncio.to_thread(self._target, reply, config, snapshot)
        if target is None:
            return Drive(reply)
        output = await graph.ainvoke(self.resume_value(reply, target), config)
        snapshot = await graph.aget_state(config)
        return await asyncio.to_thread(self._after_run, snapshot, config, conversation_id, reply, output, resumed=True)

    # -- plumbing --------------------------------------------------------------------
    def _redelivered(self, reply: Reply, config: RunnableConfig, conversation_id: str) -> Drive | None:
        """For a selection this thread's graph already took, what its first delivery left.

        The gateway gives a redelivered message its first reply again; the graph moved
        on then (its next interrupt is parked, or the run finished), so report that state
        again without touching the graph. ``None``: not such a selection.
        """
        if reply.kind not in (ReplyKind.SELECTED, ReplyKind.ANSWERED) or reply.ask_id is None:
            return None
        run_id = thread_id(config)
        if reply.run_id != run_id:
            return None
        run = self.gateway.run(run_id)
        if run is None:
            return None
        if run.pending_ask_id is not None:
            pending = self.gateway.get(run.pending_ask_id)  # a read: the TTL still holds
            if pending.is_open and pending.conversation_id == conversation_id:
                return Drive(reply, asked=asked_reply(pending))
            return Drive(reply)
        if run.status != "running":
            return Drive(reply, finished=run.outcome == "done")
        return None  # the selection has not reached the graph yet: resume it

    def _target(self, reply: Reply, config: RunnableConfig, snapshot: StateSnapshot) -> str | None:
        """The id of the interrupt ``reply`` answers, or ``None`` when the graph must not run."""
        if reply.kind not in (ReplyKind.SELECTED, ReplyKind.ANSWERED) or reply.ask_id is None:
            return None
        run_id = thread_id(config)
        if reply.run_id != run_id:
            return None  # the conversation's ask belonged to another run
        run = self.gateway.run(run_id)
        if run is None or run.status != "running" or run.pending_ask_id is not None:
            # A redelivered selection: the graph already moved on (it finished, or its
            # next interrupt is parked). Resuming again would answer the wrong question.
            return None
        ask = self.gateway.get(reply.ask_id)
        for interrupt in snapshot.interrupts:
            if _same_question(ask, interrupt):
                return interrupt.id
        return None

    def _after_run(
        self,
        snapshot: StateSnapshot,
        config: RunnableConfig,
        conversation_id: str,
        reply: Reply,
        output: Any,
        *,
        resumed: bool,
    ) -> Drive:
        run_id = thread_id(config)
        if snapshot.interrupts:
            asked = self.park(conversation_id, snapshot, run_id=run_id)
            if not resumed:
                return Drive(asked, resumed=False, output=output, asked=asked)
            return Drive(reply, resumed=True, output=output, asked=asked)
        if self.gateway.run(run_id) is not None:
            self._finish(run_id)
        return Drive(reply, resumed=resumed, output=output, finished=True)

    def _finish(self, run_id: str) -> None:
        """The thread ran to its end, so its run is done. An ask still open for it (the
        thread was started again past its interrupt) asks a question the graph no longer
        has: it is cancelled first, not left parked for a finished run."""
        try:
            self.gateway.finish_run(run_id)
        except RunStillAsking as still:
            self.gateway.cancel(still.ask_id)
            self.gateway.finish_run(run_id)


__all__ = [
    "INTERRUPT_KEY",
    "Drive",
    "Graph",
    "ParkgateInterrupts",
    "pending_interrupts",
    "spec_from_payload",
    "thread_id",
]
