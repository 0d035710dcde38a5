"""The gateway's calls on runs: read one, finish one, record one that never asked, and
keep an agent SDK's state with one."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from parkgate.clock import Clock
from parkgate.core.kinds import RunOutcome, RunStatus
from parkgate.core.model import Run
from parkgate.errors import InputError, RunStillAsking, UnknownRun
from parkgate.gateway.checks import check_id, check_optional_id, check_string
from parkgate.gateway.messages import UnitRunner
from parkgate.gateway.runs import RunLifeCycle, WritePlan, changed_run, new_run, run_with
from parkgate.store import Store, Transaction

#: The longest agent state kept with a run, in characters (a transcript, not a log).
MAX_AGENT_STATE_CHARS = 64 * 1024 * 1024
#: The longest output a run keeps, in characters of its JSON text.
MAX_RUN_OUTPUT_CHARS = 256_000


def check_output(output: object) -> None:
    """A run's output as :meth:`RunCalls.finish_run` keeps it: a JSON value (finite
    numbers, text that is Unicode) of at most :data:`MAX_RUN_OUTPUT_CHARS` as JSON text."""
    try:
        text = json.dumps(output, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as error:
        raise InputError(f"output is not a JSON value ({error})") from None
    check_string(text, "output (as JSON)", limit=MAX_RUN_OUTPUT_CHARS)


class RunCalls:
    """The run calls of :class:`~parkgate.gateway.Gateway`."""

    clock: Clock
    store: Store
    _runs: RunLifeCycle
    _units: UnitRunner

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
