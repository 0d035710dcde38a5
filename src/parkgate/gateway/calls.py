"""The public :class:`Gateway`: each call checks its arguments, then runs one unit of work.

The gateway holds asks open for a conversation and guarantees they close: each call
reads the conversation's open ask (locked), enforces its TTL on the spot (an expired ask
is closed as ``expired`` by the read that finds it; there is no sweeper), lets the state
machine decide, writes, and commits. Every path returns a :class:`Reply` with a kind;
only ``pass`` may be routed to a model. The reads and the operator's calls are in
:mod:`parkgate.gateway.reads`, the decisions in :mod:`parkgate.gateway.runs`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from parkgate.checks import (
    MAX_SKILL_OUTPUT_CHARS,
    check_context,
    check_default,
    check_duration,
    check_expect,
    check_flag,
    check_id,
    check_inbound_text,
    check_optional_id,
    check_park_args,
    check_workflow,
    wait_seconds,
)
from parkgate.clock import Clock, as_clock
from parkgate.core import machine, stopping_point
from parkgate.core.expect import Expect
from parkgate.core.kinds import AskKind, RunOutcome
from parkgate.core.model import Ask
from parkgate.errors import InputError
from parkgate.gateway.closing import CloseReport, pause_before_reading
from parkgate.gateway.reads import ReadCalls
from parkgate.gateway.run_calls import RunCalls
from parkgate.gateway.runs import AskExtras, RunLifeCycle, new_run
from parkgate.gateway.shapes import new_id, pass_reply
from parkgate.gateway.unit import UnitRunner, WritePlan
from parkgate.metrics import Metrics
from parkgate.reply import Reply
from parkgate.signal import Change, CloseSignal
from parkgate.store import DEFAULT_URL, Store, Transaction, open_deployed_store
from parkgate.store.writes import StoredReply
from parkgate.workflow import Workflow

if TYPE_CHECKING:
    from parkgate.delivery.deliverer import DelivererThread
    from parkgate.delivery.health import DelivererHealth

DEFAULT_TTL = timedelta(hours=6)


class Gateway(ReadCalls, RunCalls):
    """Parks asks, matches replies, and closes every ask it finds past its TTL.

    ``store_url`` is ``sqlite:///parkgate.db`` (default), a file path, or
    ``postgresql://...`` (in the schema ``PARKGATE_PG_SCHEMA`` names, as for the server
    and the CLI); or pass an open ``store``. ``clock`` is injected so that
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
        self.store = store if store is not None else open_deployed_store(store_url)
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
        self._runs = RunLifeCycle(self.ttl, escalate_after, self.workflows)
        report = CloseReport(self.store, self.clock, self.metrics, self.signal, lambda: self.delivering)
        self._units = UnitRunner(self.store, self.clock, self.metrics, report)
        self._deliverer: DelivererThread | None = None
        if deliver:
            from parkgate.gateway.delivering import start_thread  # loads httpx: only when delivering

            self._deliverer = start_thread(self)

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

    @property
    def deliverer_health(self) -> DelivererHealth | None:
        """The health of the deliverer this gateway runs (``deliver=True``; else ``None``):
        its state (``healthy`` is false while its passes fail or it waits to be restarted)
        and its last successful pass."""
        return self._deliverer.health if self._deliverer is not None else None

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
        of that form. Raises :class:`AskAlreadyOpen` unless ``replace`` is true. A
        ``run_id`` that names a stored run parks in it while it is running; a complete run
        is never reopened (:class:`RunClosed`).
        ``context`` (a JSON object of at most 16 KiB) is kept with the ask and shown with
        it. An ask with a ``callback_url``, or ``watched``, has something waiting on its
        close: a deliverer reads it when its TTL falls due (a *due read*), so it closes on
        time even if nobody else reads it. ``owner`` names who parks it (the HTTP service
        records its token's name): :meth:`open_asks` and :meth:`count_open_asks` can keep
        to one owner's asks, and a workflow's later phases keep their first ask's owner.
        An owner reaches only its own asks and runs: another owner's open ask in the
        conversation raises :class:`ConversationBusy` (``replace`` or not, and without its
        id), and another owner's run :class:`RunClosed`, as a complete run does.
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
        extras = AskExtras(default, callback_url, phase, context, watched, owner, form, follow_up)
        return self._park(conversation_id, spec, run_id, ask_ttl, replace, extras)

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
        text = check_inbound_text(skill_output, limit=MAX_SKILL_OUTPUT_CHARS, what="skill output")
        spec = stopping_point.find(text)
        if spec is None:
            # Nothing was parked, but it is still a reply a surface sends: counted like any other.
            return self._counted(pass_reply())
        extras = AskExtras(callback_url=callback_url, watched=callback_url is not None, owner=owner)
        return self._park(conversation_id, spec, run_id, ask_ttl, replace, extras)

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
        new one's). ``owner`` is as in :meth:`ask` (another owner's open ask raises
        :class:`ConversationBusy`), and the run and every phase's ask keep it.
        """
        check_id(conversation_id, "conversation_id")
        if not isinstance(workflow, str):
            raise InputError(f"workflow must be a workflow's name (a string), not {type(workflow).__name__}")
        check_flag(replace, "replace")
        check_optional_id(run_id, "run_id")
        check_optional_id(owner, "owner")
        flow = self._runs.workflow(workflow)
        given_run = run_id is not None
        run_id = run_id or new_id()
        now = self.clock.now()

        def body(tx: Transaction, plan: WritePlan) -> Reply:
            if given_run and tx.run(run_id) is not None:
                raise InputError(f"run {run_id} already exists: a workflow starts a new run (leave run_id out)")
            self._runs.clear_for_new_ask(tx, plan, conversation_id, replace, now, owner)
            run = new_run(run_id, conversation_id, now, workflow=flow.name, owner=owner)
            return self._runs.park_phase(plan, run, flow.first, now, owner)

        return self._counted(self._units.run(body))

    def _park(
        self,
        conversation_id: str,
        spec: stopping_point.AskSpec,
        run_id: str | None,
        ttl: timedelta | None,
        replace: bool,
        extras: AskExtras,
    ) -> Reply:
        """Park ``spec``; every argument has been checked by the caller."""
        now = self.clock.now()
        given_run = run_id is not None
        run_id = run_id or new_id()

        def body(tx: Transaction, plan: WritePlan) -> Reply:
            # The run is checked before the conversation is cleared: a run that takes no new
            # ask refuses the park before anything is read as closed. A new run id needs no read.
            joined = self._runs.joined_run(tx, run_id, conversation_id, extras.owner, now) if given_run else None
            self._runs.clear_for_new_ask(tx, plan, conversation_id, replace, now, extras.owner)
            run = joined or new_run(run_id, conversation_id, now, owner=extras.owner)
            ask = self._runs.new_ask(run, spec, now, ttl, extras)
            return self._runs.park(plan, run, ask, now, extras.follow_up)

        reply = self._counted(self._units.run(body))
        if extras.watched:  # the earliest due time may be this one now
            self.signal.changed(Change.DUE, reply.ask_id)
        return reply

    # -- replies ---------------------------------------------------------------
    def handle(self, conversation_id: str, text: str | bytes, message_id: str | None = None) -> Reply:
        """Match one inbound message against the conversation's parked ask.

        With nothing parked (or an ask that just expired) the reply is ``pass``: route
        the message onward as usual. The same ``message_id`` twice returns the first
        reply and changes nothing. Bad input raises :class:`InputError` before
        anything is read or written.
        """
        check_id(conversation_id, "conversation_id")
        message = check_inbound_text(text)
        if message_id is not None:
            check_id(message_id, "message_id")
        now = self.clock.now()
        replayed = False

        def body(tx: Transaction, plan: WritePlan) -> Reply:
            nonlocal replayed
            earlier, ask = tx.message_context(conversation_id, message_id)
            replayed = earlier is not None  # set on every try: a retry may read for real
            if earlier is not None:
                return Reply.from_json(earlier)
            reply = self._runs.decide(tx, plan, ask, message, now)
            if message_id is not None:
                plan.reply = StoredReply(conversation_id, message_id, reply.to_json(), now)
            return reply

        reply = self._units.run(body)
        # A redelivery changes nothing, the metrics included: its reply was counted once.
        return reply if replayed else self._counted(reply)

    def cancel(self, ask_id: str, *, outcome: str = RunOutcome.CANCELLED.value) -> Ask:
        """An operator's cancel: close the ask as ``cancelled`` (and its run as complete).

        ``outcome`` (an id-like string) is recorded on the ask and its run and says why,
        say ``"abandoned"`` when whoever waited for the answer is gone. An ask already
        closed is returned as it is; an expired one is closed as expired.
        """
        check_id(outcome, "outcome")

        def close(plan: WritePlan, ask: Ask, now: datetime) -> Ask:
            read = self._runs.read(plan, ask, now)
            return self._runs.cancel(plan, ask, now, outcome) if read.is_open else read

        return self._close_open_ask(ask_id, close)

    def expire(self, ask_id: str) -> Ask:
        """Close an open ask as ``expired`` now, as its TTL would.

        The same closing as a read that finds the ask past its TTL: status and outcome
        ``expired``, its default (if any) recorded as the answer, its run closed as
        complete (``expired``), or left running with nothing pending when a default
        stands in, and the callback, the metrics and one ``ask_expired`` log line. An
        ask already closed is returned unchanged.
        """
        return self._close_open_ask(ask_id, self._runs.expire)

    def _close_open_ask(self, ask_id: str, close: Callable[[WritePlan, Ask, datetime], Ask]) -> Ask:
        """Read ``ask_id`` and, while it is open, ``close`` it, in one transaction."""
        check_id(ask_id, "ask_id")
        now = self.clock.now()

        def body(tx: Transaction, plan: WritePlan) -> Ask:
            ask = self._existing_ask(tx, ask_id)
            return close(plan, ask, now) if ask.is_open else ask

        return self._units.run(body)

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

    def _counted(self, reply: Reply) -> Reply:
        """Count a committed reply (and the ask it parked next) in the metrics."""
        self.metrics.reply(reply.kind)
        if reply.followup is not None:
            self.metrics.reply(reply.followup.kind)
        return reply
