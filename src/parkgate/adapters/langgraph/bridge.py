"""The bridge a LangGraph application holds: :class:`ParkgateInterrupts`."""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from datetime import timedelta
from functools import partial
from typing import TYPE_CHECKING, Any, TypeVar

from langchain_core.runnables import RunnableConfig
from langgraph.types import Command

from parkgate.adapters import common
from parkgate.adapters.effects import Steps, run_async, run_sync
from parkgate.adapters.following import FOLLOW_UP_CHANGES, follow_up_until_cancelled
from parkgate.adapters.langgraph import over_http
from parkgate.adapters.langgraph.calls import BridgeSteps
from parkgate.adapters.langgraph.questions import Answer
from parkgate.adapters.langgraph.steps import log
from parkgate.adapters.langgraph.threads import Drive, Graph, allow_closed, aperform, graph_name, perform
from parkgate.adapters.langgraph.toolreview import ToolReview, ToolReviews
from parkgate.adapters.langgraph.watching import DrivenConversations, warn_without_deliverer
from parkgate.core.kinds import ReplyKind
from parkgate.core.model import Reply
from parkgate.gateway import Gateway
from parkgate.gateway.async_gateway import AsyncGateway
from parkgate.store.signal import FALLBACK_READ_SECONDS

if TYPE_CHECKING:
    from parkgate.client import AsyncClient, Client

T = TypeVar("T")

#: How long a claimed follow-up is left to its claimer before another may take it over.
DEFAULT_LEASE = timedelta(hours=1)
#: How often a sync watcher with a ``stop`` event looks at it while idle.
STOP_CHECK_SECONDS = 0.2


def _answer(reply: Reply) -> Any:
    return reply.answer


