"""One unit of work: a store transaction, what it writes, and its retry on a conflict.

A call's body reads through the transaction and states what it writes in a
:class:`WritePlan`; the plan becomes one :class:`~parkgate.store.writes.Writes` value,
which the store sends in its fastest form. The asks the body closed are reported once
the transaction commits (:class:`~parkgate.gateway.closing.CloseReport`).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TypeVar

from parkgate.clock import Clock
from parkgate.core.model import Ask, Run
from parkgate.fence import receiver_host
from parkgate.gateway.closing import ClosedAsk, CloseReport
from parkgate.gateway.shapes import ask_to_dict
from parkgate.metrics import Metrics
from parkgate.store import Intent, Store, StoreConflict, Transaction
from parkgate.store.writes import AskStep, NewAsk, QueuedCallback, StoredReply, Writes

#: A unique-key conflict means a racing worker committed first; the retry sees its work.
CONFLICT_RETRIES = 5

Result = TypeVar("Result")


class WritePlan:
    """What one unit of work writes, gathered as the gateway decides, and the asks it closed."""

    def __init__(self) -> None:
        self.steps: list[AskStep] = []
        self.runs: list[Run] = []
        self.park: NewAsk | None = None
        self.reply: StoredReply | None = None
        self.closed: list[ClosedAsk] = []
        #: How many of ``closed`` were written already (see :meth:`write`).
        self._queued = 0

    def close(self, step: AskStep, idle_minutes: float | None = None) -> ClosedAsk:
        """Write ``step``, which closes its ask, and report the close after commit."""
        self.steps.append(step)
        closed = ClosedAsk(step.ask, idle_minutes)
        self.closed.append(closed)
        return closed

    def write(self, tx: Transaction, clock: Clock) -> None:
        """Hand what is planned so far to ``tx`` as one value, with the callbacks of the asks
        it closes; the plan then starts empty (its closes stay to report)."""
        callbacks = self._callbacks(clock) if len(self.closed) > self._queued else ()
        self._queued = len(self.closed)
        if self.steps or self.runs or self.park is not None or self.reply is not None or callbacks:
            tx.write(Writes(tuple(self.steps), tuple(self.runs), self.park, self.reply, callbacks))
            self.steps, self.runs, self.park, self.reply = [], [], None, None

    def _callbacks(self, clock: Clock) -> tuple[QueuedCallback, ...]:
        """The callbacks of the asks closed since the last write (those with a callback URL)."""
        return tuple(
            QueuedCallback(
                item.ask.id,
                item.ask.callback_url,
                _payload(item.ask),
                clock.now(),
                host=receiver_host(item.ask.callback_url),
                owner=item.ask.owner,
            )
            for item in self.closed[self._queued :]
            if item.ask.callback_url
        )


def _payload(ask: Ask) -> str:
    """A callback's body: the closed ask's public JSON."""
    return json.dumps(ask_to_dict(ask), ensure_ascii=False)


class UnitRunner:
    """Runs a call's body in a store transaction, retried on a conflict, and reports closes."""

    def __init__(self, store: Store, clock: Clock, metrics: Metrics, report: CloseReport) -> None:
        self._store = store
        self._clock = clock
        self._metrics = metrics
        self._report = report

    def run(self, body: Callable[[Transaction, WritePlan], Result]) -> Result:
        for attempt in range(CONFLICT_RETRIES):
            plan = WritePlan()
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
        return result
