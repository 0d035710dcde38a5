"""LangGraph adapter: ``interrupt()`` payloads parked and resumed through parkgate.

A graph node asks the person with LangGraph's own ``interrupt(payload)``; this module
parks that payload as a parkgate ask and feeds the person's messages through
:meth:`Gateway.handle <parkgate.Gateway.handle>`. Whatever closes the ask, the thread
is resumed, exactly once, and never left waiting::

    from langgraph.types import interrupt
    from parkgate.adapters.langgraph import Closed, ParkgateInterrupts

    def approve(state):
        choice = interrupt({"question": "Deploy to production?", "options": ["Deploy", "Hold"]})
        if isinstance(choice, Closed):          # cancelled, expired or unaskable: nothing runs
            return {"status": choice.outcome}
        return {"status": "deployed" if choice == "Deploy" else "held"}

    bridge = ParkgateInterrupts(gateway)
    config = {"configurable": {"thread_id": "t-1"}}
    first = bridge.start(graph, {"service": "api"}, config, "chat-1")
    show(first.text)                                # the numbered menu
    step = bridge.drive(graph, config, "chat-1", "1")
    show(step.text)                                 # "Selected 1. Deploy"; the graph ran on

What resumes the thread, and with what (``interrupt()``'s return value):

- a selection or a text answer (:meth:`~ParkgateInterrupts.drive`, or any other surface
  that answers the ask, picked up by the watcher): the option's label or the text as
  given (``resume_with`` changes it);
- a cancel (a cancel word, an operator's cancel, a replacement): a :class:`Closed` with
  outcome ``"cancelled"``, within the call that cancelled when that call is the bridge's,
  else by the watcher;
- an expiry: with the ask's ``default`` if it has one, like a selection; otherwise a
  :class:`Closed` with outcome ``"expired"``, within the call that found it expired, or,
  when no message comes, by the watcher that the due read wakes;
- a pending interrupt that cannot be asked (no text, an empty option list, a default that
  is not an option, a bad ``ttl_seconds``, a value of another type; every pending one is
  checked before the first is asked): a :class:`Closed` with outcome ``"unaskable"``,
  ``ask_id=None`` and the error's text as ``reason``, within the call that found it; the
  run closes as ``unaskable``, nothing is parked, and then that call raises the error
  (:class:`~parkgate.StoppingPointError`, or the gateway's :class:`~parkgate.InputError`
  refusing the ask). The watcher logs it instead.

After a :class:`Closed`, the run is over: a thread that interrupts again is resumed with
the same :class:`Closed` (up to :data:`MAX_CLOSED_RESUMES` times, then
:class:`GraphKeepsAsking`).

The watcher is :meth:`ParkgateInterrupts.watch` (a thread) or
:meth:`ParkgateInterrupts.awatch` (an asyncio task). Run one wherever asks can close
without a call of the bridge (an operator's cancel, an expiry nobody's message finds),
beside a deliverer that makes the due reads (``Gateway(..., deliver=True)`` or
``parkgate serve``). Every ask the bridge parks has a follow-up
(:meth:`Gateway.claim_follow_up <parkgate.Gateway.claim_follow_up>`): whoever resumes the
thread claims it first, so two watchers, or a watcher and :meth:`~ParkgateInterrupts.drive`,
never resume a thread twice, and a watcher that was not running when an ask closed
resumes its thread when it starts.

The ask's ``run_id`` is the thread's run: the ``thread_id`` for the thread's first run,
``<thread_id>#2``, ``#3``, ... for later ones (a finished run is never reopened). The ask's
``phase`` is the node that interrupted, and its context holds the payload's own extra keys
and, under ``"langgraph"``, the adapter's record (graph, thread, interrupt, answers so
far). Several pending interrupts, and a LangChain ``HumanInTheLoopMiddleware`` request
with several tool calls, are asked one question after another and resumed once every
question is decided (see :mod:`parkgate.adapters.interrupt_questions`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from collections.abc import Callable, Generator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, TypeVar, cast

from parkgate.errors import MissingExtra

try:
    from langchain_core.runnables import RunnableConfig
    from langgraph.pregel import Pregel
    from langgraph.types import Command, GraphOutput, Interrupt, StateSnapshot
except ModuleNotFoundError as missing:  # the one line that says what to install
    raise MissingExtra(__name__, missing) from None

from parkgate.adapters.interrupt_questions import (
    CONTEXT_KEY,
    UNASKABLE,
    Answer,
    Closed,
    Question,
    answer_of,
    check_askable,
    closed_values,
    next_question,
    parse_payload,
    resume_values,
)
from parkgate.async_gateway import AsyncGateway
from parkgate.core.model import Ask
from parkgate.core.phrases import PHRASES, AskKind, ReplyKind
from parkgate.core.stopping_point import AskSpec
from parkgate.errors import AskAlreadyOpen, InputError, ParkgateError, RunStillAsking
from parkgate.gateway import Gateway, asked_reply
from parkgate.reply import Reply
from parkgate.signal import FALLBACK_READ_SECONDS, Change

log = logging.getLogger("parkgate.langgraph")

T = TypeVar("T")

#: The key LangGraph puts interrupts under in a ``version="v1"`` ``invoke()`` result.
INTERRUPT_KEY = "__interrupt__"
#: The checkpoint metadata key under which the bridge's graph calls record their run.
RUN_KEY = "parkgate_run"
#: How long a claimed follow-up is left to its claimer before another may take it over.
DEFAULT_LEASE = timedelta(hours=1)
#: How many times a graph is resumed with :class:`Closed` after its ask closed, if it keeps
#: interrupting, before the bridge gives up (:class:`GraphKeepsAsking`).
MAX_CLOSED_RESUMES = 8
#: Closed asks read per pass of the watcher.
FOLLOW_UP_BATCH = 100
#: How often a sync watcher with a ``stop`` event looks at it while idle.
STOP_CHECK_SECONDS = 0.2
_WAKING = frozenset({Change.CLOSED, Change.COMMITTED, Change.ANY})
_CLOSING = frozenset({ReplyKind.SELECTED, ReplyKind.ANSWERED, ReplyKind.CANCELLED})

Graph = Pregel[Any, Any, Any, Any]
"""Any compiled LangGraph graph (``StateGraph(...).compile(checkpointer=...)``)."""


class NotThisGraph(ParkgateError):
    """The conversation's parked ask is not one this bridge's graph can resume.

    Raised by :meth:`ParkgateInterrupts.drive` before the message is applied: nothing
    was changed. ``thread_id`` is the owning thread (``None`` when the ask was not
    parked by the LangGraph adapter: answer it with :meth:`Gateway.handle`).
    """

    def __init__(self, conversation_id: str, ask: Ask, thread: str | None, graph: str | None) -> None:
        self.conversation_id = conversation_id
        self.ask_id = ask.id
        self.run_id = ask.run_id
        self.thread_id = thread
        if thread is None:
            owner = f"run {ask.run_id}, which is not a LangGraph thread (answer it with Gateway.handle)"
        else:
            owner = f"thread {thread!r} of graph {graph!r}, which this graph cannot resume"
        super().__init__(
            f"conversation {conversation_id!r}: its parked ask {ask.id} belongs to {owner}; nothing was changed"
        )


class GraphKeepsAsking(ParkgateError):
    """After its ask closed, the thread kept interrupting: its nodes ignore :class:`Closed`."""

    def __init__(self, thread: str) -> None:
        self.thread_id = thread
        super().__init__(
            f"thread {thread!r} interrupted again each time it was resumed with Closed "
            f"({MAX_CLOSED_RESUMES} times): a node must return when interrupt() gives it a Closed"
        )


def spec_from_payload(value: object) -> AskSpec:
    """The question an ``interrupt(value)`` payload asks (see :func:`parse_payload`)."""
    return parse_payload(value).spec


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
    """The ``thread_id`` of a LangGraph config."""
    configurable = config.get("configurable") or {}
    value = configurable.get("thread_id")
    if value is None:
        raise InputError('the LangGraph config has no configurable "thread_id"')
    return str(value)


@dataclass(frozen=True, slots=True)
class Drive:
    """What one call of the bridge did.

    ``reply`` is the gateway's reply to the person's message (for :meth:`~ParkgateInterrupts.start`,
    the ``asked`` reply of the first question, or ``pass`` when the graph did not ask).
    ``resumed`` says whether the thread was resumed; ``output`` is what that graph call
    returned. ``asked`` is the question parked next, ``finished`` that the thread ran to
    its end (its run closed as ``done``, or kept as the cancel or expiry closed it).
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


