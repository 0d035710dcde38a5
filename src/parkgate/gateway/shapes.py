"""The public JSON shape of an ask: what HTTP, callbacks and the CLI's ``--json`` show."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from parkgate.core import expect as expected_form
from parkgate.core.model import Ask, CallbackState


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
        "responders": list(ask.responders),
        "quorum": ask.quorum,
        "votes": [vote.to_dict() for vote in ask.votes],
        "answered_by": ask.answered_by,
        "closed_by": ask.closed_by,
        "remind_after": list(ask.remind_after),
        "escalate_after": ask.escalate_after,
        "escalate_to": list(ask.escalate_to),
        "reminders_sent": ask.reminders_sent,
        "escalated_at": ask.escalated_at.isoformat() if ask.escalated_at else None,
        "next_due_at": _next_due(ask),
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


def _next_due(ask: Ask) -> str | None:
    """When the open ask's next reminder or escalation falls due (ISO 8601), else ``None``."""
    due = ask.next_event_at if ask.is_open else None
    return due.isoformat() if due is not None else None
