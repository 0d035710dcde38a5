"""The ask event point: every event of an ask (parked, reminded, escalated, closed) becomes
the callbacks it sends, here and nowhere else.

Each event is one JSON body in Standard Webhooks' recommended shape,
``{"type": "ask.closed", "timestamp": ..., "data": <the ask's JSON and "seq">}``, with an id of its
own (its ``webhook-id``, the same on every attempt and for every receiver). It goes to the
ask's ``callback_url`` (its reminders, escalation and close) and to the server-wide
subscriber ``PARKGATE_EVENTS_URL`` (every ask's events, ``ask.opened`` included), queued
in the outbox in the transaction that decided it, so it is sent at least once.

Delivery is at least once and retried, so events may arrive out of order (a retried
``ask.opened`` after the ``ask.closed`` that followed it). ``data.seq`` orders one ask's
events: it counts the events the ask has had, this one included (1 for ``ask.opened``,
one more for each reminder, the escalation and the close), so a receiver keeps the event
with the highest ``seq`` per ask id and drops any older one that arrives after it.
"""

from __future__ import annotations

import json
import os
from datetime import datetime

from parkgate.core.fence import ENV_CALLBACK_ALLOW, check_callback_url, parse_allow_list, receiver_host
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


def event_seq(ask: Ask) -> int:
    """The event's place among its ask's events: the events the ask has had, counting the
    one ``ask`` stands after (opened, each reminder, the escalation, the close).

    Each event moves exactly one of these counts by one, so the number grows by one per
    event of the ask whichever order reminders and the escalation came in.
    """
    return 1 + ask.reminders_sent + (ask.escalated_at is not None) + (not ask.is_open)


def event_body(event: EventType, ask: Ask, now: datetime) -> str:
    """The event's JSON body: ``{"type", "timestamp", "data"}``, ``data`` the ask's JSON
    and its event's ``seq`` (:func:`event_seq`)."""
    data = {**ask_to_dict(ask), "seq": event_seq(ask)}
    return json.dumps({"type": event.value, "timestamp": now.isoformat(), "data": data}, ensure_ascii=False)


def events_url_from_env() -> str | None:
    """``PARKGATE_EVENTS_URL``, checked as the fence checks an ask's ``callback_url``, or
    ``None`` when unset.

    An internal receiver (loopback, a private address, ``localhost``) is refused unless
    ``PARKGATE_CALLBACK_ALLOW`` lets it in: the deliverer would refuse every event sent
    there, so the server refuses to start instead.

    Raises:
        CallbackRefused: The URL does not parse, is not http(s), or points at an internal
            receiver the allow-list does not name; the message names the variable.
    """
    url = os.environ.get(ENV_EVENTS_URL, "").strip()
    if not url:
        return None
    check_callback_url(url, parse_allow_list(os.environ.get(ENV_CALLBACK_ALLOW)), name=ENV_EVENTS_URL)
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
