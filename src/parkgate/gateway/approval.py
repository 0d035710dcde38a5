"""``@gateway.requires_approval(...)``: a plain function that runs only once a person approves.

For code outside any agent framework: the decorated function, sync or ``async``, parks an
Approve/Reject ask before each call and waits for it to close. Approved, the function
runs; any other close raises :class:`~parkgate.errors.Rejected` with the outcome
(``rejected``, ``cancelled``, ``expired``, or a cancel's own), and the function does not run.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
from collections.abc import Callable, Sequence
from datetime import timedelta
from typing import Any, ParamSpec, TypeVar, cast

from parkgate.core.kinds import AskStatus
from parkgate.core.model import Ask, Reply
from parkgate.core.phrases import HITL_APPROVE, HITL_REJECT
from parkgate.errors import InputError, Rejected
from parkgate.gateway.checks import check_duration
from parkgate.store.signal import FALLBACK_READ_SECONDS

P = ParamSpec("P")
R = TypeVar("R")

#: The approval ask's options, in this order: the first approves.
APPROVAL_OPTIONS = (HITL_APPROVE, HITL_REJECT)
#: The outcome :class:`Rejected` carries when the person picked Reject.
REJECTED = "rejected"

#: A conversation or a prompt: text, or a function of the gated call's arguments that gives it.
FromCall = str | Callable[..., str]


def outcome_of(ask: Ask) -> str | None:
    """``None`` when ``ask`` closed approved, else why not (``rejected``, or its outcome)."""
    if ask.status is AskStatus.ANSWERED:
        return None if ask.option_index == 1 else REJECTED
    return ask.outcome or ask.status.value


def approval_gate(
    park: Callable[..., Reply],
    wait: Callable[[str, float | timedelta], Ask],
    *,
    conversation: FromCall,
    prompt: FromCall,
    ttl: timedelta | float | None = None,
    responders: Sequence[str] | None = None,
) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """:meth:`Gateway.requires_approval <parkgate.Gateway.requires_approval>`'s decorator:
    ``park`` parks each call's approval and ``wait`` waits on it (the gateway's own calls)."""
    for value, what in ((conversation, "conversation"), (prompt, "prompt")):
        if not (isinstance(value, str) or callable(value)):
            raise InputError(f"{what} must be text or a function of the call's arguments")
    fields: dict[str, Any] = {"watched": True}
    if ttl is not None:
        fields["ttl"] = check_duration(ttl, "ttl")
    if responders is not None:
        fields["responders"] = list(responders)

    def approve(name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        where = conversation(*args, **kwargs) if callable(conversation) else conversation
        text = prompt(*args, **kwargs) if callable(prompt) else prompt
        reply = park(where, text, list(APPROVAL_OPTIONS), **fields)
        ask = wait(reply.ask_id or "", 0)
        while ask.is_open:  # each wait reads the ask at its due time, which closes it then
            ask = wait(ask.id, FALLBACK_READ_SECONDS)
        refused = outcome_of(ask)
        if refused is not None:
            raise Rejected(name, ask.id, refused)

    def decorate(function: Callable[P, R]) -> Callable[P, R]:
        name = getattr(function, "__qualname__", repr(function))
        if inspect.iscoroutinefunction(function):

            @functools.wraps(function)
            async def gated_async(*args: P.args, **kwargs: P.kwargs) -> Any:
                await asyncio.to_thread(approve, name, args, kwargs)
                return await function(*args, **kwargs)

            return cast(Callable[P, R], gated_async)

        @functools.wraps(function)
        def gated(*args: P.args, **kwargs: P.kwargs) -> R:
            approve(name, args, kwargs)
            return function(*args, **kwargs)

        return gated

    return decorate
