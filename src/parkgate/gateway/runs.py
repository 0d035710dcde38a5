"""The run life cycle inside a unit of work: an ask parked in its run, a message's step,
a workflow's next phase, and every close (an expiry found on read, a cancel, a
replacement), each stated in the unit's :class:`WritePlan`, and the reply each returns.

A run is ``running`` while it may still ask, and ``complete`` once it ends; an ask that
closes ends its run unless an answer (or a default) lets it go on. The plan becomes one
:class:`~parkgate.store.writes.Writes` value, which the store sends in its fastest form.
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Callable, Mapping
from datetime import datetime, timedelta
from typing import TypeVar

from parkgate.channels.base import ChannelTarget
from parkgate.channels.jobs import POST, queued_job
from parkgate.channels.threads import next_target
from parkgate.clock import Clock
from parkgate.core import events as event_log
from parkgate.core import machine, stopping_point
from parkgate.core.events import NewEvent
from parkgate.core.kinds import AskStatus, EventType, ReplyKind, RunOutcome, RunStatus
from parkgate.core.model import Ask, Reply, Run, Step
from parkgate.core.phrases import PHRASES, WORKFLOW_DONE
from parkgate.core.schedule import Fired, escalated_to
from parkgate.errors import AskAlreadyOpen, ConversationBusy, InputError, RunClosed, UnknownWorkflow
from parkgate.gateway.closing import ClosedAsk, CloseReport
from parkgate.gateway.events import NO_SUBSCRIBER, AskEvents
from parkgate.gateway.options import AskOptions
from parkgate.metrics import Metrics
from parkgate.store import Intent, Store, StoreConflict, Transaction
from parkgate.store.base import _WriteNeeded
from parkgate.store.writes import AskStep, NewAsk, QueuedCallback, QueuedChannelJob, RunChange, StoredReply, Writes
from parkgate.workflow import Phase, Workflow


class WritePlan:
    """What one unit of work writes, gathered as the gateway decides, and the asks it closed.

    ``events`` turns each event (a park, a close, a reminder, an escalation) into the
    callbacks it queues, written with it.
    """

    def __init__(self, events: AskEvents = NO_SUBSCRIBER) -> None:
        self.steps: list[AskStep] = []
        self.runs: list[Run] = []
        self.park: NewAsk | None = None
        self.reply: StoredReply | None = None
        self.closed: list[ClosedAsk] = []
        self.channel_jobs: list[QueuedChannelJob] = []
        #: How many channel jobs were handed to the transaction (the store drops those of unposted asks).
        self.channel_jobs_written = 0
        #: Reminders and escalations fired and not written yet.
        self.fired: list[Fired] = []
        #: How many callbacks the writes so far queued (the outbox changed when any did).
        self.callbacks_queued = 0
        self.events = events
        #: How many of ``closed`` were written already (see :meth:`write`).
        self._queued = 0
        #: The events logged since the last write, besides those :meth:`write` derives
        #: (a message's touch, refusal or vote; a late answer).
        self.logged: list[NewEvent] = []

    def log(self, event: NewEvent) -> None:
        """Record ``event`` in this unit's commit, in the order it happened."""
        self.logged.append(event)

    def queue_channel_job(
        self, ask_id: str, job: str, at: datetime, payload: str = "{}", post_to: ChannelTarget | None = None
    ) -> None:
        """Queue a channel job for ``ask_id`` in this unit's commit (:mod:`parkgate.channels.jobs`):
        the one call an ask event that a channel shows goes through (a park's post, a
        reply, a reminder). Without ``post_to`` it goes to the channel the ask was posted
        to, and is dropped by the store for an ask never posted. (A close needs no call:
        the store queues its update with the close.)"""
        self.channel_jobs.append(queued_job(ask_id, job, at, payload, post_to))

    def close(
        self, step: AskStep, now: datetime, idle_minutes: float | None = None, reason: str | None = None
    ) -> ClosedAsk:
        """Write ``step``, which closes its ask at ``now`` (with its ``closed`` event, which
        keeps ``reason``), and report the close after commit."""
        self.steps.append(step)
        self.log(event_log.closed(step.ask, now, reason))
        closed = ClosedAsk(step.ask, idle_minutes)
        self.closed.append(closed)
        return closed

    def park_new(self, park: NewAsk, now: datetime, channel: str | None = None) -> None:
        """Write ``park``'s new ask (posted to ``channel``, when given) with its ``parked`` event."""
        self.park = park
        self.log(event_log.parked(park.ask, now, channel))

    def write(self, tx: Transaction, clock: Clock) -> None:
        """Hand what is planned so far to ``tx`` as one value, with the callbacks of its
        events and the channel jobs queued; the plan then starts empty (its closes stay to
        report). A posted ask's close queues its channel update in the store itself
        (:mod:`parkgate.channels.jobs`), whichever statement closes it."""
        # A message that touches no events, channel or schedule (most) builds none of their values.
        callbacks = self._callbacks(clock) if self._has_events() else ()
        logged = self._logged(clock)
        self._queued = len(self.closed)
        self.callbacks_queued += len(callbacks)
        jobs = tuple(self.channel_jobs) if self.channel_jobs else ()
        fired = tuple(item.ask for item in self.fired) if self.fired else ()
        if (
            self.steps
            or self.runs
            or self.park is not None
            or self.reply is not None
            or callbacks
            or jobs
            or fired
            or logged
        ):
            writes = Writes(tuple(self.steps), tuple(self.runs), self.park, self.reply, callbacks, jobs, fired, logged)
            tx.write(writes)
            self.channel_jobs_written += len(jobs)
            self.steps, self.runs, self.park, self.reply, self.channel_jobs, self.fired = [], [], None, None, [], []
            self.logged = []

    def _logged(self, clock: Clock) -> tuple[NewEvent, ...]:
        """Every event of what is planned, in order: those logged as they happened (a
        message's, each close's, the park's), then the fired schedule's."""
        if not self.fired:
            return tuple(self.logged)
        now = clock.now()
        logged = list(self.logged)
        for item in self.fired:
            if item.reminded:
                logged.append(event_log.reminded(item.ask, now, item.ask.responders))
            if item.escalated:
                logged.append(event_log.escalated(item.ask, now, escalated_to(item.ask)))
        return tuple(logged)

    def _has_events(self) -> bool:
        opened = self.park is not None and self.events.events_url is not None
        return len(self.closed) > self._queued or bool(self.fired) or opened

    def _callbacks(self, clock: Clock) -> tuple[QueuedCallback, ...]:
        """The callbacks of the events since the last write: closes, a park, reminders and escalations."""
        now, queued = clock.now(), self.events.queued
        callbacks = [row for item in self.closed[self._queued :] for row in queued(EventType.CLOSED, item.ask, now)]
        if self.park is not None:
            callbacks += queued(EventType.OPENED, self.park.ask, now)
        for item in self.fired:
            if item.reminded:
                callbacks += queued(EventType.REMINDER, item.ask, now)
            if item.escalated:
                callbacks += queued(EventType.ESCALATED, item.ask, now)
        return tuple(callbacks)