# -- the adapter's record of an ask ----------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Record:
    """Who an ask belongs to and what was answered before it (the ask's ``langgraph`` context)."""

    graph: str
    thread: str
    question: tuple[str, int, str]
    answers: tuple[Answer, ...] = ()

    @classmethod
    def of(cls, ask: Ask) -> _Record | None:
        data = (ask.context or {}).get(CONTEXT_KEY)
        if not isinstance(data, Mapping):
            return None
        try:
            return cls(
                str(data["graph"]),
                str(data["thread_id"]),
                (str(data["interrupt_id"]), int(data["item"]), str(data["part"])),
                tuple(Answer.from_json(item) for item in data.get("answers", ())),
            )
        except (KeyError, TypeError, ValueError):
            return None

    def to_json(self) -> dict[str, Any]:
        interrupt_id, item, part = self.question
        return {
            "graph": self.graph,
            "thread_id": self.thread,
            "interrupt_id": interrupt_id,
            "item": item,
            "part": part,
            "answers": [answer.to_json() for answer in self.answers],
        }


@dataclass(frozen=True, slots=True)
class _Outcome:
    resumed: bool = False
    output: Any = None
    asked: Reply | None = None
    finished: bool = False
    #: Why the thread's pending interrupt could not be asked; the thread and its run were
    #: closed, and the bridge call raises this.
    refused: InputError | None = None


