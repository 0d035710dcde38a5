"""How and when a closed ask closed, in the words every surface tells an answer that came
too late: a press on an old post's button, a reply in a closed ask's thread, an HTTP
answer naming a closed ask ("This question is already closed (answered by @alice at 14:02
UTC on 6 Dec 2026).").

Written once for every surface: a channel names people its own way (``mention`` turns a
sender id into the platform's name for them), the HTTP service by their plain ids; an
operator's cancel is "an operator" everywhere. The time is the ask's close
(:func:`parkgate.core.events.closed_moment`), in UTC.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

from parkgate.core import phrases as P
from parkgate.core.events import closed_moment
from parkgate.core.kinds import OPERATOR, AskStatus, ReplyKind, RunOutcome
from parkgate.core.model import Ask

#: A surface's name for a sender (a platform user id; ``str`` for the plain id).
Mention = Callable[[str], str]


def who(sender: str | None, mention: Mention) -> str | None:
    """A closing sender's name: "an operator" for an operator's cancel, ``None`` for nobody."""
    if sender is None:
        return None
    return P.CHANNEL_OPERATOR if sender == OPERATOR else mention(sender)


def moment_words(moment: datetime) -> str:
    """A moment as the closed words say it: "14:02 UTC on 6 Dec 2026"."""
    at = moment.astimezone(UTC)
    return P.CLOSED_MOMENT.format(time=f"{at:%H:%M}", day=at.day, month=P.MONTHS[at.month - 1], year=at.year)


def how_it_closed(ask: Ask, mention: Mention) -> str:
    """How and when closed ``ask`` closed: "answered by @alice at 14:02 UTC on 6 Dec 2026",
    "it expired at ...", "dropped by an operator at ...", "replaced by a newer question at ..."
    (without the time for an ask whose close time is not recorded)."""
    if ask.status is AskStatus.ANSWERED:
        name = who(ask.answered_by, mention)
        how = P.CHANNEL_CLOSED_ANSWERED.format(who=name) if name else P.CHANNEL_CLOSED_ANSWERED_BY_NOBODY
    elif ask.status is AskStatus.EXPIRED:
        how = P.CHANNEL_CLOSED_EXPIRED
    elif ask.outcome == RunOutcome.REPLACED.value:
        how = P.CHANNEL_CLOSED_REPLACED
    else:
        name = who(ask.closed_by, mention)
        how = P.CHANNEL_CLOSED_DROPPED.format(who=name) if name else P.CHANNEL_CLOSED_DROPPED_BY_NOBODY
    moment = closed_moment(ask)
    return how if moment is None else P.CHANNEL_CLOSED_AT.format(how=how, when=moment_words(moment))


def already_closed(ask: Ask, mention: Mention = str) -> str:
    """What an answer that reached closed ``ask`` is told (the ``late`` reply's text).

    Args:
        ask: The closed ask.
        mention: The surface's name for a sender (default: the plain id).

    Returns:
        "This question is already closed (answered by @alice at 14:02 UTC on 6 Dec 2026)."
        and the like.
    """
    return P.PHRASES[ReplyKind.LATE].format(how=how_it_closed(ask, mention))


def late_answer(ask: Ask, text: str) -> str | None:
    """What a late message would have answered, as its ``late`` event keeps it: an
    option's label for its number on a choice ask, the text itself otherwise, ``None``
    for a control word (``/menu``, ``/cancel``: no answer)."""
    word = text.strip().removeprefix("/").casefold()
    if word in P.CONTROL_WORDS:
        return None
    if ask.options and word.isascii() and word.isdigit() and 1 <= int(word) <= len(ask.options):
        return ask.options[int(word) - 1]
    return text