def new_run(
    run_id: str, conversation_id: str, now: datetime, workflow: str | None = None, owner: str | None = None
) -> Run:
    """A run that starts now, with nothing asked yet, owned by ``owner``."""
    return Run(run_id, conversation_id, workflow, RunStatus.RUNNING, None, {}, None, now, now, owner)


def run_with(
    run: Run,
    now: datetime,
    status: RunStatus,
    outcome: str | None = None,
    pending_ask_id: str | None = None,
    context: Mapping[str, str] | None = None,
) -> Run:
    """``run`` as it stands after a change at ``now`` (its answers replaced by ``context`` when given)."""
    answers = dict(context) if context is not None else run.context
    return dataclasses.replace(
        run, status=status, outcome=outcome, context=answers, pending_ask_id=pending_ask_id, updated_at=now
    )


def changed_run(run: Run, change: RunChange) -> Run:
    """``run`` with ``change`` applied, as the store leaves it."""
    return run_with(run, change.at, change.status, change.outcome, change.pending_ask_id)


def ended(run_id: str, outcome: str, now: datetime) -> RunChange:
    """A run ends with its pending ask: a run is never left ``running`` by a close."""
    return RunChange(run_id, RunStatus.COMPLETE, outcome, None, now)


def goes_on(run_id: str, now: datetime) -> RunChange:
    """A run goes on after its ask closed (answered, or a default stood in): nothing pending."""
    return RunChange(run_id, RunStatus.RUNNING, None, None, now)


def asked_reply(ask: Ask) -> Reply:
    """The ``asked`` reply for an open ask: its rendered question (what parking it returns)."""
    text = PHRASES[ReplyKind.ASKED].format(menu=machine.render_question(ask))
    return Reply(ReplyKind.ASKED, text, parked=True, ask_id=ask.id, run_id=ask.run_id)