# -- what a step does, performed by the sync or the asyncio driver ------------------------


@dataclass(frozen=True, slots=True)
class _Call:
    """A gateway call: made on the :class:`Gateway`, or awaited on the :class:`AsyncGateway`."""

    name: str
    args: tuple[Any, ...] = ()
    kwargs: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class _GetState:
    config: RunnableConfig


@dataclass(frozen=True, slots=True)
class _Invoke:
    value: Any
    config: RunnableConfig


_Effect = _Call | _GetState | _Invoke
_Step = Generator[_Effect, Any, T]


def _call(name: str, *args: Any, **kwargs: Any) -> _Call:
    return _Call(name, args, kwargs)


def _pass() -> Reply:
    return Reply(ReplyKind.PASS, PHRASES[ReplyKind.PASS], parked=False)


def _answer(reply: Reply) -> Any:
    return reply.answer


def _pending(snapshot: StateSnapshot) -> list[tuple[str, Any]]:
    return [(item.id, item.value) for item in snapshot.interrupts]


def _has_checkpoint(snapshot: StateSnapshot) -> bool:
    return bool((snapshot.config.get("configurable") or {}).get("checkpoint_id"))


def _node_of(snapshot: StateSnapshot, interrupt_id: str) -> str | None:
    for task in snapshot.tasks:
        if any(item.id == interrupt_id for item in task.interrupts):
            return task.name
    return None


def _thread_config(base: RunnableConfig | None, thread: str, run_id: str | None = None) -> RunnableConfig:
    """``base`` pointed at ``thread``'s latest checkpoint, recording ``run_id`` in the
    checkpoints the call writes."""
    base = base or {}
    configurable = {
        key: value for key, value in (base.get("configurable") or {}).items() if key not in ("checkpoint_id",)
    }
    configurable["thread_id"] = thread
    config = cast(RunnableConfig, {**base, "configurable": configurable})
    if run_id is not None:
        config["metadata"] = {**(base.get("metadata") or {}), RUN_KEY: run_id}
    return config


def _graph_name(graph: Graph) -> str:
    return str(getattr(graph, "name", None) or "LangGraph")


def _log_refused(thread: str | None, refused: InputError) -> None:
    """Say, where no caller hears it (the watcher), why a thread was closed as ``unaskable``."""
    log.error("thread %r: its interrupt could not be asked, so it was closed as %r: %s", thread, UNASKABLE, refused)


