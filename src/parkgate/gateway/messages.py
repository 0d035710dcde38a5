"""One inbound message's unit of work: :meth:`MessageCalls.handle` reads the
conversation's open ask, lets the run life cycle decide, writes and commits, in one store
transaction; every other gateway call runs its body the same way (:class:`UnitRunner`).

A call's body reads through the transaction and states what it writes in a
:class:`~parkgate.gateway.runs.WritePlan`; the runner writes the plan, commits, retries
on a conflict, and reports the asks the body closed once the transaction commits
(:class:`~parkgate.gateway.closing.CloseReport`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from parkgate.channels.base import ChannelReply
from parkgate.channels.jobs import POSTED_REPLIES, REPLY
from parkgate.clock import Clock
from parkgate.core.model import Reply
from parkgate.gateway.checks import check_id, check_inbound_text, check_sender
from parkgate.gateway.closing import CloseReport
from parkgate.gateway.events import AskEvents
from parkgate.gateway.runs import RunLifeCycle, WritePlan
from parkgate.metrics import Metrics
from parkgate.store import Intent, Store, StoreConflict, Transaction
from parkgate.store.writes import StoredReply

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

    def run(self, body: Callable[[Transaction, WritePlan], Result]) -> Result:
        """``body``'s result, from the one try of it that committed (a conflict retries it)."""
        for attempt in range(CONFLICT_RETRIES):
            plan = WritePlan(self._events)
            try:
                # A unit may find nothing to change: it reads first, without the write
                # lock on SQLite; a conflict at its first write retries with the lock first.
                with self._store.transaction(Intent.WRITE if attempt else Intent.READ_FIRST) as tx:
                    result = body(tx, plan)
                    plan.write(tx, self._clock)
                break
            except StoreConflict:
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


class MessageCalls:
    """The message call of :class:`~parkgate.gateway.Gateway`, and the count of every reply."""

    clock: Clock
    metrics: Metrics
    _runs: RunLifeCycle
    _units: UnitRunner

    def handle(
        self, conversation_id: str, text: str | bytes, message_id: str | None = None, sender: str | None = None
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

        Returns:
            What was done, by kind. With nothing parked (or an ask that just expired) it
            is ``pass``: route the message onward as usual.

        Raises:
            InputError: Bad input, raised before anything is read or written.
        """
        return self._message(conversation_id, text, message_id, sender)

    def _message(
        self,
        conversation_id: str,
        text: str | bytes,
        message_id: str | None,
        sender: str | None,
        *,
        channel_reply: bool = False,
        only_ask: str | None = None,
    ) -> Reply:
        """:meth:`handle`; with ``channel_reply`` a reply shown in the thread is queued for the
        ask's channel in the same commit, and with ``only_ask`` a message finds only that
        ask open (another open ask in the conversation is left alone: ``pass``)."""
        check_id(conversation_id, "conversation_id")
        message = check_inbound_text(text)
        if message_id is not None:
            check_id(message_id, "message_id")
        check_sender(sender)
        now = self.clock.now()
        replayed = False

        def body(tx: Transaction, plan: WritePlan) -> Reply:
            nonlocal replayed
            earlier, ask = tx.message_context(conversation_id, message_id)
            replayed = earlier is not None  # set on every try: a retry may read for real
            if earlier is not None:
                return Reply.from_json(earlier)
            if only_ask is not None and ask is not None and ask.id != only_ask:
                ask = None
            reply = self._runs.decide(tx, plan, ask, message, now, sender)
            if channel_reply and reply.ask_id is not None and reply.kind in POSTED_REPLIES:
                plan.queue_channel_job(reply.ask_id, REPLY, now, ChannelReply(reply.kind, reply.text, sender).to_json())
            if message_id is not None:
                plan.reply = StoredReply(conversation_id, message_id, reply.to_json(), now)
            return reply

        reply = self._units.run(body)
        # A redelivery changes nothing, the metrics included: its reply was counted once.
        return reply if replayed else self._counted(reply)

    def _counted(self, reply: Reply) -> Reply:
        """Count a committed reply (and the ask it parked next) in the metrics."""
        self.metrics.reply(reply.kind)
        if reply.next_ask is not None:
            self.metrics.reply(reply.next_ask.kind)
        return reply