#: The reply to every message with nothing parked (a frozen value, shared).
_PASS = Reply(ReplyKind.PASS, PHRASES[ReplyKind.PASS], parked=False)


def pass_reply() -> Reply:
    """The reply to a message with nothing parked: route it onward as usual."""
    return _PASS


def expired_pass_reply(ask: Ask) -> Reply:
    """The ``pass`` reply to a message that found its conversation's ask past its TTL."""
    return Reply(ReplyKind.PASS, PHRASES[ReplyKind.PASS], parked=False, expired_ask_id=ask.id, run_id=ask.run_id)


def step_reply(result: Step) -> Reply:
    """The reply to a message the state machine decided."""
    return Reply(
        kind=result.kind,
        text=result.text,
        parked=result.parked,
        ask_id=result.ask.id,
        answer=result.answer,
        option_index=result.option_index,
        run_id=result.ask.run_id,
    )


def with_more_text(reply: Reply, text: str, *, parked: bool, next_ask: Reply | None = None) -> Reply:
    """``reply`` with ``text`` in place of its own (a workflow's next phase or closing words)."""
    return dataclasses.replace(reply, text=text, parked=parked, next_ask=next_ask)


def new_id() -> str:
    """A new ask or run id."""
    return uuid.uuid4().hex


class RunLifeCycle:
    """Decides, inside one transaction, what parking, a message or a read does to asks and runs."""

    def __init__(self, ttl: timedelta, escalate_after: int, workflows: dict[str, Workflow]) -> None:
        self.ttl = ttl
        self.escalate_after = escalate_after
        self.workflows = workflows

    def workflow(self, name: str) -> Workflow:
        try:
            return self.workflows[name]
        except KeyError:
            raise UnknownWorkflow(name, sorted(self.workflows)) from None

    # -- closes ---------------------------------------------------------------------
    def read(self, plan: WritePlan, ask: Ask, now: datetime) -> Ask:
        """``ask`` as a read at ``now`` leaves it: closed as expired if past its TTL."""
        expiry = machine.on_read(ask, now)
        return ask if expiry is None else self._record_expiry(plan, ask, expiry.ask, now)

    def expire(self, plan: WritePlan, ask: Ask, now: datetime, outcome: str = RunOutcome.EXPIRED.value) -> Ask:
        """Close open ``ask`` as expired now, as its TTL would; another ``outcome`` (a
        dismissed dialog, say) is recorded on the ask and its run in place of ``expired``."""
        expired = machine.expire(ask, now).ask.evolve(outcome=outcome)
        return self._record_expiry(plan, ask, expired, now)

    def _record_expiry(self, plan: WritePlan, ask: Ask, expired: Ask, now: datetime) -> Ask:
        # A default stands in for the answer: the run goes on, as after an answer.
        outcome = expired.outcome or RunOutcome.EXPIRED.value
        change = ended(ask.run_id, outcome, now) if ask.default is None else goes_on(ask.run_id, now)
        # Only the TTL's own expiry is an expiry in the logs (the ``ask_expired`` line).
        idle = ask.idle_minutes(now) if outcome == RunOutcome.EXPIRED.value else None
        plan.close(AskStep(expired, change), now, idle_minutes=idle)
        return expired

    def cancel(
        self,
        plan: WritePlan,
        ask: Ask,
        now: datetime,
        outcome: str,
        closed_by: str | None = None,
        reason: str | None = None,
    ) -> Ask:
        """Close open ``ask`` as cancelled with ``outcome`` (by ``closed_by``, for ``reason``), and its run with it."""
        cancelled = machine.cancel(ask, now, outcome, closed_by)
        plan.close(AskStep(cancelled, ended(ask.run_id, outcome, now)), now, reason=reason)
        return cancelled

    def pending_ask(self, tx: Transaction, plan: WritePlan, run: Run | None, now: datetime) -> Ask | None:
        """``run``'s pending ask as a read at ``now`` leaves it."""
        if run is None or run.pending_ask_id is None:
            return None
        pending = tx.ask(run.pending_ask_id)
        return None if pending is None else self.read(plan, pending, now)

    # -- parking ----------------------------------------------------------------------
    def clear_for_new_ask(
        self, tx: Transaction, plan: WritePlan, conversation_id: str, replace: bool, now: datetime, owner: str | None
    ) -> None:
        """Make room for a new ask: the open one expires on this read, or is replaced (``replace``).

        An ``owner`` (a named token) replaces only its own asks: another owner's open ask
        raises :class:`ConversationBusy`, which does not name it, ``replace`` or not.
        """
        existing = tx.open_ask(conversation_id)
        if existing is None or not self.read(plan, existing, now).is_open:
            return
        if owner is not None and existing.owner != owner:
            raise ConversationBusy(conversation_id)
        if not replace:
            raise AskAlreadyOpen(conversation_id, existing.id)
        self.cancel(plan, existing, now, RunOutcome.REPLACED.value)

    def joined_run(
        self, tx: Transaction, run_id: str, conversation_id: str, owner: str | None, now: datetime
    ) -> Run | None:
        """The stored run a park names, ``None`` if there is none (the park starts it).

        A run takes a new ask only while it is running and, for an ``owner`` (a named
        token), only if it is that owner's: a complete run, one whose pending ask has
        lapsed past its TTL with no default (its next read ends it), and another owner's
        run all raise the one :class:`RunClosed`, so a run is never reopened and a caller
        learns nothing of a run it does not own. Nothing is written here.
        """
        run = tx.run(run_id)
        if run is None:
            return None
        if run.status != RunStatus.RUNNING or (owner is not None and run.owner != owner):
            raise RunClosed(run_id)
        pending = tx.ask(run.pending_ask_id) if run.pending_ask_id is not None else None
        if pending is not None and pending.default is None and machine.on_read(pending, now) is not None:
            raise RunClosed(run_id)
        if run.conversation_id != conversation_id:
            raise InputError(f"run {run_id} belongs to another conversation")
        return run

    def new_ask(self, run: Run, spec: stopping_point.AskSpec, now: datetime, options: AskOptions) -> Ask:
        """A new open ask of ``spec`` in ``run``, parked now with ``options`` (checked and fitted).

        Raises:
            InputError: A reminder or the escalation does not fall due before the TTL.
        """
        ttl = options.ttl or self.ttl
        options.check_schedule(ttl)
        return Ask(
            id=new_id(),
            conversation_id=run.conversation_id,
            run_id=run.id,
            kind=spec.kind,
            prompt=spec.prompt,
            options=spec.options,
            status=AskStatus.OPEN,
            asked_at=now,
            last_touched=now,
            ttl_seconds=ttl.total_seconds(),
            **options.kept(),
        )

    def park(
        self,
        plan: WritePlan,
        run: Run,
        ask: Ask,
        now: datetime,
        follow_up: bool | str = False,
        post_to: ChannelTarget | None = None,
    ) -> Reply:
        """Park ``ask`` in ``run``, which is running with it pending (and post it to ``post_to``);
        ``follow_up`` is true, or names the watcher that follows the ask up."""
        running = run_with(run, now, RunStatus.RUNNING, pending_ask_id=ask.id)
        watcher = follow_up if isinstance(follow_up, str) else None
        plan.park_new(NewAsk(ask, running, bool(follow_up), watcher), now, post_to.channel if post_to else None)
        if post_to is not None:
            plan.queue_channel_job(ask.id, POST, now, post_to=post_to)
        return asked_reply(ask)

    def park_phase(self, plan: WritePlan, run: Run, phase: Phase, now: datetime, options: AskOptions) -> Reply:
        """Park workflow ``phase`` in ``run`` with ``options`` (its owner, responders and quorum;
        a phase that names its own responders is for them, with its quorum)."""
        spec = stopping_point.make_spec(phase.kind, phase.prompt_for(run.context), phase.options)
        if phase.responders:
            options = dataclasses.replace(options, responders=phase.responders, quorum=phase.quorum)
        with_schedule = options.with_schedule(phase.schedule)
        fitted = dataclasses.replace(with_schedule, phase=phase.name).fitted(spec)
        ask = self.new_ask(run, spec, now, fitted)
        return self.park(plan, run, ask, now, post_to=options.post_to)

    # -- messages ---------------------------------------------------------------------
    def decide(
        self, tx: Transaction, plan: WritePlan, ask: Ask | None, message: str, now: datetime, sender: str | None = None
    ) -> Reply:
        """The reply to ``message`` from ``sender`` in a conversation whose open ask (as read) is ``ask``."""
        if ask is None:
            return pass_reply()
        result = machine.step(ask, message, now, self.escalate_after, sender)  # expiry on read comes first
        if result.expired:
            self._record_expiry(plan, ask, result.ask, now)
            return expired_pass_reply(ask)
        reply = step_reply(result)
        plan.log(machine.message_event(ask, result.ask, result.kind, message, sender, now))
        if result.kind is ReplyKind.NOT_YOURS:
            return reply  # nothing changes but the log: not a miss, no touch
        if result.ask.is_open:
            plan.steps.append(AskStep(result.ask))
        elif result.kind is ReplyKind.CANCELLED:
            plan.close(AskStep(result.ask, ended(ask.run_id, RunOutcome.CANCELLED.value, now)), now)
        elif result.ask.phase is None:  # a plain ask: its run goes on, with nothing pending
            plan.close(AskStep(result.ask, goes_on(ask.run_id, now)), now)
        else:
            plan.close(AskStep(result.ask), now)
            return self._advance(tx, plan, result.ask, reply, now)
        return reply

    def _advance(self, tx: Transaction, plan: WritePlan, answered: Ask, reply: Reply, now: datetime) -> Reply:
        """After a workflow phase's answer: its run asks the next phase or finishes."""
        assert answered.phase is not None
        run = tx.run(answered.run_id)
        if run is None:
            return reply
        answers = {**run.context, answered.phase: answered.answer or ""}  # a run keeps its answers by phase
        run = run_with(run, now, RunStatus.RUNNING, context=answers)
        if run.workflow is None:  # the caller's own phases: its run goes on
            plan.runs.append(run)
            return reply
        flow = self.workflow(run.workflow)
        following = flow.after(answered.phase, answers)
        if following is None:
            plan.runs.append(run_with(run, now, RunStatus.COMPLETE, RunOutcome.DONE.value))
            output = flow.finish(answers)
            if not output.strip():  # a finish with nothing to say still tells the person
                output = WORKFLOW_DONE
            return with_more_text(reply, f"{reply.text}\n\n{output}", parked=False)
        # The next phase is for the same people as the one answered: the start's, unless the
        # phases say who answers each (then one that names nobody is anyone's).
        if flow.names_responders:
            who = AskOptions(owner=answered.owner)
        else:
            who = AskOptions(owner=answered.owner, responders=answered.responders, quorum=answered.quorum)
        # ... and posted where that one was, in its thread (:mod:`parkgate.channels.threads`).
        target = next_target(tx.channels.post_of(answered.id))
        who = dataclasses.replace(who, post_to=target, watched=target is not None)
        following_reply = self.park_phase(plan, run, following, now, who)
        return with_more_text(reply, f"{reply.text}\n\n{following_reply.text}", parked=True, next_ask=following_reply)


