"""The lines a channel shows for a closed ask, written once for every channel: how it
ended ("Answered: Deploy, by @alice", "Dropped by @bob, nothing ran.", "Expired after 6 h,
nothing ran.") and what a click on it answers ("This question is already closed (answered
by @alice)."). Each channel names people its own way: ``mention`` turns a sender id into
the platform's name for them; an operator's cancel is "an operator" everywhere.
"""

from __future__ import annotations

from collections.abc import Callable

from parkgate.core import phrases as P
from parkgate.core.kinds import OPERATOR, AskStatus, RunOutcome
from parkgate.core.model import Ask

#: A channel's name for a sender (a platform user id).
Mention = Callable[[str], str]


def duration(seconds: float) -> str:
    """A TTL as the closed line says it: whole hours, else whole minutes, else seconds."""
    whole = round(seconds)
    if whole >= 3600 and whole % 3600 == 0:
        return P.CHANNEL_HOURS.format(count=whole // 3600)
    if whole >= 60 and whole % 60 == 0:
        return P.CHANNEL_MINUTES.format(count=whole // 60)
    return P.CHANNEL_SECONDS.format(count=whole)


def who(sender: str | None, mention: Mention) -> str | None:
    """A closing sender's name: "an operator" for an operator's cancel, ``None`` for nobody."""
    if sender is None:
        return None
    return P.CHANNEL_OPERATOR if sender == OPERATOR else mention(sender)


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
    """What a click on closed ``ask`` answers.

    Args:
        ask: The closed ask.
        mention: The channel's name for a sender.

    Returns:
        "This question is already closed (answered by @alice)." and the like.
    """
    answered_by = who(ask.answered_by, mention)
    closed_by = who(ask.closed_by, mention)
    if ask.status is AskStatus.ANSWERED and answered_by:
        how = P.CHANNEL_CLOSED_ANSWERED.format(who=answered_by)
    elif ask.status is AskStatus.EXPIRED:
        how = P.CHANNEL_CLOSED_EXPIRED
    elif ask.status is AskStatus.CANCELLED and closed_by:
        how = P.CHANNEL_CLOSED_DROPPED.format(who=closed_by)
    elif ask.status is AskStatus.CANCELLED:
        how = P.CHANNEL_CLOSED_DROPPED_BY_NOBODY
    else:
        how = closed_line(ask, mention)
    return P.CHANNEL_ALREADY_CLOSED.format(how=how)
