"""The ask event point: every event of an ask (parked, reminded, escalated, closed) becomes
the callbacks it sends, here and nowhere else.

Each event is one JSON body in Standard Webhooks' recommended shape,
``{"type": "ask.closed", "timestamp": ..., "data": <the ask's JSON>}``, with an id of its
own (its ``webhook-id``, the same on every attempt and for every receiver). It goes to the
ask's ``callback_url`` (its reminders, escalation and close) and to the server-wide
subscriber ``PARKGATE_EVENTS_URL`` (every ask's events, ``ask.opened`` included), queued
in the outbox in the transaction that decided it, so it is sent at least once.
"""

from __future__ import annotations

import json
import os
from datetime import datetime

from parkgate.core.fence import parse_callback_url, receiver_host
from parkgate.core.kinds import EventType
from parkgate.core.model import Ask
from parkgate.gateway.shapes import ask_to_dict
from parkgate.store.writes import QueuedCallback

#: The environment variable naming the server-wide events subscriber.
ENV_EVENTS_URL = "PARKGATE_EVENTS_URL"


def event_id(event: EventType, ask: Ask) -> str:
    """The event's id: the ask's id and the event (a reminder's with its number)."""
    name = event.value.removeprefix("ask.")
    if event is EventType.REMINDER:
        return f"{ask.id}.{name}.{ask.reminders_sent}"
    return f"{ask.id}.{name}"


def event_body(event: EventType, ask: Ask, now: datetime) -> str:
    """The event's JSON body: ``{"type", "timestamp", "data": <the ask's JSON>}``."""
    return json.dumps({"type": event.value, "timestamp": now.isoformat(), "data": ask_to_dict(ask)}, ensure_ascii=False)


def events_url_from_env() -> str | None:
    """``PARKGATE_EVENTS_URL`` (checked to parse as a callback URL), or ``None`` when unset.

    Raises:
        CallbackRefused: The URL does not parse, or is not http(s).
    """
    url = os.environ.get(ENV_EVENTS_URL, "").strip()
    if not url:
        return None
    parse_callback_url(url)
    return url


class AskEvents:
    """Turns an ask's events into the callbacks they queue.

    The one place an event leaves the gateway: whatever else an event should do (a
    channel's message in the ask's thread) is added in :meth:`queued`.

    Args:
        events_url: The server-wide subscriber (default: ``PARKGATE_EVENTS_URL``).
    """

    def __init__(self, events_url: str | bool | None = True) -> None:
        self.events_url = events_url_from_env() if events_url is True else (events_url or None)

    def queued(self, event: EventType, ask: Ask, now: datetime) -> tuple[QueuedCallback, ...]:
        """The callbacks ``event`` of ``ask`` sends: to its ``callback_url`` (all but
        ``ask.opened``) and to the events subscriber.

        Args:
            event: What happened.
            ask: The ask as it stands after it.
            now: When it happened (the body's ``timestamp``).

        Returns:
            One queued callback per receiver (none when it has none).
        """
        urls: list[tuple[str, str | None]] = []
        if ask.callback_url and event is not EventType.OPENED:
            urls.append((ask.callback_url, ask.owner))  # the owner's callbacks count against its cap
        if self.events_url:
            urls.append((self.events_url, None))
        if not urls:
            return ()
        body, ident = event_body(event, ask, now), event_id(event, ask)
        return tuple(
            QueuedCallback(ask.id, url, body, now, host=receiver_host(url), owner=owner, event_id=ident)
            for url, owner in urls
        )


#: No events subscriber: only the asks' own callbacks (a gateway made without the environment).
NO_SUBSCRIBER = AskEvents(None)
