"""What a channel posts in an ask's thread when the ask's reminder or escalation fires:
one line naming whom it waits on (each channel names people its own way: a mention on
Slack), how long it has waited and when it expires, queued as
the ask's ``reply`` job in the same transaction as the event (so a reminder fired by the
due read at 03:00 reaches the thread like a callback reaches its receiver)."""

from __future__ import annotations

from datetime import datetime, timedelta

from parkgate.channels.base import NAMES_SLOT, ChannelReply
from parkgate.core import phrases as P
from parkgate.core.kinds import EventType
from parkgate.core.model import Ask
from parkgate.core.schedule import Fired, escalated_to


def about(seconds: float) -> str:
    """A span as a thread line says it, rounded: seconds under 90 s, minutes under 90 min, else hours."""
    whole = max(0, round(seconds))
    if whole < 90:
        return P.CHANNEL_SECONDS.format(count=whole)
    if whole < 90 * 60:
        return P.CHANNEL_MINUTES.format(count=round(whole / 60))
    return P.CHANNEL_HOURS.format(count=round(whole / 3600))


def fired_replies(fired: Fired, now: datetime) -> list[ChannelReply]:
    """The thread lines of what fired for one ask: a reminder naming its responders, and an
    escalation naming the responders it added (both when both fired at once).

    Args:
        fired: The ask after the event, and which events fired.
        now: When they fired.

    Returns:
        One reply per event, in the order they fired.
    """
    ask = fired.ask
    replies: list[ChannelReply] = []
    if fired.reminded:
        replies.append(_line(P.CHANNEL_REMINDER, EventType.REMINDER, ask, ask.responders, now))
    if fired.escalated:
        replies.append(_line(P.CHANNEL_ESCALATION, EventType.ESCALATED, ask, escalated_to(ask), now))
    return replies


def _line(template: str, event: EventType, ask: Ask, names: tuple[str, ...], now: datetime) -> ChannelReply:
    expires = ask.last_touched + timedelta(seconds=ask.ttl_seconds)
    text = template.format(
        who=NAMES_SLOT if names else P.CHANNEL_ANYONE,
        prompt=ask.prompt,
        waited=about((now - ask.asked_at).total_seconds()),
        left=about((expires - now).total_seconds()),
    )
    return ChannelReply(event, text, names=names)
