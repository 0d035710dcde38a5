"""What every adapter does the same way: park a spec, rebuild a reply, find an option.

Shared by the LangGraph and the MCP adapters so that a question is parked, and a closed
ask read back as a :class:`~parkgate.Reply`, identically whichever framework asked.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from parkgate.adapters.effects import GatewayCall, call
from parkgate.core.kinds import AskKind, AskStatus, ReplyKind
from parkgate.core.machine import cancelled_line, match
from parkgate.core.menu import Verdict, normalise
from parkgate.core.model import Ask, Reply
from parkgate.core.phrases import PHRASES
from parkgate.core.stopping_point import AskSpec


def ask_call(conversation_id: str, spec: AskSpec, **options: Any) -> GatewayCall:
    """The :meth:`Gateway.ask <parkgate.Gateway.ask>` call that parks ``spec``
    (``options``: ``run_id``, ``ttl``, ``default``, ``expect``, ...)."""
    return call("ask", conversation_id, spec.prompt, list(spec.options) or None, kind=spec.kind, **options)


def turn_text(reply: Reply, asked: Reply | None) -> str:
    """Everything one step of an adapter shows the person, in order: its reply, then the
    question it parked next (empty for a plain ``pass``)."""
    parts = [reply.text]
    if asked is not None and asked is not reply:
        parts.append(asked.text)
    return "\n\n".join(part for part in parts if part)


def pass_reply(expired_ask_id: str | None = None, run_id: str | None = None) -> Reply:
    """A ``pass``: nothing parked (or the ask ``expired_ask_id`` expired on this read)."""
    return Reply(ReplyKind.PASS, PHRASES[ReplyKind.PASS], parked=False, expired_ask_id=expired_ask_id, run_id=run_id)


def answer_reply(kind: AskKind, ask_id: str, answer: str, option_index: int | None) -> Reply:
    """The ``selected`` (choice) or ``answered`` (text) reply an answer stands for."""
    reply_kind = ReplyKind.SELECTED if kind is AskKind.CHOICE else ReplyKind.ANSWERED
    return Reply(reply_kind, "", parked=False, ask_id=ask_id, answer=answer, option_index=option_index)


def closed_reply(ask: Ask) -> Reply:
    """The reply a person's side closing ``ask`` without an answer gave: ``pass`` with
    ``expired_ask_id`` for an expiry, else ``cancelled``."""
    if ask.status is AskStatus.EXPIRED:
        return pass_reply(ask.id, ask.run_id)
    return Reply(ReplyKind.CANCELLED, cancelled_line(ask), parked=False, ask_id=ask.id, run_id=ask.run_id)


def option_position(options: Sequence[str], value: str) -> int | None:
    """The 1-based position of the option whose label ``value`` is, by the matcher's rules
    for labels (case, width and spacing folded); never a position typed as a number."""
    if value in options:
        return list(options).index(value) + 1
    if normalise(value).isdigit():
        return None
    found = match(AskKind.CHOICE, tuple(options), value)
    return found.option_index if found.verdict is Verdict.SELECT else None


__all__ = ["answer_reply", "ask_call", "closed_reply", "option_position", "pass_reply"]
