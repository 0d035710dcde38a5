"""The bridge's own calls (start a thread, drive it with a message, follow up closed asks)
as step generators, over the follow-up steps of :mod:`.steps`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.types import StateSnapshot

from parkgate.adapters import common
from parkgate.adapters.effects import Steps, call
from parkgate.adapters.langgraph.steps import ThreadSteps, log, log_refused
from parkgate.adapters.langgraph.threads import (
    RUN_KEY,
    Drive,
    GetState,
    Graph,
    Invoke,
    NotThisGraph,
    Record,
    graph_name,
    graph_watcher,
    has_checkpoint,
    thread_config,
    thread_id,
)
from parkgate.core.kinds import ReplyKind, RunOutcome, RunStatus
from parkgate.core.model import Ask, Reply
from parkgate.errors import AskAlreadyOpen, InputError
from parkgate.gateway import asked_reply

#: Closed asks read per page; a pass of the watcher reads every page.
FOLLOW_UP_BATCH = 100
#: The outcome of a run still ``running`` when its thread starts again.
RESTARTED = "restarted"
_CLOSING = frozenset({ReplyKind.SELECTED, ReplyKind.ANSWERED, ReplyKind.CANCELLED})


class BridgeSteps(ThreadSteps):
    """Start, drive and follow-up-all, as steps."""

    def start(
        self, graph: Graph, graph_input: Any, config: RunnableConfig, conversation_id: str, replace: bool
    ) -> Steps[Drive]:
        thread = thread_id(config)
        here = thread_config(config, thread)
        snapshot: StateSnapshot = yield GetState(here)
        yield from self._clear_conversation(graph, thread, config, conversation_id, replace)
        previous = (snapshot.metadata or {}).get(RUN_KEY)
        if isinstance(previous, str):
            yield from self._close_run(previous)
        run_id = yield from self._new_run_id(thread, previous)
        output = yield Invoke(graph_input, thread_config(config, thread, run_id))
        after: StateSnapshot = yield GetState(here)
        outcome = yield from self.settle(graph, thread_config(config, thread, run_id), conversation_id, run_id, after)
        if outcome.refused is not None:
            raise outcome.refused
        reply = outcome.asked if outcome.asked is not None else common.pass_reply()
        return Drive(reply, output=output, asked=outcome.asked, finished=outcome.finished)

    def park(self, graph: Graph, config: RunnableConfig, conversation_id: str, replace: bool) -> Steps[Drive]:
        """A thread the application ran itself: its pending interrupts parked as :meth:`start`
        parks them after its invoke, without running the graph. Its question parked
        already is left as it is (the same ``asked`` reply comes back)."""
        thread = thread_id(config)
        snapshot: StateSnapshot = yield GetState(thread_config(config, thread))
        if not has_checkpoint(snapshot):
            raise InputError(f"thread {thread!r} has no checkpoint: run the graph on it first")
        parked: Ask | None = yield call("parked", conversation_id)
        record = Record.of(parked) if parked is not None else None
        pending = {item.id for item in snapshot.interrupts}
        mine = record is not None and (record.graph, record.thread, record.question[0] in pending) == (
            graph_name(graph),
            thread,
            True,
        )
        if parked is not None and mine:  # its question is parked already
            return Drive(asked_reply(parked), asked=asked_reply(parked))
        yield from self._clear_conversation(graph, thread, config, conversation_id, replace)
        run_id = yield from self._new_run_id(thread, (snapshot.metadata or {}).get(RUN_KEY))
        here = thread_config(config, thread, run_id)
        outcome = yield from self.settle(graph, here, conversation_id, run_id, snapshot)
        if outcome.refused is not None:
            raise outcome.refused
        reply = outcome.asked if outcome.asked is not None else common.pass_reply()
        return Drive(reply, asked=outcome.asked, finished=outcome.finished)

    def _clear_conversation(
        self, graph: Graph, thread: str, config: RunnableConfig, conversation_id: str, replace: bool
    ) -> Steps[None]:
        """Before a thread starts: its own open ask is dropped; another thread's is refused
        (:class:`~parkgate.AskAlreadyOpen`), or with ``replace`` cancelled and followed up."""
        parked: Ask | None = yield call("parked", conversation_id)
        if parked is None:
            return
        record = Record.of(parked)
        if record is not None and (record.graph, record.thread) == (graph_name(graph), thread):
            yield from self.drop(parked)
        elif not replace:
            raise AskAlreadyOpen(conversation_id, parked.id)
        else:
            closed: Ask = yield call("cancel", parked.id)
            replaced = yield from self.follow_up(graph, closed, config)
            if replaced is not None and replaced.refused is not None:
                log_refused(record.thread if record else None, replaced.refused)

    def drive(
        self,
        graph: Graph,
        config: RunnableConfig,
        conversation_id: str,
        text: str | bytes,
        message_id: str | None,
        sender: str | None = None,
    ) -> Steps[Drive]:
        parked: Ask | None = yield call("parked", conversation_id)
        if parked is not None:
            yield from self._check_owner(graph, config, conversation_id, parked)
        reply: Reply = yield call("handle", conversation_id, text, message_id, sender=sender)
        closed_id = reply.ask_id if reply.kind in _CLOSING else reply.expired_ask_id
        if closed_id is None:
            return Drive(reply)
        ask: Ask = yield call("get", closed_id)
        outcome = yield from self.follow_up(graph, ask, config)
        if outcome is None:
            return (yield from self._as_left(reply, conversation_id))
        if outcome.refused is not None:
            raise outcome.refused
        return Drive(reply, outcome.resumed, outcome.output, outcome.asked, outcome.finished)

    def _check_owner(self, graph: Graph, config: RunnableConfig, conversation_id: str, parked: Ask) -> Steps[None]:
        """Refuse a parked ask this graph cannot resume (:class:`NotThisGraph`); drop one whose
        thread no longer waits on it, rather than take an answer into nothing."""
        record = Record.of(parked)
        if record is None or record.graph != graph_name(graph):
            thread, graph_named = (record.thread, record.graph) if record else (None, None)
            raise NotThisGraph(conversation_id, parked.id, parked.run_id, thread, graph_named)
        owner: StateSnapshot = yield GetState(thread_config(config, record.thread))
        if not has_checkpoint(owner):
            raise NotThisGraph(conversation_id, parked.id, parked.run_id, record.thread, record.graph)
        if record.question[0] not in {item.id for item in owner.interrupts}:
            yield from self.drop(parked)

    def follow_up_all(
        self, graph: Graph, config: RunnableConfig | None, busy: Callable[[str], bool] = lambda conversation: False
    ) -> Steps[int]:
        """Resume the threads of closed asks, leaving those of a conversation ``busy`` says a
        ``drive`` of this bridge is handling (it resumes that thread itself).

        Only the graph's own asks are read (those parked naming :func:`graph_watcher`),
        every page of them: one this bridge cannot resume (a thread of another checkpointer
        whose graph has the same name) is passed over, never in the way of the rest."""
        count, after = 0, None
        while True:
            asks: list[Ask] = yield call(
                "closed_follow_ups", FOLLOW_UP_BATCH, watcher=graph_watcher(graph), after=after
            )
            for ask in asks:
                count += yield from self._follow_up_listed(graph, ask, config, busy)
            if len(asks) < FOLLOW_UP_BATCH:
                return count
            after = asks[-1].id

    def _follow_up_listed(
        self, graph: Graph, ask: Ask, config: RunnableConfig | None, busy: Callable[[str], bool]
    ) -> Steps[bool]:
        """One listed ask of :meth:`follow_up_all`: whether its thread was resumed."""
        if busy(ask.conversation_id):
            return False
        try:
            outcome = yield from self.follow_up(graph, ask, config)
        except Exception:
            log.exception("resuming the thread of ask %s failed; it is tried again later", ask.id)
            return False
        if outcome is not None and outcome.refused is not None:
            record = Record.of(ask)
            log_refused(record.thread if record else None, outcome.refused)
        return outcome is not None

    def _close_run(self, run_id: str) -> Steps[None]:
        """Before a thread starts again: its previous run's open ask is dropped and the run
        closed, so no run is left ``running``."""
        run = yield call("run", run_id)
        if run is None or run.status != RunStatus.RUNNING:
            return
        if run.pending_ask_id is not None:
            pending: Ask = yield call("get", run.pending_ask_id)
            if pending.is_open:
                yield from self.drop(pending)
                return  # the cancel closed the run
        yield call("finish_run", run_id, RESTARTED)

    def _new_run_id(self, thread: str, previous: object) -> Steps[str]:
        """The thread id for its first run, then ``<thread>#2``, ``#3``, ...: the first unused."""
        number = 1
        if isinstance(previous, str) and previous.startswith(f"{thread}#"):
            suffix = previous.rpartition("#")[2]
            number = int(suffix) if suffix.isdigit() else 1
        while True:
            candidate = thread if number == 1 else f"{thread}#{number}"
            existing = yield call("run", candidate)
            if existing is None:
                return candidate
            number += 1

    def _as_left(self, reply: Reply, conversation_id: str) -> Steps[Drive]:
        """A reply whose follow-up someone else has (a redelivered message): the state its
        first delivery left, without touching the graph."""
        if reply.kind not in (ReplyKind.SELECTED, ReplyKind.ANSWERED) or reply.run_id is None:
            return Drive(reply)
        run = yield call("run", reply.run_id)
        if run is None:
            return Drive(reply)
        if run.pending_ask_id is not None:
            pending: Ask = yield call("get", run.pending_ask_id)
            if pending.is_open and pending.conversation_id == conversation_id:
                return Drive(reply, asked=asked_reply(pending))
            return Drive(reply)
        return Drive(reply, finished=run.status != RunStatus.RUNNING and run.outcome == RunOutcome.DONE)
