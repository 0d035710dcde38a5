"""The bridge both agent SDK adapters share: :class:`ToolApprovals` parks each tool call
waiting for approval as an ask, keeps the SDK's state with the run (in the store, or on
the server over HTTP), and resumes the agent once, with every decision of its turn,
whoever closed the last ask."""

from __future__ import annotations

import asyncio
import inspect
import logging
import threading
import time
import uuid
from collections.abc import Awaitable, Coroutine, Mapping, Sequence
from datetime import timedelta
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic_core import to_jsonable_python

from parkgate.adapters import common
from parkgate.adapters.approvals import over_http
from parkgate.adapters.approvals.records import (
    REASON,
    Kept,
    ToolCall,
    decision_of,
    digest,
    question,
    reason_of,
    reason_question,
    record,
    record_of,
    rejection,
    undecided,
)
from parkgate.adapters.approvals.turns import AgentDriver, AgentStep, Finished, ResultHook, Turn
from parkgate.adapters.following import FOLLOW_UP_CHANGES, follow_up_until_cancelled, pages, watcher_name
from parkgate.core import phrases as P
from parkgate.core.kinds import AskStatus, ReplyKind, RunOutcome, RunStatus
from parkgate.core.model import Ask, Reply
from parkgate.errors import AskAlreadyOpen, ConversationBusy, InputError, RunClosed, RunStillAsking
from parkgate.gateway import Gateway
from parkgate.gateway.async_gateway import AsyncGateway
from parkgate.gateway.checks import (
    MAX_ID_CHARS,
    check_duration,
    check_id,
    check_output,
    check_quorum,
    check_responders,
    check_string,
)
from parkgate.store.signal import FALLBACK_READ_SECONDS

if TYPE_CHECKING:
    from parkgate.client import AsyncClient, Client

T = TypeVar("T")
log = logging.getLogger("parkgate.agents")

#: How long a claimed follow-up is left to its claimer before another may take it over.
DEFAULT_LEASE = timedelta(hours=1)
#: Closed asks read per page; a pass of the watcher reads every page.
FOLLOW_UP_BATCH = 100
#: How often a sync watcher with a ``stop`` event looks at it while idle.
STOP_CHECK_SECONDS = 0.2
_CLOSING = frozenset({ReplyKind.SELECTED, ReplyKind.ANSWERED, ReplyKind.CANCELLED})


