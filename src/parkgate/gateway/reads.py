"""The gateway's reads and operator calls: asks by id (and the wait for one) and in
lists, the due read, the gauges, callbacks and follow-ups. Reading an ask past its TTL closes it (see
:func:`parkgate.core.machine.on_read`); the calls marked "as stored" close nothing."""

from __future__ import annotations

import time
from collections.abc import Sequence
from datetime import datetime, timedelta

from parkgate.channels.jobs import REPLY
from parkgate.channels.reminders import fired_replies
from parkgate.clock import Clock
from parkgate.core.model import Ask, CallbackState
from parkgate.core.schedule import Fired, fire_due
from parkgate.errors import CallbackNotFailed, InputError, UnknownAsk
from parkgate.gateway.checks import check_duration, check_id, check_limit, check_optional_id, wait_seconds
from parkgate.gateway.closing import pause_before_reading
from parkgate.gateway.messages import UnitRunner
from parkgate.gateway.runs import RunLifeCycle, WritePlan
from parkgate.metrics import Metrics
from parkgate.store import Store, Transaction
from parkgate.store.base import AskGauges
from parkgate.store.signal import Change, CloseSignal


class ReadCalls:
    """The read and operator calls of :class:`~parkgate.gateway.Gateway`."""

    store: Store
    clock: Clock
    signal: CloseSignal
    metrics: Metrics
    _runs: RunLifeCycle
    _units: UnitRunner

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
        with self.store.transaction() as tx:
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
