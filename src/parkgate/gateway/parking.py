"""A park's unit of work: a new ask in its run, or, for a ``key`` parked before, that ask."""

from __future__ import annotations

from datetime import datetime

from parkgate.core import machine, stopping_point
from parkgate.core.kinds import ReplyKind
from parkgate.core.model import Ask, Reply
from parkgate.core.phrases import PHRASES
from parkgate.gateway.options import AskOptions
from parkgate.gateway.runs import RunLifeCycle, WritePlan, asked_reply, new_id, new_run
from parkgate.store import Transaction


def keyed_reply(ask: Ask) -> Reply:
    """The reply a park with a known key returns: the ask that key parked.

    Open, it is that ask's ``asked`` reply, as its first park returned it. Closed, it is
    ``asked`` with ``parked`` false and the answer recorded (``answer``, ``option_index``;
    ``None`` for an ask cancelled or expired without a default): :meth:`Gateway.get
    <parkgate.Gateway.get>` or ``wait`` on ``ask_id`` gives its status and outcome.
    """
    if ask.is_open:
        return asked_reply(ask)
    text = PHRASES[ReplyKind.ASKED].format(menu=machine.render_question(ask))
    return Reply(
        ReplyKind.ASKED,
        text,
        parked=False,
        ask_id=ask.id,
        answer=ask.answer,
        option_index=ask.option_index,
        run_id=ask.run_id,
    )


class Park:
    """One park's body for :meth:`UnitRunner.run`; ``fresh`` says whether it parked a new ask
    (false when its key had parked one already: nothing new to count)."""

    def __init__(
        self,
        runs: RunLifeCycle,
        conversation_id: str,
        spec: stopping_point.AskSpec,
        options: AskOptions,
        now: datetime,
    ) -> None:
        self._runs = runs
        self._conversation_id = conversation_id
        self._spec = spec
        self._options = options
        self._now = now
        self.fresh = True

    def __call__(self, tx: Transaction, plan: WritePlan) -> Reply:
        options, now = self._options, self._now
        if options.key is not None:
            known = self._known(tx, plan, options.key)
            self.fresh = known is None  # set on every try: a retry may find the racing park's
            if known is not None:
                return known
        # The run is checked before the conversation is cleared: a run that takes no new
        # ask refuses the park before anything is read as closed. A new run id needs no read.
        run_id, owner = options.run_id or new_id(), options.owner
        joined = self._runs.joined_run(tx, run_id, self._conversation_id, owner, now) if options.run_id else None
        self._runs.clear_for_new_ask(tx, plan, self._conversation_id, options.replace, now, owner)
        run = joined or new_run(run_id, self._conversation_id, now, owner=owner)
        ask = self._runs.new_ask(run, self._spec, now, options)
        if options.key is not None:
            tx.keys.record_key(owner, options.key, ask.id)
        return self._runs.park(plan, run, ask, now, options.follow_up, options.post_to)

    def _known(self, tx: Transaction, plan: WritePlan, key: str) -> Reply | None:
        """The reply for the ask ``key`` parked before (read as a read leaves it), or ``None``."""
        ask_id = tx.keys.ask_for_key(self._options.owner, key)
        ask = tx.ask(ask_id) if ask_id is not None else None
        return None if ask is None else keyed_reply(self._runs.read(plan, ask, self._now))
