"""The public shapes of the gateway's results: an ask as JSON, and the replies it builds."""

from __future__ import annotations

import dataclasses
import uuid
from datetime import datetime
from typing import Any

from parkgate.core import expect as expected_form
from parkgate.core import machine
from parkgate.core.kinds import ReplyKind
from parkgate.core.model import Ask, CallbackState, Reply, Step
from parkgate.core.phrases import PHRASES


def ask_to_dict(ask: Ask, now: datetime | None = None, callback: CallbackState | None = None) -> dict[str, Any]:
    """The public JSON shape of an ask (HTTP, callbacks, the CLI's ``--json``).

    Args:
        ask: The ask to show.
        now: Adds how long the ask has been open (``hours_open``).
        callback: Adds where its callback stands (an ask with a ``callback_url``; the
            HTTP service's reads add it).

    Returns:
        JSON-ready values, one key a field.
    """
    data: dict[str, Any] = {
        "ask_id": ask.id,
        "conversation_id": ask.conversation_id,
        "run_id": ask.run_id,
        "kind": ask.kind.value,
        "prompt": ask.prompt,
        "options": list(ask.options),
        "status": ask.status.value,
        "outcome": ask.outcome,
        "answer": ask.answer,
        "option_index": ask.option_index,
        "mismatches": ask.mismatches,
        "phase": ask.phase,
        "ttl_seconds": ask.ttl_seconds,
        "expect": expected_form.to_dict(ask.expect) if ask.expect is not None else None,
        "asked_at": ask.asked_at.isoformat(),
        "last_touched": ask.last_touched.isoformat(),
        "answered_at": ask.answered_at.isoformat() if ask.answered_at else None,
        "context": dict(ask.context) if ask.context is not None else None,
        "owner": ask.owner,
    }
    if now is not None:
        data["hours_open"] = round((now - ask.asked_at).total_seconds() / 3600, 3)
    if callback is not None:
        data["callback"] = {
            "status": callback.status.value,
            "attempts": callback.attempts,
            "last_error": callback.last_error,
            "next_attempt_at": callback.next_attempt_at.isoformat() if callback.next_attempt_at else None,
        }
    return data


def asked_reply(ask: Ask) -> Reply:
    """The ``asked`` reply for an open ask: its rendered question (what parking it returns)."""
    text = PHRASES[ReplyKind.ASKED].format(menu=machine.render_question(ask))
    return Reply(ReplyKind.ASKED, text, parked=True, ask_id=ask.id, run_id=ask.run_id)


def pass_reply() -> Reply:
    """The reply to a message with nothing parked: route it onward as usual."""
    return Reply(ReplyKind.PASS, PHRASES[ReplyKind.PASS], parked=False)


def expired_pass_reply(ask: Ask) -> Reply:
    """The ``pass`` reply to a message that found its conversation's ask past its TTL."""
    return Reply(ReplyKind.PASS, PHRASES[ReplyKind.PASS], parked=False, expired_ask_id=ask.id, run_id=ask.run_id)


def step_reply(result: Step) -> Reply:
    """The reply to a message the state machine decided."""
    return Reply(
        kind=result.kind,
        text=result.text,
        parked=result.parked,
        ask_id=result.ask.id,
        answer=result.answer,
        option_index=result.option_index,
        run_id=result.ask.run_id,
    )


def with_more_text(reply: Reply, text: str, *, parked: bool, next_ask: Reply | None = None) -> Reply:
    """``reply`` with ``text`` in place of its own (a workflow's next phase or closing words)."""
    return dataclasses.replace(reply, text=text, parked=parked, next_ask=next_ask)


def new_id() -> str:
    """A new ask or run id."""
    return uuid.uuid4().hex
