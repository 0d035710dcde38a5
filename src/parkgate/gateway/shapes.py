"""The public JSON shape of an ask: what HTTP, callbacks and the CLI's ``--json`` show.

Its fields are the ask's declared public fields (:class:`~parkgate.core.model.AskShape`,
written by :func:`parkgate.core.shape.to_json`) and what is worked out when it is shown:
:data:`SHOWN`.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from parkgate.core.model import Ask, CallbackState
from parkgate.core.shape import to_json

#: The keys an ask's JSON adds to its declared fields, each with what it holds: worked out
#: when the ask is shown, not stored (the API's schema and the client's view take them from here).
SHOWN: dict[str, str] = {
    "next_due_at": "When its next reminder or escalation falls due (null: none remains, or it is closed).",
    "hours_open": "How long it has been open, in hours (in a listing of open asks).",
    "callback": "Where its callback stands (an ask parked with a callback URL).",
}


def ask_to_dict(ask: Ask, now: datetime | None = None, callback: CallbackState | None = None) -> dict[str, Any]:
    """The public JSON shape of an ask (HTTP, callbacks, the CLI's ``--json``).

    Args:
        ask: The ask to show.
        now: Adds how long the ask has been open (``hours_open``).
        callback: Adds where its callback stands (an ask with a callback URL; the HTTP
            service's reads add it).

    Returns:
        JSON-ready values: one key a public field, then ``next_due_at`` and those added.
    """
    data = to_json(ask)
    due = ask.next_event_at if ask.is_open else None
    data["next_due_at"] = due.isoformat() if due is not None else None
    if now is not None:
        data["hours_open"] = round((now - ask.asked_at).total_seconds() / 3600, 3)
    if callback is not None:
        data["callback"] = to_json(callback)
    return data
