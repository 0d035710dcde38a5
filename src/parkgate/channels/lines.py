"""The lines a channel shows for a closed ask, written once for every channel: how it
ended ("Answered: Deploy, by @alice", "Dropped by @bob, nothing ran.", "Expired after 6 h,
nothing ran.") and what a press on it answers ("This question is already closed (answered by @alice at
14:02 UTC on 6 Dec 2026).", :mod:`parkgate.core.closed_words`). Each channel names people
its own way: ``mention`` turns a sender id into the platform's name for them; an
operator's cancel is "an operator" everywhere.
"""

from __future__ import annotations

from parkgate.core import phrases as P
from parkgate.core.closed_words import Mention, already_closed, who
from parkgate.core.kinds import AskStatus, RunOutcome
from parkgate.core.model import Ask


def duration(seconds: float) -> str:
    """A TTL as the closed line says it: whole hours, else whole minutes, else seconds."""
    whole = round(seconds)
    if whole >= 3600 and whole % 3600 == 0:
        return P.CHANNEL_HOURS.format(count=whole // 3600)
    if whole >= 60 and whole % 60 == 0:
        return P.CHANNEL_MINUTES.format(count=whole // 60)
    return P.CHANNEL_SECONDS.format(count=whole)


def closed_line(ask: Ask, mention: Mention) -> str:
    """How closed ``ask`` ended, in one line.

    Args:
        ask: The closed ask.
        mention: The channel's name for a sender.

    Returns:
        The answered, dropped, replaced or expired line.
    """
    if ask.status is AskStatus.ANSWERED:
        name = who(ask.answered_by, mention)
        template = P.CHANNEL_ANSWERED if name else P.CHANNEL_ANSWERED_BY_NOBODY
        return template.format(answer=ask.answer or "", who=name)
    if ask.status is AskStatus.EXPIRED:
        idle = duration(ask.ttl_seconds)
        if ask.answer is not None:  # a default stood in
            return P.CHANNEL_EXPIRED_DEFAULT.format(idle=idle, answer=ask.answer)
        return P.CHANNEL_EXPIRED.format(idle=idle)
    if ask.outcome == RunOutcome.REPLACED.value:
        return P.CHANNEL_REPLACED
    name = who(ask.closed_by, mention)
    return P.CHANNEL_DROPPED.format(who=name) if name else P.CHANNEL_DROPPED_BY_NOBODY


def already_closed_line(ask: Ask, mention: Mention) -> str:
    """What a press or reply on closed ``ask`` answers: how and when it closed
    (:func:`parkgate.core.closed_words.already_closed`).

    Args:
        ask: The closed ask.
        mention: The channel's name for a sender.

    Returns:
        "This question is already closed (answered by @alice at 14:02 UTC on 6 Dec 2026)."
        and the like.
    """
    return already_closed(ask, mention)
