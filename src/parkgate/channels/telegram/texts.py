"""What a posted ask's Telegram message says: the question while open, and how it ended.

The lines are the channels' phrases (:mod:`parkgate.core.phrases`): "Answered: Deploy, by
@alice", "Dropped by @bob, nothing ran.", "Expired after 6 h, nothing ran." A person is
named by ``mention``, the channel's way of turning a Telegram user id into a name. On
Telegram typed slash commands reach the bot, so the question keeps the contract's footer.
"""

from __future__ import annotations

from collections.abc import Callable

from parkgate.core import phrases as P
from parkgate.core.kinds import OPERATOR, AskStatus, RunOutcome
from parkgate.core.machine import render_question
from parkgate.core.model import Ask

Mention = Callable[[str], str]


def open_text(ask: Ask) -> str:
    """The message of an open ask: its prompt, numbered options and exits."""
    return render_question(ask)


def closed_text(ask: Ask, mention: Mention) -> str:
    """The message of a closed ask: its question, then how it ended.

    Args:
        ask: The ask, closed.
        mention: Names a person from their sender id (a Telegram user id).

    Returns:
        The question without its exits, a blank line, and the close line.
    """
    return f"{render_question(ask, footer=False)}\n\n{close_line(ask, mention)}"


def close_line(ask: Ask, mention: Mention) -> str:
    """How ``ask`` ended, in one line (answered, dropped, replaced or expired)."""
    if ask.status is AskStatus.ANSWERED:
        if ask.answered_by is None:
            return P.CHANNEL_ANSWERED_BY_NOBODY.format(answer=ask.answer)
        return P.CHANNEL_ANSWERED.format(answer=ask.answer, who=mention(ask.answered_by))
    if ask.status is AskStatus.EXPIRED:
        idle = duration(ask.ttl_seconds)
        if ask.answer is not None:  # a default stood in
            return P.CHANNEL_EXPIRED_DEFAULT.format(idle=idle, answer=ask.answer)
        return P.CHANNEL_EXPIRED.format(idle=idle)
    if ask.outcome == RunOutcome.REPLACED.value:
        return P.CHANNEL_REPLACED
    if ask.closed_by is None:
        return P.CHANNEL_DROPPED_BY_NOBODY
    return P.CHANNEL_DROPPED.format(who=who_closed(ask.closed_by, mention))


def already_closed(ask: Ask, mention: Mention) -> str:
    """What a press on a closed ask's button answers: "This question is already closed (answered by @alice)."."""
    if ask.status is AskStatus.ANSWERED:
        how = P.CHANNEL_CLOSED_ANSWERED.format(who=mention(ask.answered_by)) if ask.answered_by else ask.status.value
    elif ask.status is AskStatus.EXPIRED:
        how = P.CHANNEL_CLOSED_EXPIRED
    elif ask.closed_by is not None:
        how = P.CHANNEL_CLOSED_DROPPED.format(who=who_closed(ask.closed_by, mention))
    else:
        how = P.CHANNEL_CLOSED_DROPPED_BY_NOBODY
    return P.CHANNEL_ALREADY_CLOSED.format(how=how)


def who_closed(sender: str, mention: Mention) -> str:
    """A closing sender's name: "an operator" for an operator's cancel, else the mention."""
    return P.CHANNEL_OPERATOR if sender == OPERATOR else mention(sender)


def duration(seconds: float) -> str:
    """``21600`` -> ``"6 h"``, ``5400`` -> ``"90 min"``, ``45`` -> ``"45 s"`` (whole units, rounded)."""
    if seconds >= 3600 and seconds % 3600 == 0:
        return P.CHANNEL_HOURS.format(count=int(seconds // 3600))
    if seconds >= 60:
        return P.CHANNEL_MINUTES.format(count=round(seconds / 60))
    return P.CHANNEL_SECONDS.format(count=round(seconds))
