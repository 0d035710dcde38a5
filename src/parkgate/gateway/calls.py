"""The public :class:`Gateway`: each call checks its arguments, then runs one unit of work.

The gateway holds asks open for a conversation and guarantees they close: each call
reads the conversation's open ask (locked), enforces its TTL on the spot (an expired ask
is closed as ``expired`` by the read that finds it; there is no sweeper), lets the state
machine decide, writes, and commits. Every path returns a :class:`Reply` with a kind;
only ``pass`` may be routed to a model. A message's call is in
:mod:`parkgate.gateway.messages`, the reads and the operator's calls in
:mod:`parkgate.gateway.reads`, the decisions in :mod:`parkgate.gateway.runs`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Unpack

from parkgate.channels.base import Channel
from parkgate.clock import Clock, as_clock
from parkgate.core import machine, stopping_point
from parkgate.core.kinds import OPERATOR, AskKind, RunOutcome
from parkgate.core.model import Ask, Reply
from parkgate.errors import InputError
from parkgate.gateway.approval import ApprovalCalls
from parkgate.gateway.channel_calls import ChannelCalls
from parkgate.gateway.checks import (
    MAX_SKILL_OUTPUT_CHARS,
    check_duration,
    check_flag,
    check_id,
    check_inbound_text,
    check_workflow,
)
from parkgate.gateway.closing import CloseReport
from parkgate.gateway.messages import MessageCalls, UnitRunner
from parkgate.gateway.options import AskFields, AskOptions, OwnedParkFields, OwnedRunFields
from parkgate.gateway.parking import Park
from parkgate.gateway.reads import ReadCalls
from parkgate.gateway.run_calls import RunCalls
from parkgate.gateway.runs import RunLifeCycle, WritePlan, new_id, new_run, pass_reply
from parkgate.metrics import Metrics
from parkgate.store import DEFAULT_URL, Store, Transaction, open_deployed_store
from parkgate.store.signal import Change, CloseSignal, hear_moves
from parkgate.workflow import Workflow

if TYPE_CHECKING:
    from parkgate.delivery.deliverer import DelivererThread
    from parkgate.delivery.health import DelivererHealth

DEFAULT_TTL = timedelta(hours=6)


class Gateway(MessageCalls, ReadCalls, RunCalls, ApprovalCalls, ChannelCalls):
    """Parks asks, matches replies, and closes every ask it finds past its TTL.

    Args:
        store_url: ``sqlite:///parkgate.db`` (the default), a file path, or
            ``postgresql://...`` (in the schema ``PARKGATE_PG_SCHEMA`` names, as for the
            server and the CLI). Ignored when ``store`` is given.
        store: An open store to use instead of opening ``store_url``.
        ttl: How long an ask may stay idle before a read closes it as ``expired``
            (a timedelta or seconds; 6 hours by default); each ask may set its own.
        clock: Where "now" comes from: injected so that expiry is tested without sleeping.
        escalate_after: The miss from which a mismatch gets the escalated line (3).
        workflows: Workflows :meth:`start` can run by name.
        surface: The ``surface`` label of this gateway's metrics.
        metrics: Metrics to count into, shared with a server; a new set by default.
        deliver: Run a deliverer thread that makes the due reads and sends callbacks.

    Raises:
        InputError: An option is bad (``ttl`` not a positive duration, ``escalate_after``
            not a whole number of at least 1, ...): raised before any store is opened.
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
        #: Every waiter on this gateway's asks hears their close here (see parkgate.store.signal).
        self.signal = CloseSignal(self.store.watch)
        #: A clock moved by hand (a test's ManualClock) wakes every waiter to read again.
        self._stop_hearing_clock = hear_moves(self.clock, self.signal)
        #: Set while a deliverer runs on this gateway (``deliver=True``, ``parkgate serve``).
        self.delivering = False
        self._runs = RunLifeCycle(self.ttl, escalate_after, self.workflows)
        self.channels: dict[str, Channel] = {}  # by name: whose jobs this gateway's deliverer runs
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
        self._stop_hearing_clock()
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
        """Make ``workflow`` startable by name with :meth:`start` (replacing one of the same name).

        Args:
            workflow: The workflow to register under its ``name``.
        """
        check_workflow(workflow)
        self.workflows[workflow.name] = workflow

    # -- parking ---------------------------------------------------------------
    def ask(
        self,
        conversation_id: str,
        prompt: str,
        options: Sequence[str] | None = None,
        kind: AskKind | str | None = None,
        **fields: Unpack[AskFields],
    ) -> Reply:
        """Park a question in ``conversation_id``; the reply (``asked``) carries the menu.

        A conversation has one open ask. An ask with a ``callback_url``, ``watched`` or
        ``follow_up`` gets a *due read* when its TTL falls due, so it closes on time even if
        nobody else reads it. Every argument is checked before anything is read or written.

        Args:
            conversation_id: The conversation to park in.
            prompt: The question to show.
            options: The labels of a choice ask (an empty list is an error, not a text ask).
            kind: ``choice`` or ``text``; ``choice`` when ``options`` are given, else ``text``.
            **fields: The ask's options by keyword, all optional
                (:class:`~parkgate.gateway.options.AskFields`), listed below.

        Keyword Args:
            run_id (str | None): The run to park in while it is running; a new run when left out.
            ttl (timedelta | float | None): The ask's TTL (a timedelta or seconds, positive),
                instead of the gateway's.
            replace (bool): Close the open ask as ``cancelled`` (outcome ``replaced``)
                instead of raising :class:`AskAlreadyOpen`.
            default (str | None): Recorded as the answer if the ask expires (it still closes
                as ``expired``); for a choice one of the options, compared after the
                whitespace folding the labels get, and stored folded.
            callback_url (str | None): Gets the ask's events, signed (its close, reminders, escalation).
            remind_after (timedelta | float | list | None): Reminders: seconds from the last touch, or a list.
            escalate_after (timedelta | float | None): Seconds to the escalation (before the TTL).
            escalate_to (list[str] | None): The responders the escalation adds (docs/reminders.md).
            phase (str | None): The workflow step the ask belongs to.
            context (Mapping[str, Any] | None): A JSON object of at most 16 KiB, kept and
                shown with the ask.
            watched (bool): Something waits on the close: the ask gets a due read.
            owner (str | None): Who parks it (the HTTP service records its token's name); an
                owner reaches only its own asks and runs, and :meth:`open_asks` can keep to them.
            expect (Expect | str | Mapping[str, Any] | None): The form a text ask's answer
                must take (an :class:`~parkgate.core.expect.Expect`, a form's name such as
                ``"integer"``, or a mapping); any other answer is a miss.
            follow_up (bool | str): A waiter acts on the close (implies ``watched``): the
                closed ask is listed by :meth:`closed_follow_ups` until :meth:`follow_up_done`.
                A string (an id) names that waiter: ``closed_follow_ups(watcher=...)`` lists
                only the asks named for it.
            responders (list[str] | None): Who may answer (distinct senders, each a
                non-empty id of at most 200 characters); anyone when left out. A message
                from anyone else, or with no sender, gets ``not_yours`` and changes nothing.
            quorum (int | None): How many responders must pick the same option to select
                it (1 by default; at most ``len(responders)``; a text ask takes 1 only).
                Until then each responder's pick is a vote (``voted``).
            key (str | None): An idempotency key (an id such as ``"run-42/approve"``): a
                park with a key this owner parked before parks nothing and returns that
                ask's reply (``parked`` false once it closed; ``wait`` gives its outcome).
            post_to (ChannelTarget | None): Post the ask to a channel added with
                :meth:`add_channel` (``ChannelTarget("slack", {"channel": "C1"})``); the
                post is updated when the ask closes. Implies ``watched``.

        Returns:
            The ``asked`` reply, with the menu or question to show and the new ask's id.

        Raises:
            AskAlreadyOpen: An ask is open in the conversation and ``replace`` is false.
            ConversationBusy: Another owner's ask is open in the conversation (not named).
            RunClosed: ``run_id`` names a complete run, or another owner's.
            StoppingPointError: The prompt or the option list is not usable.
            InputError: Another argument is not usable; the message names it.
        """
        check_id(conversation_id, "conversation_id")
        checked = AskOptions.checked(fields)
        # An explicit option list (even an empty one) means a choice: [] is an error, not a text ask.
        chosen_kind = kind if kind is not None else (AskKind.TEXT if options is None else AskKind.CHOICE)
        spec = stopping_point.make_spec(chosen_kind, prompt, options)
        return self._park(conversation_id, spec, checked.fitted(spec))

    def ask_from_text(self, conversation_id: str, skill_output: str, **fields: Unpack[OwnedParkFields]) -> Reply:
        """Park the stopping point marked in a skill's output (see :mod:`stopping_point`).

        Output without a marker is not an error: the reply is ``pass``, and nothing is parked.

        Args:
            conversation_id: The conversation to park in.
            skill_output: Text holding one stopping point, or exactly its JSON form.
            **fields: :meth:`ask`'s ``run_id``, ``ttl``, ``replace``, ``callback_url``,
                ``key``, ``owner``, ``responders``, ``quorum`` and ``post_to``
                (:class:`~parkgate.gateway.options.OwnedParkFields`), checked the same way,
                also when there is no marker.

        Returns:
            The ``asked`` reply, or ``pass`` when the output marks no stopping point.

        Raises:
            AskAlreadyOpen: An ask is open in the conversation and ``replace`` is false.
            ConversationBusy: Another owner's ask is open in the conversation.
            RunClosed: ``run_id`` names a complete run, or another owner's.
            StoppingPointError: The marked stopping point is not usable.
            InputError: Another argument is not usable; the message names it.
        """
        check_id(conversation_id, "conversation_id")
        checked = AskOptions.checked(fields, OwnedParkFields, "ask_from_text")
        text = check_inbound_text(skill_output, limit=MAX_SKILL_OUTPUT_CHARS, what="skill output")
        spec = stopping_point.find(text)
        if spec is None:
            # Nothing was parked, but it is still a reply a surface sends: counted like any other.
            return self._counted(pass_reply())
        return self._park(conversation_id, spec, checked.fitted(spec))

    def start(self, conversation_id: str, workflow: str, **fields: Unpack[OwnedRunFields]) -> Reply:
        """Start a registered workflow: its first phase is parked (``asked``).

        A workflow always starts a new run: an old run's answers and workflow would
        otherwise mix with the new one's. The run and every phase's ask keep the ``owner``.

        Args:
            conversation_id: The conversation to park the first phase in.
            workflow: A registered workflow's name.
            **fields: ``run_id`` (the new run's id; one made when left out), ``replace``,
                ``owner``, ``responders``, ``quorum`` and ``post_to``, as in :meth:`ask`
                (:class:`~parkgate.gateway.options.OwnedRunFields`); every phase is for them
                (see :mod:`parkgate.workflow` for phases that name their own), and with
                ``post_to`` every phase is posted on that channel, each later one in the
                thread of the one before (:mod:`parkgate.channels.threads`).

        Returns:
            The ``asked`` reply of the first phase.

        Raises:
            UnknownWorkflow: No workflow of that name is registered.
            AskAlreadyOpen: An ask is open in the conversation and ``replace`` is false.
            ConversationBusy: Another owner's ask is open in the conversation.
            InputError: ``run_id`` names a run that exists already (nothing changes), or an
                argument is not usable (``responders`` too, when the phases name theirs).
        """
        check_id(conversation_id, "conversation_id")
        if not isinstance(workflow, str):
            raise InputError(f"workflow must be a workflow's name (a string), not {type(workflow).__name__}")
        checked = AskOptions.checked(fields, OwnedRunFields, "start")
        flow = self._runs.workflow(workflow)
        if checked.responders and flow.names_responders:
            raise InputError(f"workflow {workflow!r} names who answers its phases: start it without responders")
        if checked.quorum > 1 and any(phase.kind is AskKind.TEXT for phase in flow.phases):
            raise InputError(f"quorum of {checked.quorum} is for choice asks: workflow {workflow!r} asks for text")
        run_id, owner = checked.run_id or new_id(), checked.owner
        now = self.clock.now()

        def body(tx: Transaction, plan: WritePlan) -> Reply:
            if checked.run_id is not None and tx.run(run_id) is not None:
                raise InputError(f"run {run_id} already exists: a workflow starts a new run (leave run_id out)")
            self._runs.clear_for_new_ask(tx, plan, conversation_id, checked.replace, now, owner)
            run = new_run(run_id, conversation_id, now, workflow=flow.name, owner=owner)
            return self._runs.park_phase(plan, run, flow.first, now, checked)

        return self._counted(self._units.run(body))

    def _park(self, conversation_id: str, spec: stopping_point.AskSpec, options: AskOptions) -> Reply:
        """Park ``spec`` with ``options``; every argument has been checked by the caller
        (and the channel it is posted to has let it be posted there)."""
        now = self.clock.now()
        self._check_post(conversation_id, spec, options, now)
        park = Park(self._runs, conversation_id, spec, options, now)
        reply = self._units.run(park)
        if park.fresh:
            self._counted(reply)
            self.signal.changed(Change.PARKED, reply.ask_id)
            if options.watched:  # the earliest due time may be this one now
                self.signal.changed(Change.DUE, reply.ask_id)
        return reply

    def cancel(self, ask_id: str, *, outcome: str = RunOutcome.CANCELLED.value) -> Ask:
        """An operator's cancel: close the ask as ``cancelled`` (and its run as complete).

        Args:
            ask_id: The ask to cancel.
            outcome: An id-like string recorded on the ask and its run that says why, say
                ``"abandoned"`` when whoever waited for the answer is gone.

        Returns:
            The ask as it is now. An ask already closed is returned as it is; an expired
            one is closed as expired.

        Raises:
            UnknownAsk: No ask has this id.
        """
        check_id(outcome, "outcome")

        def close(plan: WritePlan, ask: Ask, now: datetime) -> Ask:
            read = self._runs.read(plan, ask, now)
            return self._runs.cancel(plan, ask, now, outcome, OPERATOR) if read.is_open else read

        return self._close_open_ask(ask_id, close)

    def expire(self, ask_id: str, *, outcome: str = RunOutcome.EXPIRED.value) -> Ask:
        """Close an open ask as ``expired`` now, as its TTL would.

        The same closing as a read that finds the ask past its TTL: status and outcome
        ``expired``, its default (if any) the answer, its run closed as complete (``expired``),
        or left running with nothing pending when a default stands in, and the callback, the
        metrics and one ``ask_expired`` log line.

        Args:
            ask_id: The ask to expire.
            outcome: Why nobody answered; another (``"dismissed"``) is counted as it, unlogged.

        Returns:
            The ask as it is now; one already closed is returned unchanged.

        Raises:
            UnknownAsk: No ask has this id.
        """
        check_id(outcome, "outcome")
        return self._close_open_ask(ask_id, lambda plan, ask, now: self._runs.expire(plan, ask, now, outcome))

    def _close_open_ask(self, ask_id: str, close: Callable[[WritePlan, Ask, datetime], Ask]) -> Ask:
        """Read ``ask_id`` and, while it is open, ``close`` it, in one transaction."""
        check_id(ask_id, "ask_id")
        now = self.clock.now()

        def body(tx: Transaction, plan: WritePlan) -> Ask:
            ask = self._existing_ask(tx, ask_id)
            return close(plan, ask, now) if ask.is_open else ask

        return self._units.run(body)