class ParkgateInterrupts:
    """Parks a LangGraph thread's ``interrupt()`` payloads in a gateway and resumes the thread.

    A graph is known by its ``name`` (``compile(name=...)``): give each graph that shares
    a parkgate database a name of its own. See docs/adapters/langgraph.md.

    Args:
        gateway: A :class:`Gateway` or an :class:`AsyncGateway`; either serves both the
            sync and the ``a``-prefixed asyncio methods. Over HTTP, a
            :class:`~parkgate.client.Client` (the sync methods) or an
            :class:`~parkgate.client.AsyncClient` (the asyncio ones) starts, parks,
            drives and follows up threads; the watcher needs a gateway.
        ttl: Every ask's TTL unless its payload gives ``ttl_seconds``; the gateway's
            by default.
        resume_with: Turns an answer into the value ``interrupt()`` returns (default:
            ``reply.answer``, the option's label or the text as given).
        lease: How long a resume may take before another waiter may take it over.
        tools: For LangChain's ``HumanInTheLoopMiddleware``: how the review of each
            tool's calls is asked, by tool name (:class:`ToolReview`: its TTL, who may
            decide and how many must agree).

    Raises:
        InputError: ``gateway`` is none of those, or a tool's
            review has a bad TTL, responders or quorum.
    """

    def __init__(
        self,
        gateway: Gateway | AsyncGateway | Client | AsyncClient,
        *,
        ttl: timedelta | None = None,
        resume_with: Callable[[Reply], Any] = _answer,
        lease: timedelta = DEFAULT_LEASE,
        tools: Mapping[str, ToolReview] | None = None,
    ) -> None:
        self.gateway, self.async_gateway = over_http.backends(gateway)
        self.ttl = ttl
        self.resume_with = resume_with
        self.lease = lease
        self.reviews = ToolReviews(tools or {})
        # The conversations a drive of this bridge is handling now: its watcher leaves their
        # closed asks to that drive, which resumes the thread and reports what it did.
        self._driven = DrivenConversations()

    @property
    def _steps(self) -> BridgeSteps:
        return BridgeSteps(self.ttl, self.lease, self._value_of, self.reviews)

    # -- sync ----------------------------------------------------------------------------
    def start(
        self, graph: Graph, graph_input: Any, config: RunnableConfig, conversation_id: str, *, replace: bool = False
    ) -> Drive:
        """Run ``graph`` on ``graph_input`` as a new run of the thread and park its first question.

        Checked before the graph runs: another thread's ask open in the conversation
        raises :class:`~parkgate.AskAlreadyOpen` and runs nothing, unless ``replace`` (that
        ask is cancelled and its thread resumed with :class:`Closed`). This thread's own
        open ask is cancelled first. A graph that finishes without asking gives ``pass``
        and ``finished``. An interrupt that cannot be asked is closed as ``unaskable``
        (the thread resumed with :class:`Closed`, its run closed), then its error is raised.

        Args:
            graph: The compiled graph, with a checkpointer.
            graph_input: The input of the new run.
            config: The thread's config (``configurable.thread_id``).
            conversation_id: Where the questions are parked.
            replace: Cancel another thread's ask open in the conversation instead of
                refusing.

        Returns:
            The gateway's reply and what became of the thread.

        Raises:
            AskAlreadyOpen: Another thread's ask is open in the conversation.
        """
        return self._run(graph, self._steps.start(graph, graph_input, config, conversation_id, replace))

    def park(self, graph: Graph, config: RunnableConfig, conversation_id: str, *, replace: bool = False) -> Drive:
        """Park the question of a thread the application ran itself, without running it.

        For an application that runs the graph on its own (``graph.stream`` to show
        tokens as they come) and then hands the interrupted thread to the bridge: its
        pending interrupts are parked as :meth:`start` parks them after its run, in a new
        run of the thread, and the node is not run again. From then on :meth:`drive` and
        the watcher resume it. A thread whose question is parked already gets that
        ``asked`` reply back; one with nothing pending gives ``pass`` and ``finished``::

            for chunk in graph.stream(inputs, config, stream_mode="updates"):
                show(chunk)
            drive = bridge.park(graph, config, "chat-1")

        Args:
            graph: The compiled graph, with a checkpointer.
            config: The thread's config (``configurable.thread_id``).
            conversation_id: Where the questions are parked.
            replace: Cancel another thread's ask open in the conversation instead of
                refusing.

        Returns:
            The ``asked`` reply of the question parked, and what became of the thread.

        Raises:
            AskAlreadyOpen: Another thread's ask is open in the conversation.
            InputError: The thread has no checkpoint (the graph never ran on it).
        """
        return self._run(graph, self._steps.park(graph, config, conversation_id, replace))

    def drive(
        self,
        graph: Graph,
        config: RunnableConfig,
        conversation_id: str,
        text: str | bytes,
        *,
        message_id: str | None = None,
        sender: str | None = None,
    ) -> Drive:
        """Handle one message from the person and resume the thread the ask belongs to.

        The message goes through :meth:`Gateway.handle`. A reply that closes the ask (a
        selection, an answer, a cancel, an expiry found on this read) resumes the thread
        that owns it, whatever thread ``config`` names; its next question is parked
        (``asked``) or its run closed (``finished``). A bounce leaves the graph untouched.
        The same ``message_id`` again returns the first reply, resuming nothing.

        Args:
            graph: The compiled graph the conversation's ask belongs to.
            config: Settings every resume uses besides the thread.
            conversation_id: The conversation the message arrived in.
            text: What the person wrote.
            message_id: The message's id on its surface, for redeliveries.
            sender: Who wrote it (:meth:`Gateway.handle`): on an ask with responders,
                anyone else's message is ``not_yours`` and resumes nothing.

        Returns:
            The gateway's reply and what became of the thread.

        Raises:
            NotThisGraph: The ask belongs to another graph; nothing changes.
        """
        with self._driven.driving(conversation_id):
            return self._run(graph, self._steps.drive(graph, config, conversation_id, text, message_id, sender))

    def follow_up(self, graph: Graph, *, config: RunnableConfig | None = None) -> int:
        """Resume every thread of ``graph`` whose ask closed and was not followed up.

        One pass of :meth:`watch`.

        Args:
            graph: The compiled graph whose threads are resumed.
            config: Settings every resume uses besides the thread (other
                ``configurable`` keys, callbacks).

        Returns:
            How many threads were resumed.
        """
        return self._run(graph, self._steps.follow_up_all(graph, config, self._driven.__contains__))

    @contextlib.contextmanager
    def running(self, graph: Graph, *, config: RunnableConfig | None = None) -> Iterator[None]:
        """Run a deliverer and the watcher of ``graph`` for the ``with`` block; both stop on exit::

            with bridge.running(graph):
                bridge.start(graph, {"service": "api"}, config, "chat-1")
                ...

        The deliverer makes the due reads that close asks nobody answers (so their threads
        are resumed with :class:`Closed` on time) and sends callbacks; a gateway that
        already delivers (``deliver=True``) keeps its own and gets no second one.

        Args:
            graph: The compiled graph whose threads the watcher resumes.
            config: As for :meth:`follow_up`.

        Yields:
            Nothing: the block runs while both do.
        """
        from parkgate.gateway.delivering import start_thread  # loads httpx: only when delivering

        deliverer = None if self.gateway.deliverer_health is not None else start_thread(self.gateway)
        stop = threading.Event()
        watcher = threading.Thread(
            target=self._watch, args=(graph, config, stop, False), name="parkgate-graph-watcher", daemon=True
        )
        watcher.start()
        try:
            yield
        finally:
            stop.set()
            watcher.join()
            if deliverer is not None:
                deliverer.stop()

    def watch(self, graph: Graph, *, config: RunnableConfig | None = None, stop: threading.Event | None = None) -> None:
        """Follow up closed asks of ``graph`` until ``stop`` is set (run it in a thread).

        A pass at once, then one whenever the close signal says an ask closed (here or in
        another process), and at least every :data:`~parkgate.store.signal.FALLBACK_READ_SECONDS`.
        Expiries reach it only through a deliverer's due read: with no deliverer running
        on the database, the watch logs one warning saying so (:meth:`running` runs both).
        A failed pass is logged::

            stop = threading.Event()
            threading.Thread(target=bridge.watch, args=(graph,), kwargs={"stop": stop}, daemon=True).start()

        Args:
            graph: The compiled graph whose threads are resumed.
            config: As for :meth:`follow_up`.
            stop: Set it to end the watch; without it the watch runs for good.
        """
        self._watch(graph, config, stop, True)

    def _watch(
        self, graph: Graph, config: RunnableConfig | None, stop: threading.Event | None, check_deliverer: bool
    ) -> None:
        if check_deliverer:
            warn_without_deliverer(self.gateway, graph_name(graph))
        wake = threading.Event()
        remove = self.gateway.signal.listen(lambda change, ask_id: wake.set() if change in FOLLOW_UP_CHANGES else None)
        try:
            while stop is None or not stop.is_set():
                wake.clear()
                self._pass_logged(graph, config)
                deadline = time.monotonic() + FALLBACK_READ_SECONDS
                while not wake.is_set() and (stop is None or not stop.is_set()):
                    left = deadline - time.monotonic()
                    if left <= 0:
                        break
                    wake.wait(min(left, STOP_CHECK_SECONDS) if stop is not None else left)
        finally:
            remove()

    def _pass_logged(self, graph: Graph, config: RunnableConfig | None) -> None:
        try:
            self.follow_up(graph, config=config)
        except Exception:
            log.exception("following up closed asks of graph %r failed", graph_name(graph))

    # -- asyncio -------------------------------------------------------------------------
    async def astart(
        self, graph: Graph, graph_input: Any, config: RunnableConfig, conversation_id: str, *, replace: bool = False
    ) -> Drive:
        """:meth:`start` for asyncio code (``ainvoke``, and the :class:`AsyncGateway`)."""
        return await self._arun(graph, self._steps.start(graph, graph_input, config, conversation_id, replace))

    async def apark(
        self, graph: Graph, config: RunnableConfig, conversation_id: str, *, replace: bool = False
    ) -> Drive:
        """:meth:`park` for asyncio code (``astream``, and the :class:`AsyncGateway`)."""
        return await self._arun(graph, self._steps.park(graph, config, conversation_id, replace))

    async def adrive(
        self,
        graph: Graph,
        config: RunnableConfig,
        conversation_id: str,
        text: str | bytes,
        *,
        message_id: str | None = None,
        sender: str | None = None,
    ) -> Drive:
        """:meth:`drive` for asyncio code (``ainvoke``, and the :class:`AsyncGateway`)."""
        with self._driven.driving(conversation_id):
            return await self._arun(graph, self._steps.drive(graph, config, conversation_id, text, message_id, sender))

    async def afollow_up(self, graph: Graph, *, config: RunnableConfig | None = None) -> int:
        """:meth:`follow_up` for asyncio code."""
        return await self._arun(graph, self._steps.follow_up_all(graph, config, self._driven.__contains__))

    async def awatch(self, graph: Graph, *, config: RunnableConfig | None = None) -> None:
        """:meth:`watch` for asyncio code: run it as a task; cancel the task to stop it::

        watcher = asyncio.create_task(bridge.awatch(graph))

        Like :meth:`watch`, it logs one warning when no deliverer runs on the database.
        """
        await asyncio.to_thread(warn_without_deliverer, self.gateway, graph_name(graph))
        what = f"closed asks of graph {graph_name(graph)!r}"
        await follow_up_until_cancelled(self.gateway.signal, partial(self.afollow_up, graph, config=config), log, what)

    def resume_value(self, reply: Reply, interrupt_id: str | None = None) -> Command[Any] | None:
        """The ``Command`` that feeds a selection or answer to a graph (for callers that
        resume graphs themselves).

        Args:
            reply: The gateway's reply to the person's message.
            interrupt_id: The interrupt to resume, when the thread has several.

        Returns:
            The resume command, or ``None`` for a reply that is no selection or answer.
        """
        if reply.kind not in (ReplyKind.SELECTED, ReplyKind.ANSWERED):
            return None
        value = self.resume_with(reply)
        return Command(resume=value if interrupt_id is None else {interrupt_id: value})

    # -- drivers -------------------------------------------------------------------------
    def _run(self, graph: Graph, steps: Steps[T]) -> T:
        allow_closed(graph)
        return run_sync(self.gateway, steps, partial(perform, graph))

    async def _arun(self, graph: Graph, steps: Steps[T]) -> T:
        allow_closed(graph)
        return await run_async(self.async_gateway, steps, partial(aperform, graph))

    def _value_of(self, answer: Answer) -> Any:
        return self.resume_with(common.answer_reply(answer.kind, answer.ask_id, answer.answer, answer.option_index))
