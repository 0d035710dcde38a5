"""A held call: parked as an ask bound to the hash of its server, tool and arguments, held
open with progress up to its hold bound, and forwarded once, with exactly the approved
arguments, when the ask closes approved.

The ask is parked in the conversation named by the call's hash
(:func:`~parkgate.mcp_gateway.render.conversation_of`), with a follow-up named the same
way, so that:

- an identical call while the ask is open attaches to it (the park finds it open: no
  second ask, no second post);
- an identical call after the ask closed with nobody holding the call takes its decision
  (the closed follow-up is still pending): approved, it is forwarded; else it gets why not;
- each approval forwards one call: the call that claims the follow-up
  (:meth:`Gateway.claim_follow_up <parkgate.Gateway.claim_follow_up>`, one caller in any
  process) marks it done, then forwards; an identical call that loses the claim asks again;
- unless the rule's ``valid_for`` keeps it: then the follow-up stays pending, and every
  identical call until ``valid_for`` after the approval (on the gateway's clock) is
  forwarded on it; the first one after that marks it done and asks again;
- a call with any other argument has another hash, so another ask.

Where the rule lets the client's own user answer and the client can show a form, the ask
is also put to them (:mod:`~parkgate.mcp_gateway.elicitation`); their answer is a message
through the door like anyone's.

Waiting is the gateway's own wait (:meth:`AsyncGateway.wait`): it wakes on the close signal,
here or in another process, and reads the ask at its due time, which closes it as
``expired`` with nobody else reading.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from datetime import timedelta
from typing import Any

import anyio
from mcp_types import CallToolResult, InputRequiredResult, TextContent

from parkgate.core.model import Ask
from parkgate.errors import AskAlreadyOpen
from parkgate.gateway.async_gateway import AsyncGateway
from parkgate.mcp_gateway import render
from parkgate.mcp_gateway.downstream import Route
from parkgate.mcp_gateway.elicitation import Answer, ClientApprover
from parkgate.mcp_gateway.policy import Policy, Rule

log = logging.getLogger("parkgate.mcp_gateway")

#: How often a held call reports progress to its client (which keeps its timeout from
#: running out where the client resets it on progress).
PROGRESS_SECONDS = 5.0
#: How long a claim on an approval holds before another identical call may take it over
#: (its holder died between the claim and marking it done).
CLAIM_LEASE = timedelta(minutes=5)
#: How many closed follow-ups of one call's conversation are read at a time.
CLOSED_PAGE = 10
#: The key of the gateway's own record in a result's ``_meta``: the ask and what became of it.
META_KEY = "parkgate/approval"

Progress = Callable[[float, float | None, str | None], Awaitable[None]]
Forward = Callable[[], Awaitable[CallToolResult]]


class Holds:
    """Holds the calls a policy names until a person decides.

    Args:
        gateway: Where the asks are parked (the store ``parkgate serve`` answers them on).
        policy: How arguments are shown (redaction, cuts).
    """

    def __init__(self, gateway: AsyncGateway, policy: Policy) -> None:
        self.gateway = gateway
        self.policy = policy

    async def call(
        self,
        route: Route,
        arguments: Mapping[str, Any],
        rule: Rule,
        forward: Forward,
        progress: Progress,
        client: ClientApprover | None = None,
    ) -> CallToolResult | InputRequiredResult:
        """The result of a call ``rule`` holds: the downstream result once approved, an
        error saying why it did not run, or "pending" once the rule's hold bound passes;
        or, on a 2026-07-28 connection whose client's user may answer, the round that puts
        the ask to them (the client calls again with their answer).

        Args:
            route: The tool called.
            arguments: Its arguments, exactly as the client sent them.
            rule: The approval rule that applies.
            forward: Calls the downstream tool with exactly ``arguments``.
            progress: Reports progress to the client (``progress, total, message``).
            client: The client's own user as an approver, where the rule and the client allow it.
        """
        digest = render.call_hash(route.server, route.tool, arguments)
        while True:
            ask = await self._attach(digest, route, arguments, rule)
            decided = await self._decide(ask, rule.hold, progress, client)
            if isinstance(decided, InputRequiredResult):
                return decided
            ask, reasons = decided
            if ask.is_open:
                return _result(render.pending(ask, route.tool, self.gateway.sync.clock.now()), ask, "pending")
            if not render.approved(ask):
                await self.gateway.follow_up_done(ask.id)
                return _result(render.not_run(ask, route.tool, reasons), ask, ask.status.value)
            if rule.valid_for is not None:
                if self._still_valid(ask, rule.valid_for):
                    return await forward()
                await self.gateway.follow_up_done(ask.id)  # lapsed: this call asks again
                continue
            if await self.gateway.claim_follow_up(ask.id, CLAIM_LEASE):
                await self.gateway.follow_up_done(ask.id)  # before forwarding: never twice
                return await forward()
            # Another identical call took this approval: this one asks again.

    def _still_valid(self, ask: Ask, valid_for: timedelta) -> bool:
        """Whether the approval ``ask`` holds still forwards identical calls: less than
        ``valid_for`` has passed since it was given."""
        return ask.closed_at is not None and self.gateway.sync.clock.now() < ask.closed_at + valid_for

    async def _attach(self, digest: str, route: Route, arguments: Mapping[str, Any], rule: Rule) -> Ask:
        """The ask this call waits on: a closed one nobody has acted on, the open one, or a new one."""
        conversation = render.conversation_of(digest)
        closed = await self.gateway.closed_follow_ups(CLOSED_PAGE, watcher=conversation)
        for ask in closed:
            if ask.conversation_id == conversation:
                return ask
        shown = render.shown_arguments(arguments, rule.redact, self.policy.max_value_chars)
        fields = {
            **rule.ask_fields,
            "follow_up": conversation,
            "context": render.context(route.server, route.tool, shown, digest),
        }
        try:
            reply = await self.gateway.ask(
                conversation, render.prompt(route.server, route.tool, shown), list(rule.options), **fields
            )
        except AskAlreadyOpen as already:
            return await self.gateway.get(already.ask_id)
        return await self.gateway.get(reply.ask_id or "")

    async def _decide(
        self, ask: Ask, hold: timedelta, progress: Progress, client: ClientApprover | None
    ) -> tuple[Ask, dict[str, str]] | InputRequiredResult:
        """``ask`` once closed or held for ``hold``, with the reason the client's user gave
        (by sender); while it is open, also put to the client's user where ``client`` is
        given: now, on a form withdrawn when the hold ends, or as the round to return."""
        reasons: dict[str, str] = {}
        if client is None or not ask.is_open:
            return await self._hold(ask, hold, progress), reasons

        async def answer(given: Answer | None) -> None:
            if given is not None:
                option, reason = given
                if reason is not None:
                    reasons[client.sender] = reason
                reply = await self.gateway.handle(ask.conversation_id, option, sender=client.sender)
                log.info("ask %s: the client's user %s answered %s (%s)", ask.id, client.sender, option, reply.kind)

        if client.inline:

            async def elicit() -> None:
                await answer(await client.elicit(ask))

            async with anyio.create_task_group() as group:
                group.start_soon(elicit)
                held = await self._hold(ask, hold, progress)
                group.cancel_scope.cancel()  # closed, or held long enough: the form is withdrawn
            return held, reasons
        if not client.carries_answer(ask):
            return client.form(ask)
        await answer(client.answer(ask))
        return await self._hold(await self.gateway.get(ask.id), hold, progress), reasons

    async def _hold(self, ask: Ask, hold: timedelta, progress: Progress) -> Ask:
        """``ask`` once closed, or as it is when ``hold`` has passed; progress meanwhile."""
        total = hold.total_seconds()
        start = time.monotonic()
        message = render.waiting(ask.id)
        while ask.is_open:
            held = time.monotonic() - start
            if held >= total:
                break
            await progress(held, total, message)
            ask = await self.gateway.wait(ask.id, min(total - held, PROGRESS_SECONDS))
        return ask


def _result(text: str, ask: Ask, status: str) -> CallToolResult:
    """A tool error whose text the agent reads, with the ask's id and status in ``_meta``."""
    meta = {META_KEY: {"ask_id": ask.id, "status": status}}
    return CallToolResult(content=[TextContent(type="text", text=text)], is_error=True, _meta=meta)