class ToolApprovals:
    """Parks an agent's tool approvals in a gateway and resumes the agent (see
    docs/adapters/openai-agents.md and docs/adapters/pydantic-ai.md).

    Args:
        gateway: A :class:`Gateway` or an :class:`AsyncGateway`; or, over HTTP, a
            :class:`~parkgate.client.Client` or an :class:`~parkgate.client.AsyncClient`
            (the watcher then needs a Gateway: call :meth:`follow_up` instead).
        driver: The SDK's side: starts, reads and resumes the agent.
        ttl: Every approval's TTL; the gateway's by default.
        responders: Who may answer (senders); anyone when left out.
        quorum: How many responders must pick the same option.
        lease: How long a resume may take before another waiter may take it over.
        ask_reason: After a Reject, ask why (a text question in the same run, with the
            approvals' TTL and responders; ``-``, or no answer before the TTL, gives no
            reason): the model reads "Rejected: <reason>". ``False`` resumes at once.
        on_result: Called with a :class:`Finished` whenever a resumed run finishes, in
            whichever call or process resumed it (:meth:`handle`, :meth:`follow_up`,
            :meth:`watch`), after its final output is recorded on the run (its ``output``);
            an awaitable it returns is awaited. An error it raises is logged.

    Raises:
        InputError: ``gateway`` is none of those, or an option is bad.
    """

    def __init__(
        self,
        gateway: Gateway | AsyncGateway | Client | AsyncClient,
        driver: AgentDriver,
        *,
        ttl: timedelta | float | None = None,
        responders: Sequence[str] | None = None,
        quorum: int = 1,
        lease: timedelta = DEFAULT_LEASE,
        ask_reason: bool = True,
        on_result: ResultHook | None = None,
    ) -> None:
        self._backend = over_http.backend(gateway)
        #: Where the approvals' calls go: the gateway awaited, or a client standing in for it.
        self.gateway = self._backend.calls
        self.driver = driver
        self.ttl = check_duration(ttl, "ttl") if ttl is not None else None
        checked = check_responders(list(responders) if responders is not None else None)
        self.responders = list(checked) or None
        self.quorum = check_quorum(quorum if quorum != 1 else None, checked)
        self.lease = lease
        self.ask_reason = ask_reason
        self.on_result = on_result
        #: What this agent's approvals are parked with (``follow_up``) and its watcher lists.
        self.watcher = watcher_name(driver.sdk, driver.name)

    # -- the calls -----------------------------------------------------------------------
    async def run(self, conversation_id: str, agent_input: Any) -> Turn:
        """Run the agent on ``agent_input`` for ``conversation_id`` and park its first approval.

        Args:
            conversation_id: Where the approvals are parked.
            agent_input: The agent's input, as its SDK takes it.

        Returns:
            ``asked`` with the first approval, or ``pass`` with the final output when the
            agent finished without one.

        Raises:
            AskAlreadyOpen: Another ask is open in the conversation (the agent ran; nothing
                was parked or kept).
        """
        check_id(conversation_id, "conversation_id")
        step = await self.driver.start(agent_input)
        return await self._settle(conversation_id, None, step, None)

    async def handle(
        self,
        conversation_id: str,
        text: str | bytes,
        message_id: str | None = None,
        sender: str | None = None,
        *,
        reason: str | None = None,
    ) -> Turn:
        """Handle one message from the person; resume the agent when it closes an approval.

        The message goes through :meth:`Gateway.handle <parkgate.Gateway.handle>`. A reply
        that closes an approval (a selection, a cancel, an expiry found on this read)
        decides its tool call; once every call of the turn is decided the agent is resumed
        here, and its next approval parked or its final output returned. A Reject asks
        why first (``turn.asked``), unless ``reason`` gives it.

        Args:
            conversation_id: The conversation the message arrived in.
            text: What the person wrote.
            message_id: The message's id on its surface, for redeliveries.
            sender: Who wrote it (checked against the responders; kept as ``answered_by``).
            reason: Why, when this message rejects (a surface with a reason field): the
                model reads it, and no question asks for it. Unused by any other message.

        Returns:
            The gateway's reply, and what the agent did.
        """
        given = None if reason is None else check_string(reason, "reason").strip() or None
        reply = await self.gateway.handle(conversation_id, text, message_id, sender)
        closed_id = reply.ask_id if reply.kind in _CLOSING else reply.expired_ask_id
        if closed_id is None:
            return Turn(reply)
        ask = await self.gateway.get(closed_id)
        turn = await self._follow_up(ask, reply, given)
        return turn if turn is not None else Turn(reply)

    async def follow_up(self) -> int:
        """Resume every run of this agent whose approval closed and was not followed up
        (one pass of :meth:`watch`). Only this agent's approvals are read (those parked
        naming :attr:`watcher`), every page of them.

        Returns:
            How many closed approvals were followed up.
        """

        def read(after: str | None) -> Awaitable[list[Ask]]:
            return self.gateway.closed_follow_ups(FOLLOW_UP_BATCH, watcher=self.watcher, after=after)

        count = 0
        async for ask in pages(read, FOLLOW_UP_BATCH):
            try:
                count += await self._follow_up(ask, None) is not None
            except Exception:
                log.exception("resuming the agent run of ask %s failed; it is tried again later", ask.id)
        return count

    async def watch(self) -> None:
        """Follow up closed approvals until cancelled: a pass at once, then one whenever an
        ask closes (here or in another process, a due read's expiry among them), and at
        least every :data:`~parkgate.store.signal.FALLBACK_READ_SECONDS`. Run it as a task.

        Raises:
            InputError: The approvals are on a client: the close signal is the database's.
        """
        what = f"the approvals of agent {self.driver.name!r}"
        await follow_up_until_cancelled(self._local("watch").signal, self.follow_up, log, what)

    # -- sync ----------------------------------------------------------------------------
    def run_sync(self, conversation_id: str, agent_input: Any) -> Turn:
        """:meth:`run` from code with no running event loop."""
        return self._blocking(self.run(conversation_id, agent_input))

    def handle_sync(
        self,
        conversation_id: str,
        text: str | bytes,
        message_id: str | None = None,
        sender: str | None = None,
        *,
        reason: str | None = None,
    ) -> Turn:
        """:meth:`handle` from code with no running event loop."""
        return self._blocking(self.handle(conversation_id, text, message_id, sender, reason=reason))

    def follow_up_sync(self) -> int:
        """:meth:`follow_up` from code with no running event loop."""
        return self._blocking(self.follow_up())

    def watch_sync(self, stop: threading.Event) -> None:
        """:meth:`watch` in a thread of its own, until ``stop`` is set.

        Raises:
            InputError: The approvals are on a client: the close signal is the database's.
        """
        wake = threading.Event()
        remove = self._local("watch_sync").signal.listen(
            lambda change, ask_id: wake.set() if change in FOLLOW_UP_CHANGES else None
        )
        try:
            while not stop.is_set():
                wake.clear()
                try:
                    self.follow_up_sync()
                except Exception:
                    log.exception("following up the approvals of agent %r failed", self.driver.name)
                deadline = time.monotonic() + FALLBACK_READ_SECONDS
                while not wake.is_set() and not stop.is_set() and time.monotonic() < deadline:
                    wake.wait(STOP_CHECK_SECONDS)
        finally:
            remove()

    # -- following up ----------------------------------------------------------------------
    async def _follow_up(self, ask: Ask, reply: Reply | None, reason: str | None = None) -> Turn | None:
        """Decide the call of a closed approval (or reason question) and resume the agent
        when the turn is decided; ``None`` when the ask is not this agent's, or another
        waiter has its follow-up."""
        data = record_of(ask, self.driver.sdk, self.driver.name)
        if data is None or ask.run_id is None or ask.is_open:
            return None
        if not await self.gateway.claim_follow_up(ask.id, self.lease):
            return None
        kept = await self._kept(ask.run_id)
        turn = None if kept is None else await self._decide(ask, data, kept, reply, reason)
        await self.gateway.follow_up_done(ask.id)
        return turn

    async def _decide(
        self, ask: Ask, data: Mapping[str, Any], kept: Kept, reply: Reply | None, reason: str | None
    ) -> Turn:
        assert ask.run_id is not None
        calls = await self.driver.pending(kept)
        call = next((call for call in calls if call.call_id == data["call_id"]), None)
        shown = call if call is not None and digest(call.arguments) == data.get("digest") else None
        if data.get("asks") == REASON:  # why a call was rejected: the reason question closed
            if shown is not None:
                by = data.get("rejected_by")
                kept = kept.deciding(shown.call_id, rejection(shown.arguments, reason_of(ask), by))
            if ask.status is AskStatus.CANCELLED:  # a cancel word or an operator's: the turn is dropped
                for call in undecided(calls, kept.decisions):
                    kept = kept.deciding(call.call_id, decision_of(ask, call.arguments))
        elif ask.status is AskStatus.ANSWERED:
            if shown is not None:
                if ask.answer == P.HITL_REJECT and reason is None and self.ask_reason:
                    asked = await self._ask_reason(ask, shown)
                    if asked is not None:
                        return Turn(reply or asked, asked=asked)
                kept = kept.deciding(shown.call_id, decision_of(ask, shown.arguments, reason))
        else:  # nobody decided: every call of the turn still waiting is rejected, saying why
            for call in undecided(calls, kept.decisions):
                kept = kept.deciding(call.call_id, decision_of(ask, call.arguments))
        left = undecided(calls, kept.decisions)
        if left:
            await self._keep(ask.run_id, kept)
            asked = await self._ask(ask.conversation_id, ask.run_id, calls, left[0])
            return Turn(reply or asked, asked=asked)
        # At most once: the state is dropped before the agent runs on, so a resumer that dies
        # mid-run leaves nothing for the next claimer to resume (and run a tool) again.
        await self._keep(ask.run_id, None)
        step = await self.driver.resume(kept)
        return await self._settle(ask.conversation_id, ask.run_id, step, reply)

    async def _settle(self, conversation_id: str, run_id: str | None, step: AgentStep, reply: Reply | None) -> Turn:
        """After the agent ran: park its first approval, or close its run with its output."""
        if not step.calls:
            if run_id is not None:
                await self._close_run(run_id, step.final_output)
                await self._tell(Finished(conversation_id, run_id, step.final_output, step.result))
            return Turn(reply or common.pass_reply(), step.result, step.final_output, finished=True)
        if run_id is None or not await self._running(run_id):
            if run_id is not None:
                await self._keep(run_id, None)
            run_id = uuid.uuid4().hex  # a closed run is never reopened: the next approvals get a new one
        await self._keep(run_id, Kept(step.state, tuple(call.call_id for call in step.calls)))
        try:
            asked = await self._ask(conversation_id, run_id, step.calls, step.calls[0])
        except Exception:
            if not await self._running(run_id):  # the run was never made: keep nothing for it
                await self._keep(run_id, None)
            raise
        return Turn(reply or asked, step.result, asked=asked)

    async def _ask(self, conversation_id: str, run_id: str, calls: Sequence[ToolCall], call: ToolCall) -> Reply:
        spec = question(call, calls.index(call) + 1, len(calls))
        context = record(self.driver.sdk, self.driver.name, call)
        return await self.gateway.ask(
            conversation_id,
            spec.prompt,
            list(spec.options),
            kind=spec.kind,
            run_id=run_id,
            phase=phase_of(call),
            ttl=self.ttl,
            responders=self.responders,
            quorum=self.quorum if self.quorum != 1 else None,
            context=context,
            follow_up=self.watcher,
        )

    async def _ask_reason(self, rejected: Ask, call: ToolCall) -> Reply | None:
        """Ask why ``call`` was rejected, in its run and conversation; ``None`` when the
        question cannot be parked (then the call is rejected with no reason)."""
        assert rejected.run_id is not None
        spec = reason_question(call)
        phase = phase_of(call)
        context = record(self.driver.sdk, self.driver.name, call, asks=REASON, rejected_by=rejected.answered_by)
        try:
            return await self.gateway.ask(
                rejected.conversation_id,
                spec.prompt,
                kind=spec.kind,
                run_id=rejected.run_id,
                phase=f"{phase}:{REASON}" if len(phase) + len(REASON) < MAX_ID_CHARS else None,
                ttl=self.ttl,
                responders=self.responders,
                default=P.HITL_NO_REASON,  # a reason nobody gives is no reason: the run goes on
                context=context,
                follow_up=self.watcher,
            )
        except (AskAlreadyOpen, ConversationBusy, RunClosed) as refused:  # another ask took the conversation
            log.warning("run %s: no reason asked for the rejected %s (%s)", rejected.run_id, call.tool, refused)
            return None

    async def _running(self, run_id: str) -> bool:
        run = await self.gateway.run(run_id)
        return run is not None and run.status == RunStatus.RUNNING

    async def _close_run(self, run_id: str, final_output: Any) -> None:
        """The agent finished: forget its state, close its run as ``done`` if still running,
        and record the final output on it (a run a cancel or an expiry ended keeps its outcome)."""
        await self._keep(run_id, None)
        run = await self.gateway.run(run_id)
        if run is None:
            return
        output = self._output(run_id, final_output)
        outcome = run.outcome or RunOutcome.DONE.value
        if run.status == RunStatus.RUNNING:
            try:
                await self.gateway.finish_run(run_id, RunOutcome.DONE.value, output=output)
                return
            except RunStillAsking as still:  # an approval the agent no longer waits on
                await self.gateway.cancel(still.ask_id)
                outcome = RunOutcome.CANCELLED.value
        if output is not None:
            await self.gateway.finish_run(run_id, outcome, output=output)

    @staticmethod
    def _output(run_id: str, final_output: Any) -> Any:
        """The final output as the run keeps it (JSON; a value JSON cannot hold as its text),
        or ``None`` when it is too long to keep."""
        output = to_jsonable_python(final_output, fallback=str)
        try:
            check_output(output)
        except InputError as refused:
            log.warning("run %s keeps no output: %s", run_id, refused)
            return None
        return output

    async def _tell(self, finished: Finished) -> None:
        """Hand a resumed run's end to the result hook; an error it raises is logged."""
        if self.on_result is None:
            return
        try:
            heard = self.on_result(finished)
            if inspect.isawaitable(heard):
                await heard
        except Exception:
            log.exception("the result hook failed on run %s (its output is kept on the run)", finished.run_id)

    # -- the kept state --------------------------------------------------------------------
    async def _keep(self, run_id: str, kept: Kept | None) -> None:
        if kept is None:
            await self.gateway.forget_agent_state(run_id)
        else:
            await self.gateway.keep_agent_state(run_id, kept.to_text())

    async def _kept(self, run_id: str) -> Kept | None:
        text = await self.gateway.agent_state(run_id)
        return Kept.from_text(text) if text is not None else None

    # -- where the calls go ----------------------------------------------------------------
    def _local(self, what: str) -> Gateway:
        """The gateway on the database, for ``what`` (a call that needs its close signal)."""
        if self._backend.local is None:
            raise InputError(
                f"{what} needs a Gateway on the database (it wakes on the close signal); tool approvals "
                "on a Client run, handle and follow up over HTTP: call follow_up() when the agent starts "
                f"and every so often (docs/adapters/{self.driver.sdk}.md, Over HTTP)"
            )
        return self._backend.local

    def _blocking(self, work: Coroutine[Any, Any, T]) -> T:
        if self._backend.no_sync is not None:
            work.close()
            raise InputError(self._backend.no_sync)
        return asyncio.run(work)


def phase_of(call: ToolCall) -> str:
    """The phase an approval is parked under, its run's answers keyed by it:
    ``<tool>:<call id>``, else the call id, else a digest of it (a phase is an id)."""
    for candidate in (f"{call.tool}:{call.call_id}", call.call_id):
        try:
            return check_id(candidate, "phase")
        except InputError:
            continue
    return "call:" + digest(call.call_id)[:40]
