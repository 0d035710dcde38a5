"""The lines every channel shows, written once: what a posted ask says under its question
(whom it is for, how many must agree, until when: :func:`about_line`), a quorum ask's
votes with each option's voters named (:func:`votes_line`), how a closed ask ended
("Answered: Deploy, by @alice", "Dropped by @bob, nothing ran.", "Expired after 6 h,
nothing ran.") and what a press on it answers ("This question is already closed (answered
by @alice at 14:02 UTC on 6 Dec 2026).", :mod:`parkgate.core.closed_words`). Each channel
names people its own way: ``mention`` turns a sender id into the platform's name for
them; an operator's cancel is "an operator" everywhere.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from parkgate.core import phrases as P
from parkgate.core.closed_words import Mention, already_closed, who
from parkgate.core.kinds import AskStatus, RunOutcome
from parkgate.core.machine import joined_names
from parkgate.core.model import Ask


def duration(seconds: float) -> str:
    """A TTL as the closed line says it: whole hours, else whole minutes, else seconds."""
    whole = round(seconds)
    if whole >= 3600 and whole % 3600 == 0:
        return P.CHANNEL_HOURS.format(count=whole // 3600)
    if whole >= 60 and whole % 60 == 0:
        return P.CHANNEL_MINUTES.format(count=whole // 60)
    return P.CHANNEL_SECONDS.format(count=whole)


def utc_time(moment: datetime) -> str:
    """A time as a channel line writes it: ``2026-01-05 09:00 UTC``."""
    return moment.strftime(P.CHANNEL_UTC_TIME)


def open_until(ask: Ask) -> str:
    """Until when ``ask`` stays open, where the platform shows no local time: its TTL and
    its due time in UTC ("open for 6 h, until 2026-01-05 15:00 UTC")."""
    return P.CHANNEL_OPEN_FOR_UNTIL.format(idle=duration(ask.ttl_seconds), when=utc_time(ask.due_at))


def about_line(ask: Ask, mention: Mention, until: str | None = None) -> str:
    """What a posted ask says under its question: whom it is for, how many must agree,
    until when it stays open.

    Args:
        ask: The open ask, as posted.
        mention: The channel's name for a sender.
        until: The channel's own "open until" part (Slack's date that each reader sees in
            their own time zone); by default :func:`open_until`.

    Returns:
        "For @alice, @bob or @carol · 2 of 3 must agree · open for 6 h, until 2026-01-05
        15:00 UTC"; "For anyone here · ..." for an ask anyone may answer.
    """
    who = joined_names(ask.responders, mention) if ask.responders else P.CHANNEL_ANYONE
    parts = [P.CHANNEL_FOR.format(who=who)]
    if ask.quorum > 1:
        parts.append(P.CHANNEL_QUORUM.format(quorum=ask.quorum, count=len(ask.responders)))
    parts.append(open_until(ask) if until is None else until)
    return P.CHANNEL_ABOUT_JOIN.join(parts)


def votes_line(ask: Ask, mention: Mention, escape: Callable[[str], str] = str) -> str | None:
    """A quorum ask's votes so far, each option's voters named: "Votes so far (2 needed):
    1. Deploy: @alice; 2. Hold: @bob." (``None`` for an ask that takes no votes).

    Args:
        ask: The ask, with its votes.
        mention: The channel's name for a sender (markup the channel means, unescaped).
        escape: The platform's escaping of the option labels quoted.
    """
    if ask.quorum <= 1:
        return None
    voters: dict[int, list[str]] = {}
    for vote in ask.votes:
        voters.setdefault(vote.option_index, []).append(mention(vote.sender))
    items = [
        P.VOTE_VOTERS_ITEM.format(index=index, answer=escape(ask.options[index - 1]), voters=P.VOTERS_JOIN.join(names))
        for index, names in sorted(voters.items())
        if 0 < index <= len(ask.options)
    ]
    tally = P.VOTE_TALLY_JOIN.join(items) if items else P.VOTES_NONE_YET
    return P.VOTES_SO_FAR.format(quorum=ask.quorum, tally=tally)


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
