"""The public :class:`Gateway`: each call checks its arguments, then runs one unit of work.

The gateway holds asks open for a conversation and guarantees they close: each call
reads the conversation's open ask (locked), enforces its TTL on the spot (an expired ask
is closed as ``expired`` by the read that finds it; there is no sweeper), lets the state
machine decide, writes, and commits. Every path returns a :class:`Reply` with a kind;
only ``pass`` may be routed to a model. Its calls are grouped by what they act on
(parking, messages, reads and waits, runs, channels, approvals); each runs its body in a
unit of work (:class:`~parkgate.gateway.runs.UnitRunner`), and the decisions are in
:mod:`parkgate.gateway.runs`.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, NamedTuple, Unpack

from parkgate.channels.base import Channel, ChannelReply, ChecksPosts
from parkgate.channels.jobs import POSTED_REPLIES, REPLY
from parkgate.channels.reminders import fired_replies
from parkgate.clock import Clock, as_clock
from parkgate.core import events as event_log
from parkgate.core import machine, stopping_point
from parkgate.core.closed_words import already_closed, late_answer
from parkgate.core.events import LoggedEvent
from parkgate.core.history import HistoryPage, HistoryQuery
from parkgate.core.kinds import OPERATOR, AskKind, AskStatus, ReplyKind, RunOutcome, RunStatus
from parkgate.core.model import Ask, CallbackState, Reply, Run
from parkgate.core.schedule import Fired, fire_due
from parkgate.core.stats import Stats, StatsBy
from parkgate.core.stopping_point import AskSpec
from parkgate.errors import CallbackNotFailed, InputError, RunStillAsking, UnknownAsk, UnknownRun
from parkgate.gateway.approval import FromCall, P, R, approval_gate
from parkgate.gateway.checks import (
    MAX_AGENT_STATE_CHARS,
    MAX_SKILL_OUTPUT_CHARS,
    check_duration,
    check_flag,
    check_id,
    check_inbound_text,
    check_limit,
    check_optional_id,
    check_output,
    check_reason,
    check_sender,
    check_string,
    check_workflow,
    wait_seconds,
)
from parkgate.gateway.closing import CloseReport, pause_before_reading
from parkgate.gateway.history import history_page, window_stats
from parkgate.gateway.options import AskFields, AskOptions, OwnedParkFields, OwnedRunFields
from parkgate.gateway.parking import Park
from parkgate.gateway.runs import (
    RunLifeCycle,
    UnitRunner,
    WritePlan,
    changed_run,
    new_id,
    new_run,
    pass_reply,
    run_with,
)
from parkgate.metrics import Metrics
from parkgate.store import DEFAULT_URL, Intent, Store, Transaction, open_deployed_store
from parkgate.store.base import AskGauges, _WriteNeeded
from parkgate.store.channel_tables import ChannelJob, ChannelPost
from parkgate.store.signal import Change, CloseSignal, hear_moves
from parkgate.store.writes import StoredReply
from parkgate.workflow import Workflow

if TYPE_CHECKING:
    from parkgate.delivery.deliverer import DelivererThread
    from parkgate.delivery.health import DelivererHealth

DEFAULT_TTL = timedelta(hours=6)
#: A late answer's ``surface`` from a channel whose post of the ask is not recorded.
CHANNEL_SURFACE = "channel"


class InlineAnswer(NamedTuple):
    """A message answered on an event loop's thread (:meth:`Gateway.answer_inline`).

    ``reply`` may be given at once when ``unrecorded`` is ``None`` (the message changes
    nothing); otherwise only once :meth:`Gateway.record_inline` has committed
    ``unrecorded``, the stored reply of a ``pass`` with a ``message_id``.
    """

    reply: Reply
    unrecorded: StoredReply | None = None


class Gateway:
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

    def cancel(self, ask_id: str, *, outcome: str = RunOutcome.CANCELLED.value, reason: str | None = None) -> Ask:
        """An operator's cancel: close the ask as ``cancelled`` (and its run as complete).

        Args:
            ask_id: The ask to cancel.
            outcome: An id-like string recorded on the ask and its run that says why, say
                ``"abandoned"`` when whoever waited for the answer is gone.
            reason: Why, in words, kept with the close in the ask's event log
                (``data.reason`` of its ``closed`` event).

        Returns:
            The ask as it is now. An ask already closed is returned as it is; an expired
            one is closed as expired.

        Raises:
            UnknownAsk: No ask has this id.
        """
        check_id(outcome, "outcome")
        why = check_reason(reason)

        def close(plan: WritePlan, ask: Ask, now: datetime) -> Ask:
            read = self._runs.read(plan, ask, now)
            return self._runs.cancel(plan, ask, now, outcome, OPERATOR, why) if read.is_open else read

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

    # -- messages -------------------------------------------------------------------
    def handle(
        self,
        conversation_id: str,
        text: str | bytes,
        message_id: str | None = None,
        sender: str | None = None,
        *,
        ask_id: str | None = None,
    ) -> Reply:
        """Match one inbound message against the conversation's parked ask.

        Args:
            conversation_id: The conversation the message arrived in.
            text: What the person wrote (bytes must be UTF-8).
            message_id: The message's id on its surface: the same id twice returns the
                first reply and changes nothing (a redelivery).
            sender: Who wrote it on its surface (a user id, an email, a username). On an
                ask with responders, a message from anyone else, or with no sender, is
                ``not_yours`` and changes nothing; the sender of an answer or a cancel is
                kept with the ask (``answered_by``, ``closed_by``).
            ask_id: The ask the message answers (a reply to its question): it goes to that
                ask only (another open in the conversation is left alone: ``pass``), and
                if that ask has closed (or closes as this read finds it past its TTL) the
                reply is ``late``, saying how and when it closed, and the message is a
                ``late`` event in its log (from this gateway's ``surface``); the ask
                stays as it closed.

        Returns:
            What was done, by kind. With nothing parked (or an ask that just expired) it
            is ``pass``: route the message onward as usual.

        Raises:
            InputError: Bad input, raised before anything is read or written.
        """
        if ask_id is not None:
            check_id(ask_id, "ask_id")
        return self._message(conversation_id, text, message_id, sender, only_ask=ask_id)

    def answer_inline(
        self,
        conversation_id: str,
        text: str | bytes,
        message_id: str | None = None,
        sender: str | None = None,
        *,
        ask_id: str | None = None,
    ) -> InlineAnswer | None:
        """:meth:`handle` on the calling thread (an event loop's) for a message that finds
        nothing parked; ``None`` for any other, which :meth:`handle` on a worker thread
        then answers. Only a store whose reads never wait (``store.reads_inline``: SQLite)
        answers here at all.

        A message without a ``message_id`` (a ``pass``) changes nothing and is answered at
        once. One with a ``message_id`` is decided here only in a conversation this
        process remembers with nothing open, without a read: it comes back as a ``pass``
        with the reply to store (``unrecorded``), and is answered only once
        :meth:`record_inline` committed that, in a batch with others (the insert is the
        check of that memory, and of the ``message_id`` being new).

        Args:
            conversation_id: The conversation the message arrived in.
            text: What the person wrote.
            message_id: The message's id on its surface.
            sender: Who wrote it.
            ask_id: The ask the message answers (see :meth:`handle`); a message naming
                one with a ``message_id`` is ``None`` here.

        Returns:
            The answer, or ``None`` where the message would write more than its stored
            reply (a parked ask's step, an expiry found on read, a late answer), needs a
            read to be decided (a ``message_id`` in a conversation not remembered free), or
            met another writer: nothing was written and nothing is counted.

        Raises:
            InputError: Bad input, raised before anything is read.
        """
        if not self.store.reads_inline or (message_id is not None and ask_id is not None):
            return None
        if ask_id is not None:
            check_id(ask_id, "ask_id")
        unrecorded: list[StoredReply] = []
        try:
            said = (conversation_id, text, message_id, sender)
            reply = self._message(*said, only_ask=ask_id, intent=Intent.READ_ONLY, unrecorded=unrecorded)
        except _WriteNeeded:
            return None
        return InlineAnswer(reply, unrecorded[0] if unrecorded else None)

    def record_inline(self, answers: Sequence[InlineAnswer]) -> list[bool]:
        """Store the replies of ``pass`` messages answered by :meth:`answer_inline`, in one
        transaction (one commit for all of them), each only if its conversation still has
        nothing open and its ``message_id`` is still new; the stored ones are counted.

        Args:
            answers: Answers whose ``unrecorded`` reply is to be stored.

        Returns:
            Whether each was stored, in order; one that was not is answered by
            :meth:`handle` (an ask is open in the conversation after all, or the message
            came before).
        """

        def body(tx: Transaction, plan: WritePlan) -> list[bool]:
            return [answer.unrecorded is not None and tx.store_pass(answer.unrecorded) for answer in answers]

        stored = self._units.run(body, Intent.WRITE)
        for answer, done in zip(answers, stored, strict=True):
            if done:
                self._counted(answer.reply)
        return stored

    def _message(
        self,
        conversation_id: str,
        text: str | bytes,
        message_id: str | None,
        sender: str | None,
        *,
        channel_reply: bool = False,
        only_ask: str | None = None,
        intent: Intent = Intent.READ_FIRST,
        unrecorded: list[StoredReply] | None = None,
    ) -> Reply:
        """:meth:`handle`; with ``channel_reply`` a reply shown in the thread is queued for the
        ask's channel in the same commit, and with ``only_ask`` a message finds only that
        ask open (another open ask in the conversation is left alone: ``pass``), or, that
        ask closed, is a late answer (:meth:`_late`): from the channel the ask was posted
        to for a channel's message, else from this gateway's surface. ``intent`` is the
        unit's (:meth:`UnitRunner.run`). Given ``unrecorded``, the reply to store for a
        ``message_id`` is put there instead of written, and the reply is not counted."""
        check_id(conversation_id, "conversation_id")
        message = check_inbound_text(text)
        if message_id is not None:
            check_id(message_id, "message_id")
        check_sender(sender)
        now = self.clock.now()
        replayed = False
        surface = None if channel_reply else self.metrics.surface

        def body(tx: Transaction, plan: WritePlan) -> Reply:
            nonlocal replayed
            earlier, ask = tx.message_context(conversation_id, message_id)
            replayed = earlier is not None  # set on every try: a retry may read for real
            if earlier is not None:
                return Reply.from_json(earlier)
            late = None
            if only_ask is not None:
                late = self._late(tx, plan, ask, only_ask, (conversation_id, message, sender, surface), now)
                if ask is not None and ask.id != only_ask:
                    ask = None
            reply = late or self._runs.decide(tx, plan, ask, message, now, sender)
            if channel_reply and reply.ask_id is not None and reply.kind in POSTED_REPLIES:
                plan.queue_channel_job(reply.ask_id, REPLY, now, ChannelReply(reply.kind, reply.text, sender).to_json())
            if message_id is not None:
                stored = StoredReply(conversation_id, message_id, reply.to_json(), now)
                if unrecorded is None:
                    plan.reply = stored
                else:
                    unrecorded[:] = [stored]
            return reply

        reply = self._units.run(body, intent)
        # A redelivery changes nothing, the metrics included: its reply was counted once.
        # A reply not stored yet is counted once it is (record_inline).
        return reply if replayed or unrecorded else self._counted(reply)

    def _late(
        self,
        tx: Transaction,
        plan: WritePlan,
        open_ask: Ask | None,
        ask_id: str,
        message: tuple[str, str, str | None, str | None],
        now: datetime,
    ) -> Reply | None:
        """The ``late`` reply to ``message`` (its conversation, text, sender and surface)
        naming ``ask_id``, when that ask of the conversation has closed or closes as this
        read finds it past its TTL, with its ``late`` event; ``None`` while it is open,
        and for an ask unknown or of another conversation (the message is then ``pass``,
        telling nothing of it)."""
        conversation_id, text, sender, surface = message
        named = open_ask if open_ask is not None and open_ask.id == ask_id else tx.ask(ask_id)
        if named is None or named.conversation_id != conversation_id:
            return None
        named = self._runs.read(plan, named, now)
        if named.is_open:
            return None
        other = None if open_ask is None or open_ask.id == ask_id else self._runs.read(plan, open_ask, now)
        if surface is None:  # a channel's message: the channel the ask was posted to
            post = tx.channels.post_of(ask_id)
            surface = post.channel if post is not None else CHANNEL_SURFACE
        plan.log(event_log.late(named, now, sender, surface, late_answer(named, text)))
        parked = other is not None and other.is_open
        return Reply(ReplyKind.LATE, already_closed(named), parked, ask_id=named.id, run_id=named.run_id)

    def _counted(self, reply: Reply) -> Reply:
        """Count a committed reply (and the ask it parked next) in the metrics."""
        self.metrics.reply(reply.kind)
        if reply.next_ask is not None:
            self.metrics.reply(reply.next_ask.kind)
        return reply

    # -- reads, waits and the operator's calls --------------------------------------
    def get(self, ask_id: str) -> Ask:
        """One ask by id. Reading an ask past its TTL closes it as ``expired``.

        Args:
            ask_id: The ask's id.

        Returns:
            The ask as it is after this read.

        Raises:
            UnknownAsk: No ask has this id.
        """
        check_id(ask_id, "ask_id")
        now = self.clock.now()

        def body(tx: Transaction, plan: WritePlan) -> Ask:
            return self._runs.read(plan, self._existing_ask(tx, ask_id), now)

        return self._units.run(body)

    def wait(self, ask_id: str, timeout: float | timedelta) -> Ask:
        """Block until the ask closes or ``timeout`` passes; return its state.

        The wait is on the close signal (:mod:`parkgate.store.signal`): it wakes as soon as the
        ask closes here or in another process, and reads the ask again when its TTL falls
        due, so an ask nobody answers is closed as ``expired`` by this wait's own read.
        Expiry is still decided by the injected clock.

        Args:
            ask_id: The ask to wait for.
            timeout: A timedelta or a finite number of seconds; 0 or less reads the ask
                once without waiting.

        Returns:
            The ask as last read: closed, or still open when ``timeout`` passed.

        Raises:
            UnknownAsk: No ask has this id.
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

    def _existing_ask(self, tx: Transaction, ask_id: str) -> Ask:
        ask = tx.ask(ask_id)
        if ask is None:
            raise UnknownAsk(ask_id)
        return ask

    def open_asks(
        self,
        limit: int | None = None,
        *,
        after: Ask | tuple[datetime, str] | None = None,
        owner: str | None = None,
        conversation_id: str | None = None,
    ) -> list[Ask]:
        """Open asks, oldest first (by ``asked_at``, then id). Any found past its TTL is
        closed on this read.

        Args:
            limit: A whole number of at least 1, or ``None`` for all of them.
            after: An ask, open or not, or its ``(asked_at, id)``: the list starts after it
                in that order, so the last ask of one page gives the next.
            owner: Only the asks this owner parked.
            conversation_id: Only this conversation's open ask (at most one).

        Returns:
            The open asks, none of them past its TTL.
        """
        check_limit(limit)
        check_optional_id(owner, "owner")
        check_optional_id(conversation_id, "conversation_id")
        position = _place(after)
        now = self.clock.now()

        def body(tx: Transaction, plan: WritePlan) -> list[Ask]:
            while True:
                found = tx.asks.open_asks(limit, after=position, owner=owner, conversation_id=conversation_id)
                stale = [ask for ask in found if ask.is_expired(now)]
                for ask in stale:
                    # The list is read unlocked: re-read each one locked, since a racing
                    # worker may have answered it meanwhile (never overwrite that answer).
                    current = tx.ask(ask.id)
                    if current is not None:
                        self._runs.read(plan, current, now)
                # With a limit, the expired ones (the oldest, most often) made room: read again.
                if not stale or limit is None:
                    return [ask for ask in found if not ask.is_expired(now)]
                plan.write(tx, self.clock)

        return self._units.run(body)

    def gauges(self) -> AskGauges:
        """The open, overdue and unread-due figures of the whole store (``/metrics`` shows them).

        Returns:
            The figures as stored now, closing nothing.
        """
        now = self.clock.now()
        with self.store.transaction() as tx:
            return tx.asks.ask_gauges(now)

    def read_due(self, limit: int = 100) -> int:
        """Read the asks whose TTL, reminder or escalation has fallen due; return how many
        it closed or fired.

        This is the ordinary read, made on time: each ask found past its TTL is closed as
        ``expired`` exactly as any read would close it (its default recorded, its run
        closed, its callback queued, one ``ask_expired`` log line), in one transaction for
        up to ``limit`` asks. Then each open ask whose reminder or escalation is due fires
        it (:func:`parkgate.core.schedule.fire_due`: an ``ask.reminder`` or
        ``ask.escalated`` event, the escalation's responders added; no touch). Asks
        another process is reading are skipped, so each fires once. The deliverer calls it
        when the earliest due time passes; a caller may too.

        Args:
            limit: The most asks read for each kind of due time in this call.

        Returns:
            How many asks this read closed, or fired a reminder or an escalation for.
        """
        check_limit(limit)
        now = self.clock.now()

        def body(tx: Transaction, plan: WritePlan) -> tuple[int, list[Fired]]:
            for ask in tx.asks.due_asks(now, limit):
                self._runs.read(plan, ask, now)
            fired = [item for ask in tx.asks.due_event_asks(now, limit) if (item := fire_due(ask, now)) is not None]
            plan.fired.extend(fired)
            for item in fired:  # a posted ask's thread hears it too (dropped for one never posted)
                for line in fired_replies(item, now):
                    plan.queue_channel_job(item.ask.id, REPLY, now, line.to_json())
            return len(plan.closed), fired

        closed, fired = self._units.run(body)
        self.metrics.fired(sum(item.reminded for item in fired), sum(item.escalated for item in fired))
        return closed + len(fired)

    def callback_states(self, ask_ids: Sequence[str]) -> dict[str, CallbackState]:
        """Where the callbacks of these asks stand (only asks with a ``callback_url`` appear).

        Args:
            ask_ids: The asks to look up.

        Returns:
            Each ask id with a callback, mapped to its state. An ask whose callback is not
            queued yet (it is open) is ``pending`` with no attempts.
        """
        ids = [check_id(ask_id, "ask_id") for ask_id in ask_ids]
        with self.store.transaction() as tx:
            return tx.outbox.callback_states(ids)

    def failed_callbacks(self, limit: int = 100) -> list[Ask]:
        """The asks whose callback failed (given up on), the latest failure first, as stored.

        Args:
            limit: The most asks returned.

        Returns:
            Those asks, as stored.
        """
        check_limit(limit)
        with self.store.transaction() as tx:
            found = [tx.ask(ask_id) for ask_id in tx.outbox.failed_callback_asks(limit)]
        return [ask for ask in found if ask is not None]

    def retry_callback(self, ask_id: str) -> CallbackState:
        """Re-arm the failed callback of ``ask_id``: due now, its attempts counted from 0.

        Args:
            ask_id: The ask whose callback failed.

        Returns:
            The callback's state after re-arming.

        Raises:
            UnknownAsk: No ask has this id.
            CallbackNotFailed: The ask has no failed callback (none, not queued yet,
                pending or delivered); nothing changes.
        """
        check_id(ask_id, "ask_id")
        now = self.clock.now()
        with self.store.transaction() as tx:
            self._existing_ask(tx, ask_id)
            if not tx.outbox.rearm_callback(ask_id, now):
                state = tx.outbox.callback_states([ask_id]).get(ask_id)
                raise CallbackNotFailed(ask_id, state.status.value if state else None)
            state = tx.outbox.callback_states([ask_id])[ask_id]
        self.signal.changed(Change.OUTBOX)
        return state

    def next_due(self) -> datetime | None:
        """The earliest due time among open asks something waits on.

        Returns:
            That time, or ``None`` when no open ask is waited on.
        """
        with self.store.transaction(Intent.READ_FIRST) as tx:
            return tx.asks.next_due()

    def count_open_asks(self, owner: str | None = None) -> int:
        """How many asks are open (all, or ``owner``'s), as stored: one past its TTL
        counts until a read closes it (:meth:`open_asks` closes them).

        Args:
            owner: Count only this owner's asks; ``None`` counts all of them.

        Returns:
            The number of open asks.
        """
        check_optional_id(owner, "owner")
        with self.store.transaction() as tx:
            return tx.asks.count_open_asks(owner)

    def count_pending_callbacks(self, owner: str) -> int:
        """How many of ``owner``'s callbacks are queued and neither delivered nor given up
        on: with its open asks, what a capped token holds (``max_open_asks``).

        Args:
            owner: The owner whose callbacks are counted.

        Returns:
            The number of those callbacks.
        """
        check_optional_id(owner, "owner")
        with self.store.transaction() as tx:
            return tx.outbox.count_pending_callbacks(owner)

    # -- the event log -------------------------------------------------------------------
    def events(self, ask_id: str) -> list[LoggedEvent]:
        """``ask_id``'s timeline: every event of the ask, in order (:mod:`parkgate.core.events`).

        Reading it is a read of the ask: one past its TTL closes as ``expired`` first, so
        its timeline ends with that close.

        Args:
            ask_id: The ask's id.

        Returns:
            Its events, ``seq`` 1 first.

        Raises:
            UnknownAsk: No ask has this id.
        """
        check_id(ask_id, "ask_id")
        now = self.clock.now()

        def body(tx: Transaction, plan: WritePlan) -> list[LoggedEvent]:
            self._runs.read(plan, self._existing_ask(tx, ask_id), now)
            plan.write(tx, self.clock)
            return tx.events.of_ask(ask_id)

        return self._units.run(body)

    def events_after(
        self,
        after_id: int = 0,
        limit: int = 100,
        *,
        owner: str | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
    ) -> list[LoggedEvent]:
        """Every ask's events after the one whose ``id`` is ``after_id``, in the order they
        were written: how a follower of the log (the event stream) reads on, and an export
        of a window pages through it.

        Args:
            after_id: The last event's ``id`` already seen (0: from the first kept).
            limit: At most this many events.
            owner: Only the events of this owner's asks.
            since: Only events at or after this moment.
            until: Only events before this moment.

        Returns:
            The events, oldest first, each with its ``id``.
        """
        check_limit(limit)
        with self.store.transaction() as tx:
            return tx.events.between(since, until, limit, max(0, after_id), owner)

    def last_event_id(self) -> int:
        """The ``id`` of the latest event written (0: none): where a new follower starts."""
        with self.store.transaction() as tx:
            return tx.events.last_id()

    def prune_events(self, older_than: timedelta) -> int:
        """Delete the events older than ``older_than`` of asks that have closed; an open
        ask's events are never pruned, however old, and neither is the newest event (the
        log's ids count on from it, so a follower's ``Last-Event-ID`` stays good).

        Args:
            older_than: How old an event must be to go (90 days, say).

        Returns:
            How many events were deleted.

        Raises:
            InputError: ``older_than`` is not a positive duration.
        """
        if not isinstance(older_than, timedelta) or older_than <= timedelta(0):
            raise InputError(f"older_than must be a positive duration, not {older_than!r}")
        with self.store.transaction() as tx:
            return tx.events.prune(self.clock.now() - older_than)

    def record_late(self, ask_id: str, sender: str | None, surface: str, text: str | None = None) -> Ask:
        """Record that an answer reached ``ask_id`` after it closed (a button on an old
        post, an answer naming a closed ask): a ``late`` event; the ask stays as it closed.

        Reading it is a read: an ask found past its TTL closes as ``expired`` first, and
        the answer is late for it too. An ask still open records nothing.

        Args:
            ask_id: The ask the answer named.
            sender: Who answered.
            surface: Where (``http``, ``slack``, ``telegram``, ...).
            text: What they answered, when it was an answer.

        Returns:
            The ask as it is after this read.

        Raises:
            UnknownAsk: No ask has this id.
        """
        check_id(ask_id, "ask_id")
        now = self.clock.now()

        def body(tx: Transaction, plan: WritePlan) -> Ask:
            ask = self._runs.read(plan, self._existing_ask(tx, ask_id), now)
            if not ask.is_open:
                plan.log(event_log.late(ask, now, sender, surface, text))
            return ask

        return self._units.run(body)

    def audit(self, limit: int | None = None) -> list[Ask]:
        """Open asks exactly as stored, closing nothing: the clock check's view.

        Args:
            limit: As in :meth:`open_asks`.

        Returns:
            The open asks as stored, oldest first; some may be past their TTL.
        """
        check_limit(limit)
        with self.store.transaction() as tx:
            return tx.asks.open_asks(limit)

    def history(self, query: HistoryQuery | None = None, **filters: Any) -> HistoryPage:
        """Asks of every status, filtered, a page at a time: the operator's history.

        A listing is a read: an open ask it bears on that is past its TTL is closed as
        expired first (at its due time) and listed so. ``open`` is listed by ``asked_at``,
        oldest first; ``all`` by ``asked_at`` and a closed status by ``closed_at``, the
        newest first; ``since`` and ``until`` bound that same time
        (:mod:`parkgate.core.history`).

        Args:
            query: The filters (:class:`~parkgate.core.history.HistoryQuery`); ``None``:
                made from ``filters``.
            **filters: :class:`~parkgate.core.history.HistoryQuery`'s fields (``status``,
                ``since``, ``until``, ``conversation_id``, ``responder``, ``channel``,
                ``outcome``, ``owner``, ``q``, ``limit``, ``cursor``), over ``query``'s.

        Returns:
            The page: its asks and ``next_cursor`` (``None`` on the last page).

        Raises:
            InputError: A filter is not one a query takes, or the cursor is not one a
                listing gave.
        """
        try:
            asked = dataclasses.replace(query, **filters) if query is not None else HistoryQuery(**filters)
        except TypeError as error:
            raise InputError(f"history takes HistoryQuery's fields: {error}") from None
        for name in ("conversation_id", "owner", "outcome", "responder", "channel"):
            check_optional_id(getattr(asked, name), name)
        _ = asked.after  # a cursor no listing gave is refused before anything runs
        now = self.clock.now()
        return self._units.run(lambda tx, plan: history_page(tx, plan, self._runs, self.clock, asked, now))

    def stats(
        self,
        since: datetime | None = None,
        until: datetime | None = None,
        by: str | None = None,
        *,
        owner: str | None = None,
    ) -> Stats:
        """The operator's figures for ``[since, until)``: asks opened, answered, expired and
        cancelled, time to answer (p50, p90, p99), reminders and escalations sent, misses
        per ask, and the open asks by age (:mod:`parkgate.core.stats` defines each).

        Computed in Python from the rows of one bounded read (the asks asked or closed in
        the window, and every open ask, at most
        :data:`~parkgate.gateway.history.MAX_FIGURE_ROWS`: past that the oldest are left
        out and ``truncated`` says so). A read: open asks past their TTL are closed as
        expired first.

        Args:
            since: The window's start (``None``: from the first ask).
            until: The window's end, exclusive (``None``: no end).
            by: ``"day"``, ``"responder"`` or ``"channel"``: figures per group too.
            owner: Only the asks this token name parked.

        Returns:
            The figures, in all and per group.

        Raises:
            InputError: ``by`` is not a grouping, or a time is not timezone-aware.
        """
        for name, moment in (("since", since), ("until", until)):
            if moment is not None and (not isinstance(moment, datetime) or moment.tzinfo is None):
                raise InputError(f"{name} must be a timezone-aware datetime")
        try:
            grouping = None if by is None else StatsBy(by)
        except ValueError:
            raise InputError(f"by must be one of day, responder, channel, not {by!r}") from None
        check_optional_id(owner, "owner")
        now = self.clock.now()
        return self._units.run(
            lambda tx, plan: window_stats(tx, plan, self._runs, self.clock, (since, until), now, grouping, owner)
        )

    def asks_starting(self, prefix: str, limit: int = 10) -> list[Ask]:
        """Asks, open or closed, whose id starts with ``prefix``, by id, as stored (closing
        nothing): how a short id (``parkgate asks`` prints 12 characters) finds its ask.

        Args:
            prefix: The start of an id.
            limit: The most asks returned (enough to say a start is ambiguous).

        Returns:
            The asks found, at most ``limit``.
        """
        check_string(prefix, "prefix")
        check_limit(limit)
        with self.store.transaction() as tx:
            return tx.history.asks_starting(prefix, limit)

    def parked(self, conversation_id: str) -> Ask | None:
        """The conversation's open ask exactly as stored, closing nothing.

        A look before deciding what to do with a message (which run it would go to, say);
        :meth:`handle` still makes the read that enforces the TTL. Like :meth:`audit`, it
        may return an ask that is past its TTL.

        Args:
            conversation_id: The conversation to look at.

        Returns:
            Its open ask as stored, or ``None``.
        """
        check_id(conversation_id, "conversation_id")
        return self._units.run(lambda tx, plan: tx.open_ask(conversation_id))

    def closed_follow_ups(
        self, limit: int = 100, *, owner: str | None = None, watcher: str | None = None, after: str | None = None
    ) -> list[Ask]:
        """Closed asks parked with ``follow_up`` whose follow-up is not done, earliest close
        first (claimed ones only once their claim has run out).

        Asks something waits on are closed on time by the due read; an open one is not
        listed, so a waiter also needs :meth:`read_due` or a deliverer. Each filter is
        applied by the store's query, so nobody else's asks take a place in the page.

        Args:
            limit: The most asks returned.
            owner: Only the asks this owner parked.
            watcher: Only the asks parked with ``follow_up=watcher`` (and those still
                pending from before follow-ups named their watcher).
            after: Only the asks listed after this ask (the last of the page before).

        Returns:
            Those closed asks.
        """
        check_limit(limit)
        owner = check_optional_id(owner, "owner")
        watcher = check_optional_id(watcher, "watcher")
        after = check_optional_id(after, "after")
        now = self.clock.now()
        with self.store.transaction() as tx:
            return tx.follow_ups.closed_follow_ups(now, limit, owner, watcher, after)

    def claim_follow_up(self, ask_id: str, lease: timedelta | float) -> bool:
        """Take the follow-up of ``ask_id`` for ``lease``: true for one caller, in any process.

        The claim holds until :meth:`follow_up_done` or until ``lease`` (a positive duration)
        runs out, when another caller may take it (the first one died). An ask without a
        pending follow-up (none was asked for, or it is done) is never claimed. The ask may
        still be open: a caller about to close it claims first, so that no other waiter acts
        on the close.

        Args:
            ask_id: The ask whose follow-up is taken.
            lease: How long the claim holds: a positive timedelta or seconds.

        Returns:
            True for the one caller that took it; false for everyone else.
        """
        check_id(ask_id, "ask_id")
        until = check_duration(lease, "lease")
        now = self.clock.now()
        with self.store.transaction() as tx:
            return tx.follow_ups.claim_follow_up(ask_id, now, now + until)

    def follow_up_done(self, ask_id: str) -> None:
        """Mark the follow-up of ``ask_id`` done: it is never listed or claimed again.

        Args:
            ask_id: The ask whose follow-up is done.
        """
        check_id(ask_id, "ask_id")
        now = self.clock.now()
        with self.store.transaction() as tx:
            tx.follow_ups.follow_up_done(ask_id, now)

    # -- runs -----------------------------------------------------------------------
    def run(self, run_id: str) -> Run | None:
        """The run with this id (its status, outcome, pending ask and answers).

        Reading a run whose pending ask is past its TTL closes that ask as ``expired``
        first (and with it the run), as reading the ask would.

        Args:
            run_id: The run's id.

        Returns:
            The run after this read, or ``None`` when no run has this id.
        """
        check_id(run_id, "run_id")
        now = self.clock.now()

        def body(tx: Transaction, plan: WritePlan) -> Run | None:
            run = tx.run(run_id)
            self._runs.pending_ask(tx, plan, run, now)
            change = plan.steps[-1].run if plan.steps else None  # an expiry closed the run too
            return changed_run(run, change) if run is not None and change is not None else run

        return self._units.run(body)

    def finish_run(self, run_id: str, outcome: str = RunOutcome.DONE.value, *, output: Any = None) -> Run:
        """Mark a run complete once the caller's work after its last answer is done.

        A pending ask past its TTL is closed as ``expired`` on the way. A run already
        complete takes the new ``outcome`` and ``output``.

        Args:
            run_id: The run to finish.
            outcome: An id-like string recorded on the run.
            output: What the run gave (an agent's final output), kept on the run as JSON:
                a JSON value of at most :data:`MAX_RUN_OUTPUT_CHARS` characters as JSON
                text. ``None`` keeps what was recorded before.

        Returns:
            The run, now complete.

        Raises:
            UnknownRun: No run has this id (an :class:`InputError`).
            RunStillAsking: The run's pending ask is open: answer or cancel it first, so
                no parked ask outlives its run.
        """
        check_id(run_id, "run_id")
        check_id(outcome, "outcome")
        check_output(output)
        now = self.clock.now()

        def body(tx: Transaction, plan: WritePlan) -> Run:
            run = tx.run(run_id)
            if run is None:
                raise UnknownRun(run_id)
            pending = self._runs.pending_ask(tx, plan, run, now)
            if pending is not None and pending.is_open:
                raise RunStillAsking(run_id, pending.id)
            finished = run_with(run, now, RunStatus.COMPLETE, outcome)
            if output is not None:
                finished = dataclasses.replace(finished, output=output)
            plan.runs.append(finished)
            return finished

        return self._units.run(body)

    def record_run(self, run_id: str, conversation_id: str, outcome: str, *, owner: str | None = None) -> Run:
        """Record a run that ended before it asked anything, as complete with ``outcome``.

        A run is otherwise made by its first ask. A caller that names its own runs records
        this way one that ended without asking (the LangGraph adapter, a thread whose first
        interrupt could not be asked), so its end is on record like any other's.

        Args:
            run_id: The run's id, new to the store.
            conversation_id: The conversation the run belonged to.
            outcome: An id-like string recorded on the run.
            owner: Who the run belongs to, as for :meth:`ask`.

        Returns:
            The run, recorded as complete.

        Raises:
            InputError: A run with this id exists (finish it with :meth:`finish_run`).
        """
        check_id(run_id, "run_id")
        check_id(conversation_id, "conversation_id")
        check_id(outcome, "outcome")
        owner = check_optional_id(owner, "owner")
        now = self.clock.now()

        def body(tx: Transaction, plan: WritePlan) -> Run:
            if tx.run(run_id) is not None:
                raise InputError(f"run {run_id} already exists: finish it with finish_run")
            run = run_with(new_run(run_id, conversation_id, now, owner=owner), now, RunStatus.COMPLETE, outcome)
            plan.runs.append(run)
            return run

        return self._units.run(body)

    def keep_agent_state(self, run_id: str, state: str) -> None:
        """Keep an agent SDK's serialised state with ``run_id``, replacing what was kept.

        The OpenAI Agents and Pydantic AI adapters keep here what resumes their agent (its
        ``RunState``, its message history, the decisions taken so far), so that any process
        on the database, or any client of its server, resumes the run. The run need not
        exist yet: the state is kept before the ask that makes it is parked, so that a close
        the moment it is parked finds it.

        Args:
            run_id: The run the state belongs to.
            state: The state as text.
        """
        check_id(run_id, "run_id")
        check_string(state, "state", limit=MAX_AGENT_STATE_CHARS)
        now = self.clock.now()
        with self.store.transaction() as tx:
            tx.agent_states.keep(run_id, state, now)

    def agent_state(self, run_id: str) -> str | None:
        """The agent state kept with ``run_id`` (:meth:`keep_agent_state`), or ``None``.

        Args:
            run_id: The run.

        Returns:
            The state as it was kept, or ``None`` when none is.
        """
        check_id(run_id, "run_id")
        with self.store.transaction() as tx:
            return tx.agent_states.kept(run_id)

    def forget_agent_state(self, run_id: str) -> None:
        """Remove the agent state kept with ``run_id``, if any (an adapter does, before it
        resumes the agent, so that no other process resumes it again).

        Args:
            run_id: The run.
        """
        check_id(run_id, "run_id")
        with self.store.transaction() as tx:
            tx.agent_states.forget(run_id)

    # -- channels -------------------------------------------------------------------
    def add_channel(self, channel: Channel) -> None:
        """Add ``channel`` (replacing one of the same name): this gateway's deliverer runs its jobs.

        Args:
            channel: The channel, such as a :class:`~parkgate.channels.slack.SlackChannel`.

        Raises:
            InputError: ``channel`` has no usable ``name``.
        """
        name = getattr(channel, "name", None)
        if not isinstance(name, str) or not name.isidentifier():
            raise InputError("a channel needs a name: an identifier, its key in post_to and in an ask's JSON")
        self.channels[name] = channel
        self._units.on_channel_jobs = lambda: self.signal.changed(Change.OUTBOX)
        self.signal.changed(Change.OUTBOX)  # jobs queued before it was added may be due

    def _check_post(self, conversation_id: str, spec: AskSpec, options: AskOptions, now: datetime) -> None:
        """Let the channel ``options.post_to`` names refuse the ask before it is parked
        (:class:`~parkgate.channels.base.ChecksPosts`), as the ask would be posted.

        Raises:
            InputError: The channel cannot post it there; nothing is written.
        """
        target = options.post_to
        channel = self.channels.get(target.channel) if target is not None else None
        if target is None or not isinstance(channel, ChecksPosts):
            return
        draft = Ask(
            id="",
            conversation_id=conversation_id,
            run_id="",
            kind=spec.kind,
            prompt=spec.prompt,
            options=spec.options,
            status=AskStatus.OPEN,
            asked_at=now,
            last_touched=now,
            ttl_seconds=0.0,
            default=options.default,
            owner=options.owner,
            expect=options.expect,
            responders=options.responders,
            quorum=options.quorum,
        )
        channel.check_post(draft, target.where)

    def handle_in_channel(
        self,
        conversation_id: str,
        text: str | bytes,
        message_id: str | None,
        sender: str | None,
        *,
        ask_id: str | None = None,
    ) -> Reply:
        """:meth:`handle` for a message or a click on a channel: a reply shown in the ask's
        thread (retry, escalated, reshown, voted, not_yours) is queued for the channel in
        the same transaction, so it is posted even if this process stops right after.

        Args:
            conversation_id: The conversation of the ask the message is for.
            text: What the person wrote, or the click's equivalent (``"2"``, ``"/cancel"``).
            message_id: The platform's id of the event: a retry of it changes nothing.
            sender: The platform's user id.
            ask_id: A click's ask: the message then goes to that ask only, and is ``pass``
                if another ask is open in the conversation (or none is).

        Returns:
            What was done, as :meth:`handle` returns it.

        Raises:
            InputError: Bad input, raised before anything is read or written.
        """
        if ask_id is not None:
            check_id(ask_id, "ask_id")
        return self._message(conversation_id, text, message_id, sender, channel_reply=True, only_ask=ask_id)

    def channel_post(self, ask_id: str) -> ChannelPost | None:
        """Where ``ask_id`` is posted on a channel, as stored (``None``: never posted).

        Args:
            ask_id: The ask's id.

        Returns:
            The post: its channel, target, location (``None`` until posted) and thread.
        """
        check_id(ask_id, "ask_id")
        with self.store.transaction() as tx:
            return tx.channels.post_of(ask_id)

    def channel_posts(self, ask_ids: list[str]) -> list[ChannelPost | None]:
        """Where each of ``ask_ids`` is posted on a channel, as stored, in their order.

        Args:
            ask_ids: The asks' ids.

        Returns:
            Each ask's post, ``None`` for one never posted.
        """
        if not ask_ids:
            return []
        with self.store.transaction() as tx:
            found = tx.channels.posts_of(ask_ids)
        return [found.get(ask_id) for ask_id in ask_ids]

    def ask_in_thread(self, channel: str, thread_key: str) -> tuple[str, str] | None:
        """The latest ask posted in a channel's thread, as stored: how a reply there is routed.

        Args:
            channel: The channel's name.
            thread_key: The thread's key, as the channel's :class:`~parkgate.channels.Posted` gave it.

        Returns:
            ``(ask id, conversation id)``, or ``None`` when no ask was posted there.
        """
        with self.store.transaction() as tx:
            return tx.channels.ask_in_thread(channel, thread_key)

    def open_asks_in(
        self, channel: str, thread_key: str, *, under: bool = False, limit: int = 2
    ) -> list[tuple[str, str]]:
        """The open asks posted in a channel's thread, the latest first, as stored: how a
        typed message there is routed (one open ask takes it; with more, none does unless
        the message replies to one's post).

        Args:
            channel: The channel's name.
            thread_key: The thread's key, as the channel's :class:`~parkgate.channels.Posted`
                gave it; with ``under``, the start the keys of a place's threads share
                (a Telegram chat's, ``"-100/0/"``).
            under: Read every thread whose key starts with ``thread_key``.
            limit: At most this many (2 tells one from several).

        Returns:
            ``(ask id, conversation id)`` pairs; empty when nothing open was posted there.
        """
        check_limit(limit)
        with self.store.transaction() as tx:
            return tx.channels.open_asks_in(channel, thread_key, under, limit)

    def failed_channel_jobs(self, limit: int = 100) -> list[tuple[ChannelJob, str | None]]:
        """The channel jobs given up, the latest first, each with its last error.

        Args:
            limit: At most this many (a whole number of at least 1).

        Returns:
            ``(job, last error)`` pairs.
        """
        check_limit(limit)
        with self.store.transaction() as tx:
            return tx.channels.failed_jobs(limit)

    # -- approvals -------------------------------------------------------------------
    def requires_approval(
        self,
        *,
        conversation: FromCall,
        prompt: FromCall,
        ttl: timedelta | float | None = None,
        responders: Sequence[str] | None = None,
    ) -> Callable[[Callable[P, R]], Callable[P, R]]:
        """A decorator: each call of the function first asks a person to Approve or Reject it.

        The ask is parked (watched: a deliverer closes it at its TTL) in ``conversation``,
        and the call blocks until it closes (an ``async`` function awaits it, the wait held
        on a worker thread). Approved, the function runs and its result is returned::

            @gateway.requires_approval(conversation="ops", prompt=lambda path: f"Delete {path}?")
            def delete(path: str) -> None: ...

        Args:
            conversation: The conversation to ask in, or a function of the call's arguments
                that gives it.
            prompt: The question, or a function of the call's arguments that gives it.
            ttl: The ask's TTL (the gateway's by default): unanswered by then, the call is
                refused as ``expired``.
            responders: Who may answer (anyone when left out).

        Returns:
            The decorator; the function it returns takes and returns what the function does.

        Raises:
            InputError: ``conversation`` or ``prompt`` is neither text nor a function, or
                ``ttl`` is not a positive duration (raised at decoration).
        """
        return approval_gate(
            self.ask, self.wait, conversation=conversation, prompt=prompt, ttl=ttl, responders=responders
        )


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
