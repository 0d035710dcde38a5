"""What each bridge call does to the gateway and the graph, written once as step generators.

Each step yields effects (gateway calls, graph reads and writes) and is run by the sync
or the asyncio driver of :class:`~parkgate.adapters.langgraph.ParkgateInterrupts`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from datetime import timedelta
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.types import Command, StateSnapshot

from parkgate.adapters import common
from parkgate.adapters.effects import Steps, call
from parkgate.adapters.langgraph import interrupts, review
from parkgate.adapters.langgraph.approvals import approvals, with_approvals
from parkgate.adapters.langgraph.questions import CONTEXT_KEY, UNASKABLE, Answer, Closed, Question, answer_of
from parkgate.adapters.langgraph.threads import (
    MAX_CLOSED_RESUMES,
    GetState,
    Graph,
    GraphKeepsAsking,
    Invoke,
    Outcome,
    Record,
    UpdateState,
    graph_name,
    graph_watcher,
    has_checkpoint,
    node_of,
    pending_of,
    thread_config,
    thread_id,
)
from parkgate.adapters.langgraph.toolreview import ToolReviews
from parkgate.core.kinds import RunOutcome, RunStatus
from parkgate.core.model import Ask, Reply
from parkgate.errors import InputError, RunStillAsking
from parkgate.gateway import asked_reply

log = logging.getLogger("parkgate.langgraph")


def log_refused(thread: str | None, refused: InputError) -> None:
    """Say, where no caller hears it (the watcher), why a thread was closed as ``unaskable``."""
    log.error("thread %r: its interrupt could not be asked, so it was closed as %r: %s", thread, UNASKABLE, refused)


class ThreadSteps:
    """The steps that follow a thread's asks up: park its questions, resume it, close its run."""

    def __init__(
        self,
        ttl: timedelta | None,
        lease: timedelta,
        value_of: Callable[[Answer], Any],
        reviews: ToolReviews | None = None,
    ) -> None:
        self.ttl = ttl
        self.lease = lease
        self.value_of = value_of
        self.reviews = reviews or ToolReviews({})

    def follow_up(self, graph: Graph, ask: Ask, base: RunnableConfig | None) -> Steps[Outcome | None]:
        """Resume the thread a closed ask belongs to, or park its next question.

        ``None`` when the ask is not this graph's, or its follow-up was claimed by another
        waiter (or done already).
        """
        record = Record.of(ask)
        if record is None or record.graph != graph_name(graph):
            return None
        config = thread_config(base, record.thread, ask.run_id)
        seen: StateSnapshot = yield GetState(config)
        if not has_checkpoint(seen):
            return None  # not a thread of this graph's checkpointer
        claimed: bool = yield call("claim_follow_up", ask.id, self.lease)
        if not claimed:
            return None
        snapshot: StateSnapshot = yield GetState(config)  # read again: the claim is ours now
        outcome = yield from self._claimed(graph, ask, record, config, snapshot)
        yield call("follow_up_done", ask.id)
        return outcome

    def _claimed(
        self, graph: Graph, ask: Ask, record: Record, config: RunnableConfig, snapshot: StateSnapshot
    ) -> Steps[Outcome]:
        pending = pending_of(snapshot)
        if record.question[0] not in {interrupt_id for interrupt_id, _ in pending}:
            # Resumed already (a claimer died after resuming), or started again: settle what is there.
            return (yield from self.settle(graph, config, ask.conversation_id, ask.run_id, snapshot))
        answer = answer_of(ask, record.question)
        if answer is None:
            output, after = yield from self.resume_closed(
                config, snapshot, Closed(ask.status.value, ask.id, ask.answer)
            )
        else:
            answers = (*record.answers, answer)
            try:
                question = interrupts.next_question(pending, answers)
                if question is not None:
                    asked = yield from self.ask(graph, snapshot, question, ask.conversation_id, ask.run_id, answers)
                    return Outcome(asked=asked)
            except InputError as refused:
                return (yield from self.unaskable(config, ask.conversation_id, ask.run_id, snapshot, refused))
            resume = interrupts.resume_values(pending, answers, self.value_of)
            values = snapshot.values if isinstance(snapshot.values, Mapping) else {}
            approved = approvals(pending, answers, values.get("messages") or [])  # for ApprovedBy
            output = yield Invoke(Command(resume=resume), with_approvals(config, approved))
            after = yield GetState(config)
        outcome = yield from self.settle(graph, config, ask.conversation_id, ask.run_id, after)
        return Outcome(True, output, outcome.asked, outcome.finished, outcome.refused)

    def resume_closed(
        self, config: RunnableConfig, snapshot: StateSnapshot, closed: Closed
    ) -> Steps[tuple[Any, StateSnapshot]]:
        """Resume the thread with ``closed``, and again each time it interrupts, up to
        :data:`MAX_CLOSED_RESUMES` more times; the last output and the state it left."""
        output: Any = None
        after = snapshot
        for _ in range(MAX_CLOSED_RESUMES + 1):
            if not after.interrupts:
                return output, after
            output = yield from self._close_interrupts(config, after, closed)
            after = yield GetState(config)
        if after.interrupts:
            raise GraphKeepsAsking(thread_id(config), MAX_CLOSED_RESUMES)
        return output, after

    def _close_interrupts(self, config: RunnableConfig, snapshot: StateSnapshot, closed: Closed) -> Steps[Any]:
        """Resume every pending interrupt with what a closed ask gives it. A review request
        that allows no ``reject`` is closed by writing, as the middleware's node, the
        error tool messages a reject writes (its other decisions run the tool)."""
        pending = pending_of(snapshot)
        by_state = interrupts.closed_by_state(pending)
        if not by_state:
            return (yield Invoke(Command(resume=interrupts.closed_values(pending, closed)), config))
        reason = interrupts.closed_reason(closed)
        for interrupt_id, value in by_state:
            messages = review.rejection_messages(value, (snapshot.values or {}).get("messages", []), reason)
            yield UpdateState(config, {"messages": messages}, node_of(snapshot, interrupt_id))
        return (yield Invoke(None, config))

    def unaskable(
        self, config: RunnableConfig, conversation_id: str, run_id: str, snapshot: StateSnapshot, refused: InputError
    ) -> Steps[Outcome]:
        """Close a thread whose pending interrupt cannot be asked, so that nothing is left
        interrupted, parked or ``running``: its run closes as ``unaskable``, then the thread
        is resumed with ``Closed(outcome="unaskable")`` as after a cancel. The caller raises
        ``refused``, which notes what was done."""
        run = yield call("run", run_id)
        if run is None:  # the thread's first question: the run was never made
            yield call("record_run", run_id, conversation_id, UNASKABLE)
        elif run.status == RunStatus.RUNNING:
            yield from self.finish_run(run_id, UNASKABLE)
        thread = thread_id(config)
        try:
            output, _ = yield from self.resume_closed(config, snapshot, Closed(UNASKABLE, None, None, str(refused)))
        except Exception as failure:
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
        return Outcome(True, output, finished=True, refused=refused)

    def settle(
        self, graph: Graph, config: RunnableConfig, conversation_id: str, run_id: str, snapshot: StateSnapshot
    ) -> Steps[Outcome]:
        """After the thread ran: park its first question, or close its run as ``done``."""
        run = yield call("run", run_id)
        if not snapshot.interrupts:
            if run is not None and run.status == RunStatus.RUNNING:
                yield from self.finish_run(run_id, RunOutcome.DONE)
            return Outcome(finished=True)
        if run is not None and run.status != RunStatus.RUNNING:
            return Outcome()  # a closed run is never reopened
        if run is not None and run.pending_ask_id is not None:
            pending: Ask = yield call("get", run.pending_ask_id)
            record = Record.of(pending)
            if pending.is_open and record is not None and record.question[0] in {i.id for i in snapshot.interrupts}:
                return Outcome(asked=asked_reply(pending))  # parked already
        waiting = pending_of(snapshot)
        try:
            interrupts.check_askable(waiting)  # every one, before the person is asked the first
            question = interrupts.next_question(waiting, ())
            assert question is not None  # every pending interrupt has a first question
            asked = yield from self.ask(graph, snapshot, question, conversation_id, run_id, ())
        except InputError as refused:  # the payload's, or the gateway's refusal of it
            return (yield from self.unaskable(config, conversation_id, run_id, snapshot, refused))
        return Outcome(asked=asked)

    def finish_run(self, run_id: str, outcome: str) -> Steps[None]:
        """Close a ``running`` run with ``outcome``, cancelling an ask the thread no longer has."""
        try:
            yield call("finish_run", run_id, outcome)
        except RunStillAsking as still:
            yield call("cancel", still.ask_id)
            yield call("finish_run", run_id, outcome)

    def ask(
        self,
        graph: Graph,
        snapshot: StateSnapshot,
        question: Question,
        conversation_id: str,
        run_id: str,
        answers: Sequence[Answer],
    ) -> Steps[Reply]:
        """Park ``question`` for the thread, its record (graph, thread, answers so far) in its context."""
        record = Record(graph_name(graph), thread_id(snapshot.config), question.key, tuple(answers))
        payload = self.reviews.apply(question)
        ttl = timedelta(seconds=payload.ttl_seconds) if payload.ttl_seconds is not None else self.ttl
        who = {"responders": list(payload.responders), "quorum": payload.quorum} if payload.responders else {}
        reply: Reply = yield common.ask_call(
            conversation_id,
            payload.spec,
            run_id=run_id,
            ttl=ttl,
            default=payload.default,
            phase=node_of(snapshot, question.interrupt_id),
            context={**(payload.context or {}), CONTEXT_KEY: record.to_json()},
            follow_up=graph_watcher(graph),
            **who,
            **(payload.schedule or {}),
        )
        return reply

    def drop(self, ask: Ask) -> Steps[None]:
        """Cancel an ask whose thread will not be resumed with its answer, claiming its
        follow-up first so that no waiter resumes the thread with the cancel."""
        claimed: bool = yield call("claim_follow_up", ask.id, self.lease)
        yield call("cancel", ask.id)
        if claimed:
            yield call("follow_up_done", ask.id)