#: A unique-key conflict means a racing worker committed first; the retry sees its work.
CONFLICT_RETRIES = 5

Result = TypeVar("Result")


class UnitRunner:
    """Runs a call's body in a store transaction, retried on a conflict, and reports closes."""

    def __init__(self, store: Store, clock: Clock, metrics: Metrics, report: CloseReport) -> None:
        self._store = store
        self._clock = clock
        self._metrics = metrics
        self._report = report
        #: Called after a commit that queued channel jobs (the deliverer's wake, once a channel is added).
        self.on_channel_jobs: Callable[[], None] = lambda: None
        #: The ask event point: what each event queues (``PARKGATE_EVENTS_URL`` read once, here).
        self._events = AskEvents()

    def run(self, body: Callable[[Transaction, WritePlan], Result], intent: Intent = Intent.READ_FIRST) -> Result:
        """``body``'s result, from the one try of it that committed (a conflict retries it).

        Args:
            body: The unit: it reads through the transaction and plans its writes.
            intent: ``READ_FIRST`` (a unit that may find nothing to change reads without
                the write lock on SQLite; a conflict at its first write retries with the
                lock first), ``WRITE`` (a unit that always writes takes the lock first),
                or ``READ_ONLY`` on an event loop's thread: one try, and
                :class:`_WriteNeeded` if it would write or meets a conflict.
        """
        for attempt in range(CONFLICT_RETRIES):
            plan = WritePlan(self._events)
            try:
                with self._store.transaction(Intent.WRITE if attempt else intent) as tx:
                    result = body(tx, plan)
                    plan.write(tx, self._clock)
                break
            except StoreConflict:
                if intent is Intent.READ_ONLY:
                    raise _WriteNeeded("a conflict: the unit runs again as a writer") from None
                if attempt == CONFLICT_RETRIES - 1:
                    raise
                self._metrics.retry()
        if plan.closed:
            self._report.committed(plan.closed)
        if plan.channel_jobs_written or plan.closed:  # a posted ask's close queued its update
            self.on_channel_jobs()
        if plan.callbacks_queued:
            self._report.queued()
        return result