class ParkgateInterrupts:
    """Parks a LangGraph thread's ``interrupt()`` payloads in a gateway and resumes the thread.

    ``gateway`` is a :class:`Gateway` or an :class:`AsyncGateway` (either serves both the
    sync and the ``a``-prefixed asyncio methods). ``resume_with`` turns an answer into the
    value ``interrupt()`` returns (default: ``reply.answer``, the option's label or the text
    as given). ``ttl`` is every ask's TTL unless its payload gives ``ttl_seconds``.
    ``lease`` is how long a resume may take before another waiter may take it over (the
    first one is presumed dead).

    A graph is known by its ``name`` (``compile(name=...)``): give each graph that shares
    a parkgate database a name of its own.
    """

    def __init__(
        self,
        gateway: Gateway | AsyncGateway,
        *,
        ttl: timedelta | None = None,
        resume_with: Callable[[Reply], Any] = _answer,
        lease: timedelta = DEFAULT_LEASE,
    ) -> None:
        if isinstance(gateway, AsyncGateway):
            self.gateway, self.async_gateway = gateway.sync, gateway
        elif isinstance(gateway, Gateway):
            self.gateway, self.async_gateway = gateway, AsyncGateway(gateway)
        else:
            raise InputError(f"gateway must be a Gateway or an AsyncGateway, not {type(gateway).__name__}")
        self.ttl = ttl
        self.resume_with = resume_with
        self.lease = lease

    # -- sync ----------------------------------------------------------------------------
    def start(
        self,
        graph: Graph,
        graph_input: Any,
        config: RunnableConfig,
        conversation_id: str,
        *,
        replace: bool = False,
    ) -> Drive:
        """Run ``graph`` on ``graph_input`` as a new run of the thread and park its first question.

        Checked before the graph runs: another thread's ask open in the conversation
        raises :class:`~parkgate.AskAlreadyOpen` and runs nothing, unless ``replace`` (that
        ask is cancelled and its thread resumed with :class:`Closed`). This thread's own
        open ask is cancelled first (the new input replaces the question; its interrupt
        is dropped, not resumed). A graph that finishes without asking gives ``pass`` and
        ``finished``. An interrupt that cannot be asked is closed as ``unaskable`` (the
        thread resumed with :class:`Closed`, its run closed), then its error is raised.
        """
        return self._run(graph, self._start(graph, graph_input, config, conversation_id, replace))

    def drive(
        self,
        graph: Graph,
        config: RunnableConfig,
        conversation_id: str,
        text: str | bytes,
        *,
        message_id: str | None = None,
    ) -> Drive:
        """Handle one message from the person and resume the thread the ask belongs to.

        The message goes through :meth:`Gateway.handle` (every parkgate rule applies). A
        reply that closes the ask (a selection, an answer, a cancel, an expiry found on
        this read) resumes the thread that owns it, whatever thread ``config`` names
        (``config``'s other settings are kept); its next question is parked (``asked``)
        or its run closed (``finished``). A bounce leaves the graph untouched. An ask this
        graph cannot resume raises :class:`NotThisGraph` before anything changes. The same
        ``message_id`` again resumes nothing: it returns the first reply with the state the
        first delivery left. A next question that cannot be asked is handled as in :meth:`start`.
        """
        return self._run(graph, self._drive(graph, config, conversation_id, text, message_id))

    def follow_up(self, graph: Graph, *, config: RunnableConfig | None = None) -> int:
        """Resume every thread of ``graph`` whose ask closed and was not followed up; return how many.

        One pass of :meth:`watch`. ``config`` holds settings every resume uses besides the
        thread (other ``configurable`` keys, callbacks).
        """
        return self._run(graph, self._follow_up_all(graph, config))

    def watch(
        self,
        graph: Graph,
        *,
        config: RunnableConfig | None = None,
        stop: threading.Event | None = None,
    ) -> None:
        """Follow up closed asks of ``graph`` until ``stop`` is set (run it in a thread).

        A pass at once (asks that closed while no watcher ran), then one whenever the close
        signal says an ask closed, here or in another process, and at least every
        :data:`~parkgate.signal.FALLBACK_READ_SECONDS`. Expiries reach it through the due
        read of a deliverer (``Gateway(..., deliver=True)``, ``parkgate serve``). A pass
        that fails is logged and tried again on the next signal::

            stop = threading.Event()
            threading.Thread(target=bridge.watch, args=(graph,), kwargs={"stop": stop}, daemon=True).start()
        """
        wake = threading.Event()

        def heard(change: Change, ask_id: str | None) -> None:
            if change in _WAKING:
                wake.set()

        remove = self.gateway.signal.listen(heard)
        try:
            while stop is None or not stop.is_set():
                wake.clear()
                try:
                    self.follow_up(graph, config=config)
                except Exception:
                    log.exception("following up closed asks of graph %r failed", _graph_name(graph))
                deadline = time.monotonic() + FALLBACK_READ_SECONDS
                while not wake.is_set() and (stop is None or not stop.is_set()):
                    left = deadline - time.monotonic()
                    if left <= 0:
                        break
                    wake.wait(min(left, STOP_CHECK_SECONDS) if stop is not None else left)
        finally:
            remove()

    # -- asyncio -------------------------------------------------------------------------
    async def astart(
        self,
        graph: Graph,
        graph_input: Any,
        config: RunnableConfig,
        conversation_id: str,
        *,
        replace: bool = False,
    ) -> Drive:
        """:meth:`start` for asyncio code (``ainvoke``, and the :class:`AsyncGateway`)."""
        return await self._arun(graph, self._start(graph, graph_input, config, conversation_id, replace))

    async def adrive(
        self,
        graph: Graph,
        config: RunnableConfig,
        conversation_id: str,
        text: str | bytes,
        *,
        message_id: str | None = None,
    ) -> Drive:
        """:meth:`drive` for asyncio code (``ainvoke``, and the :class:`AsyncGateway`)."""
        return await self._arun(graph, self._drive(graph, config, conversation_id, text, message_id))

    async def afollow_up(self, graph: Graph, *, config: RunnableConfig | None = None) -> int:
        """:meth:`follow_up` for asyncio code."""
        return await self._arun(graph, self._follow_up_all(graph, config))

    async def awatch(self, graph: Graph, *, config: RunnableConfig | None = None) -> None:
        """:meth:`watch` for asyncio code: run it as a task; cancel the task to stop it::

        watcher = asyncio.create_task(bridge.awatch(graph))
        """
        loop = asyncio.get_running_loop()
        wake = asyncio.Event()

        def heard(change: Change, ask_id: str | None) -> None:
            if change in _WAKING:
                with contextlib.suppress(RuntimeError):  # the loop is closing
                    loop.call_soon_threadsafe(wake.set)

        remove = self.gateway.signal.listen(heard)
        try:
            while True:
                wake.clear()
                try:
                    await self.afollow_up(graph, config=config)
                except Exception:
                    log.exception("following up closed asks of graph %r failed", _graph_name(graph))
                with contextlib.suppress(TimeoutError):  # asyncio.timeout: 3.11's wait_for can swallow a cancel
                    async with asyncio.timeout(FALLBACK_READ_SECONDS):
                        await wake.wait()
        finally:
            remove()

    # -- pure helper ---------------------------------------------------------------------
    def resume_value(self, reply: Reply, interrupt_id: str | None = None) -> Command[Any] | None:
        """The ``Command`` that feeds a selection or answer to a graph, or ``None`` for any
        other reply (for callers that resume graphs themselves)."""
        if reply.kind not in (ReplyKind.SELECTED, ReplyKind.ANSWERED):
            return None
        value = self.resume_with(reply)
        return Command(resume=value if interrupt_id is None else {interrupt_id: value})

    # -- drivers -------------------------------------------------------------------------
    def _run(self, graph: Graph, step: _Step[T]) -> T:
        result: Any = None
        error: Exception | None = None
        while True:
            try:
                effect = step.throw(error) if error is not None else step.send(result)
            except StopIteration as done:
                return cast(T, done.value)
            error = None
            try:
                if isinstance(effect, _Call):
                    result = getattr(self.gateway, effect.name)(*effect.args, **effect.kwargs)
                elif isinstance(effect, _GetState):
                    result = graph.get_state(effect.config)
                else:
                    result = graph.invoke(effect.value, effect.config)
            except Exception as raised:
                error = raised

    async def _arun(self, graph: Graph, step: _Step[T]) -> T:
        result: Any = None
        error: Exception | None = None
        while True:
            try:
                effect = step.throw(error) if error is not None else step.send(result)
            except StopIteration as done:
                return cast(T, done.value)
            error = None
            try:
                if isinstance(effect, _Call):
                    result = await getattr(self.async_gateway, effect.name)(*effect.args, **effect.kwargs)
                elif isinstance(effect, _GetState):
                    result = await graph.aget_state(effect.config)
                else:
                    result = await graph.ainvoke(effect.value, effect.config)
            except Exception as raised:
                error = raised

    # -- steps ---------------------------------------------------------------------------
    def _start(
        self, graph: Graph, graph_input: Any, config: RunnableConfig, conversation_id: str, replace: bool
    ) -> _Step[Drive]:
        thread = thread_id(config)
        name = _graph_name(graph)
        here = _thread_config(config, thread)
        snapshot: StateSnapshot = yield _GetState(here)
        parked: Ask | None = yield _call("parked", conversation_id)
        if parked is not None:
            record = _Record.of(parked)
            if record is not None and (record.graph, record.thread) == (name, thread):
                yield from self._drop(parked)
            elif not replace:
                raise AskAlreadyOpen(conversation_id, parked.id)
            else:
                closed: Ask = yield _call("cancel", parked.id)
                replaced = yield from self._follow_up(graph, closed, config)
                if replaced is not None and replaced.refused is not None:
                    _log_refused(record.thread if record else None, replaced.refused)
        previous = (snapshot.metadata or {}).get(RUN_KEY)
        if isinstance(previous, str):
            yield from self._close_run(previous)
        run_id = yield from self._new_run_id(thread, previous)
        output = yield _Invoke(graph_input, _thread_config(config, thread, run_id))
        after: StateSnapshot = yield _GetState(here)
        outcome = yield from self._settle(graph, _thread_config(config, thread, run_id), conversation_id, run_id, after)
        if outcome.refused is not None:
            raise outcome.refused
        reply = outcome.asked if outcome.asked is not None else _pass()
        return Drive(reply, output=output, asked=outcome.asked, finished=outcome.finished)

    def _drive(
        self,
        graph: Graph,
        config: RunnableConfig,
        conversation_id: str,
        text: str | bytes,
        message_id: str | None,
    ) -> _Step[Drive]:
        parked: Ask | None = yield _call("parked", conversation_id)
        if parked is not None:
            record = _Record.of(parked)
            if record is None or record.graph != _graph_name(graph):
                raise NotThisGraph(
                    conversation_id, parked, record.thread if record else None, record.graph if record else None
                )
            owner: StateSnapshot = yield _GetState(_thread_config(config, record.thread))
            if not _has_checkpoint(owner):
                raise NotThisGraph(conversation_id, parked, record.thread, record.graph)
            if record.question[0] not in {item.id for item in owner.interrupts}:
                # The thread no longer waits on this question (it was resumed or started
                # again outside the bridge): drop the ask rather than take an answer into nothing.
                yield from self._drop(parked)
        reply: Reply = yield _call("handle", conversation_id, text, message_id)
        closed_id = reply.ask_id if reply.kind in _CLOSING else reply.expired_ask_id
        if closed_id is None:
            return Drive(reply)
        ask: Ask = yield _call("get", closed_id)
        outcome = yield from self._follow_up(graph, ask, config)
        if outcome is None:
            return (yield from self._as_left(reply, conversation_id))
        if outcome.refused is not None:
            raise outcome.refused
        return Drive(reply, outcome.resumed, outcome.output, outcome.asked, outcome.finished)

    def _follow_up_all(self, graph: Graph, config: RunnableConfig | None) -> _Step[int]:
        count = 0
        asks: list[Ask] = yield _call("closed_follow_ups", FOLLOW_UP_BATCH)
        for ask in asks:
            try:
                outcome = yield from self._follow_up(graph, ask, config)
            except Exception:
                log.exception("resuming the thread of ask %s failed; it is tried again later", ask.id)
                continue
            if outcome is not None and outcome.refused is not None:
                record = _Record.of(ask)
                _log_refused(record.thread if record else None, outcome.refused)
            count += outcome is not None
        return count

    def _follow_up(self, graph: Graph, ask: Ask, base: RunnableConfig | None) -> _Step[_Outcome | None]:
        """Resume the thread a closed ask belongs to, or park its next question.

        ``None`` when the ask is not this graph's, or its follow-up was claimed by another
        waiter (or done already).
        """
        record = _Record.of(ask)
        if record is None or record.graph != _graph_name(graph):
            return None
        config = _thread_config(base, record.thread, ask.run_id)
        seen: StateSnapshot = yield _GetState(config)
        if not _has_checkpoint(seen):
            return None  # not a thread of this graph's checkpointer
        claimed: bool = yield _call("claim_follow_up", ask.id, self.lease)
        if not claimed:
            return None
        snapshot: StateSnapshot = yield _GetState(config)  # read again: the claim is ours now
        pending = _pending(snapshot)
        if record.question[0] not in {interrupt_id for interrupt_id, _ in pending}:
            # Resumed already (a claimer died after resuming), or started again: settle what is there.
            outcome = yield from self._settle(graph, config, ask.conversation_id, ask.run_id, snapshot)
            yield _call("follow_up_done", ask.id)
            return outcome
        answer = answer_of(ask, record.question)
        if answer is None:
            closed = Closed(ask.status.value, ask.id, ask.answer)
            output, after = yield from self._resume_closed(config, pending, closed)
        else:
            answers = (*record.answers, answer)
            try:
                question = next_question(pending, answers)
                asked: Reply | None = None
                if question is not None:
                    asked = yield from self._ask(graph, snapshot, question, ask.conversation_id, ask.run_id, answers)
            except InputError as refused:
                outcome = yield from self._unaskable(config, ask.conversation_id, ask.run_id, pending, refused)
                yield _call("follow_up_done", ask.id)
                return outcome
            if asked is not None:
                yield _call("follow_up_done", ask.id)
                return _Outcome(asked=asked)
            output = yield _Invoke(Command(resume=resume_values(pending, answers, self._value_of)), config)
            after = yield _GetState(config)
        outcome = yield from self._settle(graph, config, ask.conversation_id, ask.run_id, after)
        yield _call("follow_up_done", ask.id)
        return _Outcome(True, output, outcome.asked, outcome.finished, outcome.refused)

    def _resume_closed(
        self, config: RunnableConfig, pending: Sequence[tuple[str, Any]], closed: Closed
    ) -> _Step[tuple[Any, StateSnapshot]]:
        """Resume the thread with ``closed``, and again each time it interrupts, up to
        :data:`MAX_CLOSED_RESUMES` more times; the last output and the state it left."""
        output = yield _Invoke(Command(resume=closed_values(pending, closed)), config)
        after: StateSnapshot = yield _GetState(config)
        for _ in range(MAX_CLOSED_RESUMES):
            if not after.interrupts:
                return output, after
            output = yield _Invoke(Command(resume=closed_values(_pending(after), closed)), config)
            after = yield _GetState(config)
        if after.interrupts:
            raise GraphKeepsAsking(thread_id(config))
        return output, after

    def _unaskable(
        self,
        config: RunnableConfig,
        conversation_id: str,
        run_id: str,
        pending: Sequence[tuple[str, Any]],
        refused: InputError,
    ) -> _Step[_Outcome]:
        """Close a thread whose pending interrupt cannot be asked, so that nothing is left
        interrupted, parked or ``running``: its run closes as ``unaskable``, then the thread
        is resumed with ``Closed(outcome="unaskable")`` (a middleware request with a
        ``reject`` per tool call), as after a cancel. The caller raises ``refused``."""
        run = yield _call("run", run_id)
        if run is None:  # the thread's first question: the run was never made
            yield _call("record_run", run_id, conversation_id, UNASKABLE)
        elif run.status == "running":
            yield from self._finish_run(run_id, UNASKABLE)
        closed = Closed(UNASKABLE, None, None, str(refused))
        thread = thread_id(config)
        try:
            output, _ = yield from self._resume_closed(config, pending, closed)
        except Exception as failure:  # a middleware request whose tool does not allow "reject", say
            refused.add_note(
                f"thread {thread!r} stays interrupted (start it again): resuming it with "
                f"Closed(outcome={UNASKABLE!r}) failed ({type(failure).__name__}, the cause above); "
                f"its run {run_id!r} is closed as {UNASKABLE!r} and nothing is parked"
            )
            raise refused from failure
        refused.add_note(
            f"thread {thread!r} was resumed with Closed(outcome={UNASKABLE!r}) and its run "
            f"{run_id!r} closed as {UNASKABLE!r}; nothing is parked"
        )
        return _Outcome(True, output, finished=True, refused=refused)

    def _settle(
        self, graph: Graph, config: RunnableConfig, conversation_id: str, run_id: str, snapshot: StateSnapshot
    ) -> _Step[_Outcome]:
        """After the thread ran: park its first question, or close its run as ``done``."""
        run = yield _call("run", run_id)
        if snapshot.interrupts:
            if run is not None and run.status != "running":
                return _Outcome()  # a closed run is never reopened
            if run is not None and run.pending_ask_id is not None:
                pending: Ask = yield _call("get", run.pending_ask_id)
                record = _Record.of(pending)
                if pending.is_open and record is not None and record.question[0] in {i.id for i in snapshot.interrupts}:
                    return _Outcome(asked=asked_reply(pending))  # parked already
            pending_now = _pending(snapshot)
            try:
                check_askable(pending_now)  # every one, before the person is asked the first
                question = next_question(pending_now, ())
                assert question is not None  # every pending interrupt has a first question
                asked = yield from self._ask(graph, snapshot, question, conversation_id, run_id, ())
            except InputError as refused:  # the payload's, or the gateway's refusal of it
                return (yield from self._unaskable(config, conversation_id, run_id, pending_now, refused))
            return _Outcome(asked=asked)
        if run is not None and run.status == "running":
            yield from self._finish_run(run_id, "done")
        return _Outcome(finished=True)

    def _finish_run(self, run_id: str, outcome: str) -> _Step[None]:
        """Close a ``running`` run with ``outcome``, cancelling an ask the thread no longer has."""
        try:
            yield _call("finish_run", run_id, outcome)
        except RunStillAsking as still:
            yield _call("cancel", still.ask_id)
            yield _call("finish_run", run_id, outcome)

    def _ask(
        self,
        graph: Graph,
        snapshot: StateSnapshot,
        question: Question,
        conversation_id: str,
        run_id: str,
        answers: Sequence[Answer],
    ) -> _Step[Reply]:
        record = _Record(_graph_name(graph), thread_id(snapshot.config), question.key, tuple(answers))
        payload = question.payload
        ttl = timedelta(seconds=payload.ttl_seconds) if payload.ttl_seconds is not None else self.ttl
        reply: Reply = yield _call(
            "ask",
            conversation_id,
            payload.spec.prompt,
            list(payload.spec.options) or None,
            kind=payload.spec.kind,
            run_id=run_id,
            ttl=ttl,
            default=payload.default,
            phase=_node_of(snapshot, question.interrupt_id),
            context={**(payload.context or {}), CONTEXT_KEY: record.to_json()},
            follow_up=True,
        )
        return reply

    def _drop(self, ask: Ask) -> _Step[None]:
        """Cancel an ask whose thread will not be resumed with its answer, claiming its
        follow-up first so that no waiter resumes the thread with the cancel."""
        claimed: bool = yield _call("claim_follow_up", ask.id, self.lease)
        yield _call("cancel", ask.id)
        if claimed:
            yield _call("follow_up_done", ask.id)

    def _close_run(self, run_id: str) -> _Step[None]:
        """Before a thread starts again: its previous run's open ask is dropped and the run
        closed, so no run is left ``running``."""
        run = yield _call("run", run_id)
        if run is None or run.status != "running":
            return
        if run.pending_ask_id is not None:
            pending: Ask = yield _call("get", run.pending_ask_id)
            if pending.is_open:
                yield from self._drop(pending)
                return  # the cancel closed the run
        yield _call("finish_run", run_id, "restarted")

    def _new_run_id(self, thread: str, previous: object) -> _Step[str]:
        """The thread id for its first run, then ``<thread>#2``, ``#3``, ...: the first unused."""
        number = 1
        if isinstance(previous, str) and previous.startswith(f"{thread}#"):
            suffix = previous.rpartition("#")[2]
            number = int(suffix) if suffix.isdigit() else 1
        while True:
            candidate = thread if number == 1 else f"{thread}#{number}"
            existing = yield _call("run", candidate)
            if existing is None:
                return candidate
            number += 1

    def _as_left(self, reply: Reply, conversation_id: str) -> _Step[Drive]:
        """A reply whose follow-up someone else has (a redelivered message): the state its
        first delivery left, without touching the graph."""
        if reply.kind not in (ReplyKind.SELECTED, ReplyKind.ANSWERED) or reply.run_id is None:
            return Drive(reply)
        run = yield _call("run", reply.run_id)
        if run is None:
            return Drive(reply)
        if run.pending_ask_id is not None:
            pending: Ask = yield _call("get", run.pending_ask_id)
            if pending.is_open and pending.conversation_id == conversation_id:
                return Drive(reply, asked=asked_reply(pending))
            return Drive(reply)
        return Drive(reply, finished=run.status != "running" and run.outcome == "done")

    def _value_of(self, answer: Answer) -> Any:
        kind = ReplyKind.SELECTED if answer.kind is AskKind.CHOICE else ReplyKind.ANSWERED
        reply = Reply(
            kind, "", parked=False, ask_id=answer.ask_id, answer=answer.answer, option_index=answer.option_index
        )
        return self.resume_with(reply)


__all__ = [
    "DEFAULT_LEASE",
    "INTERRUPT_KEY",
    "Closed",
    "Drive",
    "Graph",
    "GraphKeepsAsking",
    "NotThisGraph",
    "ParkgateInterrupts",
    "pending_interrupts",
    "spec_from_payload",
    "thread_id",
]
