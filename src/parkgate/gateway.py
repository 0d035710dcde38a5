"""The gateway: one store transaction per inbound message, decided by the pure core.

Each call reads the conversation's open ask (locked), enforces its TTL on the spot
(an expired ask is closed as ``expired`` by the read that finds it; there is no
sweeper), lets the state machine decide, writes, and commits. Every path returns a
:class:`Reply` with a kind; only ``pass`` may be routed to a model.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from parkgate.delivery.deliverer import DelivererThread

from parkgate.checks import (
    MAX_SKILL_OUTPUT_CHARS,
    check_context,
    check_default,
    check_duration,
    check_expect,
    check_flag,
    check_id,
    check_limit,
    check_message,
    check_optional_id,
    check_park_args,
    check_workflow,
    wait_seconds,
)
from parkgate.clock import Clock, as_clock
from parkgate.core import expect as expected_form
from parkgate.core import machine, stopping_point
from parkgate.core.expect import Expect
from parkgate.core.model import Ask, Step
from parkgate.core.phrases import PHRASES, WORKFLOW_DONE, AskKind, AskStatus, ReplyKind
from parkgate.errors import (
    AskAlreadyOpen,
    CallbackNotFailed,
    InputError,
    RunStillAsking,
    UnknownAsk,
    UnknownRun,
    UnknownWorkflow,
)
from parkgate.metrics import Metrics
from parkgate.reply import Reply
from parkgate.signal import FALLBACK_READ_SECONDS, Change, CloseSignal
from parkgate.store import DEFAULT_URL, Run, Store, StoreConflict, Transaction, open_store
from parkgate.store.base import AskGauges, CallbackState
from parkgate.workflow import Phase, Workflow

log = logging.getLogger("parkgate")

DEFAULT_TTL = timedelta(hours=6)
#: A unique-key conflict means a racing worker committed first; the retry sees its work.
CONFLICT_RETRIES = 5

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class _Closed:
    """An ask closed inside a transaction: reported to metrics and logs after commit."""

    ask: Ask
    idle_minutes: float | None = None


class Gateway:
    """Parks asks, matches replies, and closes every ask it finds past its TTL.

    ``store_url`` is ``sqlite:///parkgate.db`` (default), a file path, or
    ``postgresql://...``; or pass an open ``store``. ``clock`` is injected so that
    expiry is tested without sleeping. A bad option (``ttl`` not a positive duration,
    ``escalate_after`` not a whole number of at least 1, ...) raises
    :class:`InputError` before any store is opened.
    """

    def __init__(
        self,
        store_url: str = DEFAULT_URL,
        *,
        store: Store | None = None,
        ttl: timedelta | float = DEFAULT_TTL,
        clock: Clock | Callable[[], datetime] | None = None,
        escalate_after: int = machine.DEFAULT_ESCALATE_AFTER,
        workflows: Iterable[Workflow] = (),
        surface: str = "library",
        metrics: Metrics | None = None,
        deliver: bool = False,
    ) -> None:
        # Every option is checked before the store is opened: a bad one creates nothing.
        if store is None and not isinstance(store_url, str):
            raise InputError(f"store_url must be a string, not {type(store_url).__name__}")
        if isinstance(escalate_after, bool) or not isinstance(escalate_after, int):
            raise InputError(f"escalate_after must be a whole number, not {type(escalate_after).__name__}")
        if escalate_after < 1:
            raise InputError("escalate_after must be at least 1")
        default_ttl = check_duration(ttl, "ttl")
        check_flag(deliver, "deliver")
        flows = list(workflows)
        for flow in flows:
            check_workflow(flow)
        self.store = store if store is not None else open_store(store_url)
        self.ttl = default_ttl
        self.clock: Clock = as_clock(clock)
        self.escalate_after = escalate_after
        self.workflows: dict[str, Workflow] = {flow.name: flow for flow in flows}
        self.metrics = metrics or Metrics(surface)
        self.metrics.read_gauges_with(self.gauges)
        #: Every waiter on this gateway's asks hears their close here (see parkgate.signal).
        self.signal = CloseSignal(self.store.watch)
        #: Set while a deliverer runs on this gateway (``deliver=True``, ``parkgate serve``).
        self.delivering = False
        self._undelivered_warning = _UndeliveredWarning()
        self._deliverer: DelivererThread | None = None
        if deliver:
            from parkgate.delivery.deliverer import DelivererThread

            self._deliverer = DelivererThread(self)

    # -- lifecycle -------------------------------------------------------------
    def close(self) -> None:
        """Stop the deliverer (``deliver=True``) and close the store (its connections or pool).

        ``with Gateway(...) as gw:`` does it on exit. Closing twice is harmless; any other
        call afterwards raises :class:`~parkgate.store.StoreClosed`.
        """
        deliverer, self._deliverer = self._deliverer, None
        if deliverer is not None:
            deliverer.stop()
        self.signal.close()
        self.store.close()

    def __enter__(self) -> Gateway:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def register(self, workflow: Workflow) -> None:
        """Make ``workflow`` startable by name with :meth:`start` (replacing one of the same name)."""
        check_workflow(workflow)
        self.workflows[workflow.name] = workflow

    # -- parking ---------------------------------------------------------------
    def ask(
        self,
        conversation_id: str,
        prompt: str,
        options: Sequence[str] | None = None,
        kind: AskKind | str | None = None,
        run_id: str | None = None,
        ttl: timedelta | float | None = None,
        *,
        replace: bool = False,
        default: str | None = None,
        callback_url: str | None = None,
        phase: str | None = None,
        context: Mapping[str, Any] | None = None,
        watched: bool = False,
        owner: str | None = None,
        expect: Expect | str | Mapping[str, Any] | None = None,
        follow_up: bool = False,
    ) -> Reply:
        """Park a question in ``conversation_id``; the reply (``asked``) carries the menu.

        ``kind`` defaults to ``choice`` when options are given, else ``text``. A
        ``default`` is recorded as the answer if the ask expires (it still closes as
        ``expired``); for a choice it must be one of the options, compared after the
        whitespace folding the labels get, and is stored folded. ``ttl`` (a timedelta
        or seconds, positive) overrides the gateway's. ``expect`` makes a text ask take
        only answers of one form (:class:`~parkgate.core.expect.Expect`, a form's name
        such as ``"integer"`` or ``"email"``, or a mapping of its fields); any other
        answer is a miss whose retry line says what is wanted, and a ``default`` must be
        of that form. Raises :class:`AskAlreadyOpen` unless ``replace`` is true.
        ``context`` (a JSON object of at most 16 KiB) is kept with the ask and shown with
        it. An ask with a ``callback_url``, or ``watched``, has something waiting on its
        close: a deliverer reads it when its TTL falls due (a *due read*), so it closes on
        time even if nobody else reads it. ``owner`` names who parks it (the HTTP service
        records its token's name): :meth:`open_asks` and :meth:`count_open_asks` can keep
        to one owner's asks, and a workflow's later phases keep their first ask's owner.
        ``follow_up`` (which implies ``watched``) records, with the ask, that a waiter acts
        on its close: once closed, the ask is listed by :meth:`closed_follow_ups` until the
        waiter calls :meth:`follow_up_done`, so a waiter that was not running at the close
        still finds it. A bad argument raises :class:`InputError` (a bad prompt or option list
        :class:`StoppingPointError`) before anything is read or written.
        """
        check_id(conversation_id, "conversation_id")
        run_id, ask_ttl = check_park_args(run_id, ttl, replace, callback_url)
        if phase is not None:
            check_id(phase, "phase")
        check_flag(watched, "watched")
        check_flag(follow_up, "follow_up")
        context = check_context(context)
        check_optional_id(owner, "owner")
        # An explicit option list (even an empty one) means a choice: [] is an error, not a text ask.
        chosen_kind = kind if kind is not None else (AskKind.TEXT if options is None else AskKind.CHOICE)
        spec = stopping_point.make_spec(chosen_kind, prompt, options)
        default = check_default(spec, default)
        form = check_expect(spec, expect, default)
        watched = watched or follow_up or callback_url is not None
        extra = _Extra(default, callback_url, phase, context, watched, owner, form, follow_up)
        return self._park(conversation_id, spec, run_id, ask_ttl, replace, extra)

    def ask_from_text(
        self,
        conversation_id: str,
        skill_output: str,
        run_id: str | None = None,
        ttl: timedelta | float | None = None,
        *,
        replace: bool = False,
        callback_url: str | None = None,
        owner: str | None = None,
    ) -> Reply:
        """Park the stopping point marked in a skill's output (see :mod:`stopping_point`).

        Output without a marker is not an error: the reply is ``pass``. The other
        arguments are :meth:`ask`'s, checked the same way (also when there is no marker).
        """
        check_id(conversation_id, "conversation_id")
        run_id, ask_ttl = check_park_args(run_id, ttl, replace, callback_url)
        check_optional_id(owner, "owner")
        text = check_message(skill_output, limit=MAX_SKILL_OUTPUT_CHARS, what="skill output")
        spec = stopping_point.find(text)
        if spec is None:
            # Nothing was parked, but it is still a reply a surface sends: counted like any other.
            return self._counted(Reply(ReplyKind.PASS, PHRASES[ReplyKind.PASS], parked=False))
        extra = _Extra(callback_url=callback_url, watched=callback_url is not None, owner=owner)
        return self._park(conversation_id, spec, run_id, ask_ttl, replace, extra)

    def start(
        self,
        conversation_id: str,
        workflow: str,
        *,
        replace: bool = False,
        run_id: str | None = None,
        owner: str | None = None,
    ) -> Reply:
        """Start a registered workflow: its first phase is parked (``asked``).

        ``workflow`` is a registered name (:class:`UnknownWorkflow` if it is not);
        ``replace`` is as in :meth:`ask`. A workflow always starts a new run: ``run_id``
        names it, and naming a run that exists already is an :class:`InputError` that
        changes nothing (an old run's answers and workflow would otherwise mix with the
        new one's). ``owner`` is as in :meth:`ask`, and every phase's ask keeps it.
        """
        check_id(conversation_id, "conversation_id")
        if not isinstance(workflow, str):
            raise InputError(f"workflow must be a workflow's name (a string), not {type(workflow).__name__}")
        check_flag(replace, "replace")
        check_optional_id(run_id, "run_id")
        check_optional_id(owner, "owner")
        flow = self._workflow(workflow)
        given_run = run_id is not None
        run_id = run_id or _new_id()
        now = self.clock.now()

        def body(tx: Transaction) -> tuple[Reply, list[_Closed]]:
            if given_run and tx.run(run_id) is not None:
                raise InputError(f"run {run_id} already exists: a workflow starts a new run (leave run_id out)")
            closed = self._clear_for_new_ask(tx, conversation_id, replace, now)
            run = Run(run_id, conversation_id, flow.name, "running", None, {}, None, now, now)
            reply = self._park_phase(tx, run, flow.first, now, owner)
            return reply, closed

        return self._counted(self._transact(body))

    def _park(
        self,
        conversation_id: str,
        spec: stopping_point.AskSpec,
        run_id: str | None,
        ttl: timedelta | None,
        replace: bool,
        extra: _Extra,
    ) -> Reply:
        """Park ``spec``; every argument has been checked by the caller."""
        now = self.clock.now()
        given_run = run_id is not None
        run_id = run_id or _new_id()

        def body(tx: Transaction) -> tuple[Reply, list[_Closed]]:
            closed = self._clear_for_new_ask(tx, conversation_id, replace, now)
            # A new run id needs no read: only a caller's own run id can name an existing run.
            run = (tx.run(run_id) if given_run else None) or Run(
                run_id, conversation_id, None, "running", None, {}, None, now, now
            )
            if run.conversation_id != conversation_id:
                raise InputError(f"run {run_id} belongs to another conversation")
            ask = self._new_ask(run, spec, now, ttl, extra)
            _save_run(tx, run, now, status="running", outcome=None, pending_ask_id=ask.id)
            tx.insert_ask(ask)
            if extra.follow_up:
                tx.insert_follow_up(ask.id)
            return asked_reply(ask), closed

        reply = self._counted(self._transact(body))
        if extra.watched:  # the earliest due time may be this one now
            self.signal.changed(Change.DUE, reply.ask_id)
        return reply

    def _new_ask(
        self,
        run: Run,
        spec: stopping_point.AskSpec,
        now: datetime,
        ttl: timedelta | None,
        extra: _Extra,
    ) -> Ask:
        return Ask(
            id=_new_id(),
            conversation_id=run.conversation_id,
            run_id=run.id,
            kind=spec.kind,
            prompt=spec.prompt,
            options=spec.options,
            status=AskStatus.OPEN,
            asked_at=now,
            last_touched=now,
            ttl_seconds=(ttl or self.ttl).total_seconds(),
            phase=extra.phase,
            default=extra.default,
            callback_url=extra.callback_url,
            watched=extra.watched,
            context=extra.context,
            owner=extra.owner,
            expect=extra.expect,
        )

    def _clear_for_new_ask(self, tx: Transaction, conversation_id: str, replace: bool, now: datetime) -> list[_Closed]:
        existing = tx.open_ask(conversation_id)
        if existing is None:
            return []
        if existing.is_expired(now):
            return [self._expire(tx, existing, now)]
        if not replace:
            raise AskAlreadyOpen(conversation_id, existing.id)
        replaced = machine.cancel(existing, now, outcome="replaced")
        tx.save_ask(replaced)
        self._finish_run(tx, replaced, now, outcome="replaced")
        return [_Closed(replaced)]

    # -- replies ---------------------------------------------------------------
    def handle(self, conversation_id: str, text: str | bytes, message_id: str | None = None) -> Reply:
        """Match one inbound message against the conversation's parked ask.

        With nothing parked (or an ask that just expired) the reply is ``pass``: route
        the message onward as usual. The same ``message_id`` twice returns the first
        reply and changes nothing. Bad input raises :class:`InputError` before
        anything is read or written.
        """
        check_id(conversation_id, "conversation_id")
        message = check_message(text)
        if message_id is not None:
            check_id(message_id, "message_id")
        now = self.clock.now()
        replayed = False

        def body(tx: Transaction) -> tuple[Reply, list[_Closed]]:
            nonlocal replayed
            earlier, ask = tx.message_context(conversation_id, message_id)
            replayed = earlier is not None  # set on every try: a retry may read for real
            if earlier is not None:
                return Reply.from_json(earlier), []
            reply, closed = self._decide(tx, ask, message, now)
            if message_id is not None:
                tx.remember_reply(conversation_id, message_id, reply.to_json(), now)
            return reply, closed

        reply = self._transact(body)
        # A redelivery changes nothing, the metrics included: its reply was counted once.
        return reply if replayed else self._counted(reply)

    def _decide(self, tx: Transaction, ask: Ask | None, message: str, now: datetime) -> tuple[Reply, list[_Closed]]:
        if ask is None:
            return Reply(ReplyKind.PASS, PHRASES[ReplyKind.PASS], parked=False), []
        if ask.is_expired(now):
            return _passed_expired(ask), [self._expire(tx, ask, now)]
        result = machine.step(ask, message, now, self.escalate_after)
        tx.save_ask(result.ask)
        reply = _reply_for(result)
        if result.ask.is_open:
            return reply, []
        closed = [_Closed(result.ask)]
        if result.kind is ReplyKind.CANCELLED:
            self._finish_run(tx, result.ask, now, outcome="cancelled")
            return reply, closed
        return self._advance(tx, result.ask, reply, now), closed

    def _advance(self, tx: Transaction, answered: Ask, reply: Reply, now: datetime) -> Reply:
        """After a selection/answer: a workflow run asks its next phase or finishes."""
        if answered.phase is None:  # a plain ask: its run stays running, with nothing pending
            tx.set_run_state(answered.run_id, "running", None, None, now)
            return reply
        run = tx.run(answered.run_id)
        if run is None or run.workflow is None:
            if run is not None:
                _save_run(tx, run, now, status="running", outcome=None, pending_ask_id=None)
            return reply
        flow = self._workflow(run.workflow)
        answers = {**run.context, answered.phase: answered.answer or ""}
        run = _save_run(tx, run, now, status="running", outcome=None, pending_ask_id=None, context=answers)
        following = flow.after(answered.phase, answers)
        if following is None:
            _save_run(tx, run, now, status="complete", outcome="done", pending_ask_id=None)
            output = flow.finish(answers)
            if not output.strip():  # a finish with nothing to say still tells the person
                output = WORKFLOW_DONE
            return _with_text(reply, f"{reply.text}\n\n{output}", parked=False)
        nxt = self._park_phase(tx, run, following, now, answered.owner)
        return _with_text(reply, f"{reply.text}\n\n{nxt.text}", parked=True, followup=nxt)

    def _park_phase(self, tx: Transaction, run: Run, phase: Phase, now: datetime, owner: str | None) -> Reply:
        spec = stopping_point.make_spec(phase.kind, phase.prompt_for(run.context), phase.options)
        ask = self._new_ask(run, spec, now, None, _Extra(phase=phase.name, owner=owner))
        _save_run(tx, run, now, status="running", outcome=None, pending_ask_id=ask.id)
        tx.insert_ask(ask)
        return asked_reply(ask)

    def _expire(self, tx: Transaction, ask: Ask, now: datetime) -> _Closed:
        result = machine.expire(ask, now)
        tx.save_ask(result.ask)
        if ask.default is None:
            self._finish_run(tx, result.ask, now, outcome="expired")
        else:
            tx.set_run_state(ask.run_id, "running", None, None, now)
        return _Closed(result.ask, idle_minutes=ask.idle_minutes(now))

    def _finish_run(self, tx: Transaction, ask: Ask, now: datetime, outcome: str) -> None:
        """Close the run's pending ask as complete: a run is never left 'running'."""
        tx.set_run_state(ask.run_id, "complete", outcome, None, now)

    # -- reads -----------------------------------------------------------------
    def get(self, ask_id: str) -> Ask:
        """One ask by id. Reading an ask past its TTL closes it as ``expired``."""
        check_id(ask_id, "ask_id")
        now = self.clock.now()

        def body(tx: Transaction) -> tuple[Ask, list[_Closed]]:
            ask = tx.ask(ask_id)
            if ask is None:
                raise UnknownAsk(ask_id)
            if ask.is_expired(now):
                closed = self._expire(tx, ask, now)
                return closed.ask, [closed]
            return ask, []

        return self._transact(body)

    def cancel(self, ask_id: str, *, outcome: str = "cancelled") -> Ask:
        """An operator's cancel: close the ask as ``cancelled`` (and its run as complete).

        ``outcome`` (an id-like string) is recorded on the ask and its run and says why,
        say ``"abandoned"`` when whoever waited for the answer is gone. An ask already
        closed is returned as it is; an expired one is closed as expired.
        """
        check_id(outcome, "outcome")

        def close(tx: Transaction, ask: Ask, now: datetime) -> _Closed:
            if ask.is_expired(now):
                return self._expire(tx, ask, now)
            cancelled = machine.cancel(ask, now, outcome)
            tx.save_ask(cancelled)
            self._finish_run(tx, cancelled, now, outcome=outcome)
            return _Closed(cancelled)

        return self._close_open_ask(ask_id, close)

    def expire(self, ask_id: str) -> Ask:
        """Close an open ask as ``expired`` now, as its TTL would.

        The same closing as a read that finds the ask past its TTL: status and outcome
        ``expired``, its default (if any) recorded as the answer, its run closed as
        complete (``expired``), or left running with nothing pending when a default
        stands in, and the callback, the metrics and one ``ask_expired`` log line. An
        ask already closed is returned unchanged.
        """
        return self._close_open_ask(ask_id, self._expire)

    def _close_open_ask(self, ask_id: str, close: Callable[[Transaction, Ask, datetime], _Closed]) -> Ask:
        """Read ``ask_id`` and, while it is open, ``close`` it, in one transaction."""
        check_id(ask_id, "ask_id")
        now = self.clock.now()

        def body(tx: Transaction) -> tuple[Ask, list[_Closed]]:
            ask = tx.ask(ask_id)
            if ask is None:
                raise UnknownAsk(ask_id)
            if not ask.is_open:
                return ask, []
            closed = close(tx, ask, now)
            return closed.ask, [closed]

        return self._transact(body)

    def open_asks(
        self,
        limit: int | None = None,
        *,
        after: Ask | tuple[datetime, str] | None = None,
        owner: str | None = None,
    ) -> list[Ask]:
        """Open asks, oldest first (by ``asked_at``, then id). Any found past its TTL is
        closed on this read.

        ``limit`` is a whole number of at least 1, or ``None`` for all of them. ``after``
        (an ask, open or not, or its ``(asked_at, id)``) starts the list after it in that
        order: the last ask of one page gives the next. ``owner`` keeps to the asks that
        owner parked.
        """
        check_limit(limit)
        check_optional_id(owner, "owner")
        position = _place(after)
        now = self.clock.now()

        def body(tx: Transaction) -> tuple[list[Ask], list[_Closed]]:
            expired: list[_Closed] = []
            while True:
                found = tx.open_asks(limit, after=position, owner=owner)
                stale = [ask for ask in found if ask.is_expired(now)]
                for ask in stale:
                    # The list is read unlocked: re-read each one locked, since a racing
                    # worker may have answered it meanwhile (never overwrite that answer).
                    current = tx.ask(ask.id)
                    if current is not None and current.is_expired(now):
                        expired.append(self._expire(tx, current, now))
                # With a limit, the expired ones (the oldest, most often) made room: read again.
                if not stale or limit is None:
                    return [ask for ask in found if not ask.is_expired(now)], expired

        return self._transact(body)

    def gauges(self) -> AskGauges:
        """The open, overdue and unread-due figures of the whole store (``/metrics`` shows them)."""
        now = self.clock.now()
        with self.store.transaction() as tx:
            return tx.ask_gauges(now)

    def read_due(self, limit: int = 100) -> int:
        """Read the asks something waits on whose TTL has fallen due; return how many closed.

        This is the ordinary read, made on time: each ask found past its TTL is closed as
        ``expired`` exactly as any read would close it (its default recorded, its run
        closed, its callback queued, one ``ask_expired`` log line), in one transaction for
        up to ``limit`` asks. Asks another process is reading are skipped. The deliverer
        calls it when the earliest due time passes; a caller may too.
        """
        check_limit(limit)
        now = self.clock.now()

        def body(tx: Transaction) -> tuple[int, list[_Closed]]:
            closed = [self._expire(tx, ask, now) for ask in tx.due_asks(now, limit) if ask.is_expired(now)]
            return len(closed), closed

        return self._transact(body)

    def callback_states(self, ask_ids: Sequence[str]) -> dict[str, CallbackState]:
        """Where the callbacks of these asks stand (only asks with a ``callback_url`` appear).

        An ask whose callback is not queued yet (it is open) is ``pending`` with no attempts.
        """
        ids = [check_id(ask_id, "ask_id") for ask_id in ask_ids]
        with self.store.transaction() as tx:
            return tx.callback_states(ids)

    def failed_callbacks(self, limit: int = 100) -> list[Ask]:
        """The asks whose callback failed (given up on), the latest failure first, as stored."""
        check_limit(limit)
        with self.store.transaction() as tx:
            found = [tx.ask(ask_id) for ask_id in tx.failed_callback_asks(limit)]
        return [ask for ask in found if ask is not None]

    def retry_callback(self, ask_id: str) -> CallbackState:
        """Re-arm the failed callback of ``ask_id``: due now, its attempts counted from 0.

        Raises :class:`UnknownAsk` for an unknown id, and :class:`CallbackNotFailed` when the
        ask has no failed callback (none, not queued yet, pending or delivered), changing nothing.
        """
        check_id(ask_id, "ask_id")
        now = self.clock.now()
        with self.store.transaction() as tx:
            ask = tx.ask(ask_id)
            if ask is None:
                raise UnknownAsk(ask_id)
            if not tx.rearm_callback(ask_id, now):
                state = tx.callback_states([ask_id]).get(ask_id)
                raise CallbackNotFailed(ask_id, state.status.value if state else None)
            state = tx.callback_states([ask_id])[ask_id]
        self.signal.changed(Change.OUTBOX)
        return state

    def next_due(self) -> datetime | None:
        """The earliest due time among open asks something waits on (``None``: none)."""
        with self.store.transaction() as tx:
            return tx.next_due()

    def count_open_asks(self, owner: str | None = None) -> int:
        """How many asks are open (all, or ``owner``'s), as stored: one past its TTL
        counts until a read closes it (:meth:`open_asks` closes them)."""
        check_optional_id(owner, "owner")
        with self.store.transaction() as tx:
            return tx.count_open_asks(owner)

    def audit(self, limit: int | None = None) -> list[Ask]:
        """Open asks exactly as stored, closing nothing: the clock check's view.

        ``limit`` is as in :meth:`open_asks`.
        """
        check_limit(limit)
        with self.store.transaction() as tx:
            return tx.open_asks(limit)

    def parked(self, conversation_id: str) -> Ask | None:
        """The conversation's open ask exactly as stored, closing nothing (``None``: none).

        A look before deciding what to do with a message (which run it would go to, say);
        :meth:`handle` still makes the read that enforces the TTL. Like :meth:`audit`, it
        may return an ask that is past its TTL.
        """
        check_id(conversation_id, "conversation_id")

        def body(tx: Transaction) -> tuple[Ask | None, list[_Closed]]:
            return tx.open_ask(conversation_id), []

        return self._transact(body)

    def closed_follow_ups(self, limit: int = 100) -> list[Ask]:
        """Closed asks parked with ``follow_up=True`` whose follow-up is not done, earliest
        close first (claimed ones only once their claim has run out).

        Asks something waits on are closed on time by the due read; an open one is not
        listed, so a waiter also needs :meth:`read_due` or a deliverer.
        """
        check_limit(limit)
        now = self.clock.now()
        with self.store.transaction() as tx:
            return tx.closed_follow_ups(now, limit)

    def claim_follow_up(self, ask_id: str, lease: timedelta | float) -> bool:
        """Take the follow-up of ``ask_id`` for ``lease``: true for one caller, in any process.

        The claim holds until :meth:`follow_up_done` or until ``lease`` (a positive duration)
        runs out, when another caller may take it (the first one died). An ask without a
        pending follow-up (none was asked for, or it is done) is never claimed. The ask may
        still be open: a caller about to close it claims first, so that no other waiter acts
        on the close.
        """
        check_id(ask_id, "ask_id")
        until = check_duration(lease, "lease")
        now = self.clock.now()
        with self.store.transaction() as tx:
            return tx.claim_follow_up(ask_id, now, now + until)

    def follow_up_done(self, ask_id: str) -> None:
        """Mark the follow-up of ``ask_id`` done: it is never listed or claimed again."""
        check_id(ask_id, "ask_id")
        now = self.clock.now()
        with self.store.transaction() as tx:
            tx.follow_up_done(ask_id, now)

    def run(self, run_id: str) -> Run | None:
        """The run with this id (its status, outcome, pending ask and answers), or ``None``.

        Reading a run whose pending ask is past its TTL closes that ask as ``expired``
        first (and with it the run), as reading the ask would.
        """
        check_id(run_id, "run_id")
        now = self.clock.now()

        def body(tx: Transaction) -> tuple[Run | None, list[_Closed]]:
            run = tx.run(run_id)
            _, closed = self._pending_ask(tx, run, now)
            return (tx.run(run_id) if closed else run), closed  # an expiry closed the run too

        return self._transact(body)

    def finish_run(self, run_id: str, outcome: str = "done") -> Run:
        """Mark a run complete once the caller's work after its last answer is done.

        ``outcome`` is recorded on the run, which is returned. Raises :class:`UnknownRun`
        (an :class:`InputError`) for an unknown ``run_id``, and :class:`RunStillAsking`
        while the run's pending ask is open: answer or cancel it first, so no parked ask
        outlives its run. A pending ask past its TTL is closed as ``expired`` on the way.
        """
        check_id(run_id, "run_id")
        check_id(outcome, "outcome")
        now = self.clock.now()

        def body(tx: Transaction) -> tuple[Run, list[_Closed]]:
            run = tx.run(run_id)
            if run is None:
                raise UnknownRun(run_id)
            pending, closed = self._pending_ask(tx, run, now)
            if pending is not None and pending.is_open:
                raise RunStillAsking(run_id, pending.id)
            return _save_run(tx, run, now, status="complete", outcome=outcome, pending_ask_id=None), closed

        return self._transact(body)

    def record_run(self, run_id: str, conversation_id: str, outcome: str) -> Run:
        """Record a run that ended before it asked anything, as complete with ``outcome``.

        A run is otherwise made by its first ask. A caller that names its own runs records
        this way one that ended without asking (the LangGraph adapter, a thread whose first
        interrupt could not be asked), so its end is on record like any other's; the run
        is returned. Raises :class:`InputError` if ``run_id`` exists (finish it with
        :meth:`finish_run`).
        """
        check_id(run_id, "run_id")
        check_id(conversation_id, "conversation_id")
        check_id(outcome, "outcome")
        now = self.clock.now()

        def body(tx: Transaction) -> tuple[Run, list[_Closed]]:
            if tx.run(run_id) is not None:
                raise InputError(f"run {run_id} already exists: finish it with finish_run")
            run = Run(run_id, conversation_id, None, "complete", outcome, {}, None, now, now)
            tx.save_run(run)
            return run, []

        return self._transact(body)

    def _pending_ask(self, tx: Transaction, run: Run | None, now: datetime) -> tuple[Ask | None, list[_Closed]]:
        """``run``'s pending ask as of ``now``: one open past its TTL is closed as expired
        on this read (the reader enforces the clock), and is returned closed."""
        if run is None or run.pending_ask_id is None:
            return None, []
        pending = tx.ask(run.pending_ask_id)
        if pending is None or not pending.is_expired(now):
            return pending, []
        expired = self._expire(tx, pending, now)
        return expired.ask, [expired]

    def wait(self, ask_id: str, timeout: float | timedelta) -> Ask:
        """Block until the ask closes or ``timeout`` passes; return its state.

        ``timeout`` is a timedelta or a finite number of seconds; 0 or less reads the
        ask once without waiting. The wait is on the close signal (:mod:`parkgate.signal`):
        it wakes as soon as the ask closes here or in another process, and reads the ask
        again when its TTL falls due, so an ask nobody answers is closed as ``expired`` by
        this wait's own read. Expiry is still decided by the injected clock.
        """
        check_id(ask_id, "ask_id")
        deadline = time.monotonic() + wait_seconds(timeout)
        with self.signal.waiting(ask_id) as waiter:
            while True:
                waiter.clear()  # before the read: a close after it still wakes this wait
                ask = self.get(ask_id)
                remaining = deadline - time.monotonic()
                if not ask.is_open or remaining <= 0:
                    return ask
                waiter.wait(pause_before_reading(ask, self.clock.now(), remaining))

    # -- plumbing --------------------------------------------------------------
    def _workflow(self, name: str) -> Workflow:
        try:
            return self.workflows[name]
        except KeyError:
            raise UnknownWorkflow(name, sorted(self.workflows)) from None

    def _transact(self, body: Callable[[Transaction], tuple[T, list[_Closed]]]) -> T:
        for attempt in range(CONFLICT_RETRIES):
            try:
                with self.store.transaction() as tx:
                    result, closed = body(tx)
                    for item in closed:
                        self._enqueue_callback(tx, item.ask)
                break
            except StoreConflict:
                if attempt == CONFLICT_RETRIES - 1:
                    raise
                self.metrics.retry()
        if closed:
            self._after_commit(closed)
        return result

    def _enqueue_callback(self, tx: Transaction, ask: Ask) -> None:
        if ask.callback_url:
            payload = json.dumps(ask_to_dict(ask), ensure_ascii=False)
            tx.enqueue_callback(ask.id, ask.callback_url, payload, self.clock.now())

    def _counted(self, reply: Reply) -> Reply:
        """Count a committed reply (and the ask it parked next) in the metrics."""
        self.metrics.reply(reply.kind)
        if reply.followup is not None:
            self.metrics.reply(reply.followup.kind)
        return reply

    def _after_commit(self, closed: list[_Closed]) -> None:
        for item in closed:
            ask = item.ask
            seconds = (ask.answered_at - ask.asked_at).total_seconds() if ask.answered_at else None
            answered = ask.status is AskStatus.ANSWERED
            self.metrics.close(ask.outcome or ask.status.value, seconds if answered else None)
            if item.idle_minutes is not None:
                log.info(
                    json.dumps(
                        {
                            "event": "ask_expired",
                            "ask_id": ask.id,
                            "conversation_id": ask.conversation_id,
                            "run_id": ask.run_id,
                            "idle_minutes": round(item.idle_minutes, 1),
                            "ttl_seconds": ask.ttl_seconds,
                            "default_answer": ask.answer,
                        }
                    )
                )
        self.signal.closed([item.ask.id for item in closed])
        if any(item.ask.callback_url for item in closed):
            self.signal.changed(Change.OUTBOX)
            if not self.delivering:
                self._undelivered_warning.check(self)


#: A waiter reads its ask this long after its due time, so that the read finds it past
#: its TTL (expiry is strict: an ask is past its TTL only after the due instant).
DUE_MARGIN_SECONDS = 0.002
#: How long after warning that nothing delivers callbacks a gateway looks again.
UNDELIVERED_CHECK_SECONDS = 60.0
#: A deliverer stamps its heartbeat this often; one not seen for three times as long is gone.
HEARTBEAT_SECONDS = 10.0


@dataclass(frozen=True, slots=True)
class _Extra:
    """What an ask may carry besides its question: checked by the caller."""

    default: str | None = None
    callback_url: str | None = None
    phase: str | None = None
    context: Mapping[str, Any] | None = None
    watched: bool = False
    owner: str | None = None
    expect: Expect | None = None
    follow_up: bool = False


class _UndeliveredWarning:
    """Logs once per gateway when it queues callbacks while no deliverer runs on its database."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._next_check = 0.0
        self._warned = False

    def check(self, gateway: Gateway) -> None:
        with self._lock:
            if self._warned or time.monotonic() < self._next_check:
                return
            self._next_check = time.monotonic() + UNDELIVERED_CHECK_SECONDS
        try:
            with gateway.store.transaction() as tx:
                last = tx.last_beat()
        except Exception:  # a warning must never fail the call that queued the callback
            return
        now = gateway.clock.now()
        if last is not None and (now - last).total_seconds() < 3 * HEARTBEAT_SECONDS:
            return
        with self._lock:
            self._warned = True
        log.warning(
            "callbacks were queued in the outbox at %s but no deliverer runs on this database: "
            "nothing will send them. Run one: Gateway(..., deliver=True), `parkgate deliver --db URL`, "
            "or `parkgate serve`",
            gateway.store.url,
        )


def pause_before_reading(ask: Ask, now: datetime, remaining: float) -> float:
    """How long a waiter on open ``ask`` sleeps before its next read unless signalled: until
    its due time (a hair after, so the read finds it past its TTL), the end of its wait
    (``remaining`` seconds), or the fallback read, whichever comes first."""
    due_in = (ask.due_at - now).total_seconds() + DUE_MARGIN_SECONDS
    return max(0.0, min(remaining, due_in, FALLBACK_READ_SECONDS))


def ask_to_dict(ask: Ask, now: datetime | None = None, callback: CallbackState | None = None) -> dict[str, Any]:
    """The public JSON shape of an ask (HTTP, callbacks, the CLI's ``--json``).

    ``callback`` adds where its callback stands (an ask with a ``callback_url``; the HTTP
    service's reads add it).
    """
    data: dict[str, Any] = {
        "ask_id": ask.id,
        "conversation_id": ask.conversation_id,
        "run_id": ask.run_id,
        "kind": ask.kind.value,
        "prompt": ask.prompt,
        "options": list(ask.options),
        "status": ask.status.value,
        "outcome": ask.outcome,
        "answer": ask.answer,
        "option_index": ask.option_index,
        "mismatches": ask.mismatches,
        "phase": ask.phase,
        "ttl_seconds": ask.ttl_seconds,
        "expect": expected_form.to_dict(ask.expect) if ask.expect is not None else None,
        "asked_at": ask.asked_at.isoformat(),
        "last_touched": ask.last_touched.isoformat(),
        "answered_at": ask.answered_at.isoformat() if ask.answered_at else None,
        "context": dict(ask.context) if ask.context is not None else None,
    }
    if now is not None:
        data["hours_open"] = round((now - ask.asked_at).total_seconds() / 3600, 3)
    if callback is not None:
        data["callback"] = {
            "status": callback.status.value,
            "attempts": callback.attempts,
            "last_error": callback.last_error,
            "next_attempt_at": callback.next_attempt_at.isoformat() if callback.next_attempt_at else None,
        }
    return data


def _place(after: object) -> tuple[datetime, str] | None:
    """Where a page starts: after an ask, or after an ``(asked_at, id)``."""
    if after is None:
        return None
    if isinstance(after, Ask):
        return after.asked_at, after.id
    if (
        isinstance(after, tuple)
        and len(after) == 2
        and isinstance(after[0], datetime)
        and after[0].tzinfo is not None
        and isinstance(after[1], str)
    ):
        return after[0], after[1]
    raise InputError(f"after must be an Ask or its (asked_at, id), not {after!r}")


def _new_id() -> str:
    return uuid.uuid4().hex


def asked_reply(ask: Ask) -> Reply:
    """The ``asked`` reply for an open ask: its rendered question (what parking it returns)."""
    text = PHRASES[ReplyKind.ASKED].format(menu=machine.render_question(ask))
    return Reply(ReplyKind.ASKED, text, parked=True, ask_id=ask.id, run_id=ask.run_id)


def _passed_expired(ask: Ask) -> Reply:
    return Reply(ReplyKind.PASS, PHRASES[ReplyKind.PASS], parked=False, expired_ask_id=ask.id, run_id=ask.run_id)


def _reply_for(result: Step) -> Reply:
    return Reply(
        kind=result.kind,
        text=result.text,
        parked=result.parked,
        ask_id=result.ask.id,
        answer=result.answer,
        option_index=result.option_index,
        run_id=result.ask.run_id,
    )


def _with_text(reply: Reply, text: str, *, parked: bool, followup: Reply | None = None) -> Reply:
    return dataclasses.replace(reply, text=text, parked=parked, followup=followup)


def _save_run(
    tx: Transaction,
    run: Run,
    now: datetime,
    *,
    status: str,
    outcome: str | None,
    pending_ask_id: str | None,
    context: Mapping[str, str] | None = None,
) -> Run:
    updated = Run(
        run.id,
        run.conversation_id,
        run.workflow,
        status,
        outcome,
        dict(context) if context is not None else run.context,
        pending_ask_id,
        run.created_at,
        now,
    )
    tx.save_run(updated)
    return updated
