"""The matcher's rules written out as an oracle, apart from :func:`parkgate.core.machine.match`.

docs/contract.md ("Matching rules") and docs/matching.md's decisions, as plain code
that shares nothing with the matcher but the vocabulary (the control words and the
enums of :mod:`parkgate.core.phrases`). The exhaustive check (:mod:`parkgate.prove`),
the hostile-input suite and the stateful gateway tests compare the real code with it,
so a rule the matcher gets wrong shows up as a disagreement, not as a shared mistake.

The rules, in the order they apply to one message sent to an open ask:

1. Input that is not text (bytes that are not UTF-8, a NUL, a lone surrogate, more
   characters than the limit) is refused before the ask is read: it stays as it was.
2. An ask past its TTL answers ``pass`` and closes as expired, whoever sent the
   message; it never selects, and keeps its votes.
2a. On an ask that names responders, a message from anyone else, or with no sender, is
   ``not_yours`` whatever it says, and the ask stays exactly as it was.
3. The text is normalised: Unicode NFKC, trimmed, inner whitespace folded, case folded.
4. A control word with exactly one leading ``/`` re-shows (``/menu``, ``/options``) or
   cancels (``/cancel``, ``/exit``, ...) in every ask, before anything else.
5. A text ask takes any other non-blank input, as typed, as its answer.
6. A choice ask is selected by a canonical ASCII number ``1..n`` (no sign, point,
   exponent or leading zero; NFKC may make a digit ASCII), then by an option's label
   normalised alike: an option wins over a bare control word.
7. In a choice ask the bare control words then re-show or cancel.
8. Anything else is a miss: ``retry`` for misses 1 to N-1, ``escalated`` from miss N on.

After the step a selection or an answer closes the ask as answered and resets the miss
count; a cancel closes it as cancelled and a re-show leaves it open, both keeping the
count; a miss leaves it open with the count one higher. Text asks are taken as plain
text asks (no expected answer form).

Who did it is kept: on an ask with responders a selection is the sender's vote, which
replaces their earlier one; it closes the ask (``selected``) only when ``quorum`` votes
agree on the option, and is ``voted`` before that, leaving the ask open with the miss
count reset. The sender of a selection or answer that closes the ask is its
``answered_by``; the sender of a cancel word its ``closed_by``.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from parkgate.core.kinds import AskStatus, ReplyKind
from parkgate.core.machine import DEFAULT_ESCALATE_AFTER
from parkgate.core.phrases import CANCEL_WORDS, RESHOW_WORDS
from parkgate.gateway.checks import MAX_MESSAGE_CHARS

#: A canonical number: ASCII digits, no leading zero.
CANONICAL_NUMBER = re.compile(r"[1-9][0-9]*")
#: The reply kinds that close an ask, with the status each closes it as.
CLOSING_STATUS: dict[ReplyKind, AskStatus] = {
    ReplyKind.SELECTED: AskStatus.ANSWERED,
    ReplyKind.ANSWERED: AskStatus.ANSWERED,
    ReplyKind.CANCELLED: AskStatus.CANCELLED,
    ReplyKind.PASS: AskStatus.EXPIRED,
}


@dataclass(frozen=True, slots=True)
class Expected:
    """What one message must do to an open ask, and the ask's state after it."""

    kind: ReplyKind | None  # None: refused before the ask is read
    status: AskStatus
    mismatches: int
    answer: str | None = None
    option_index: int | None = None
    #: Each responder's current vote after the message: (sender, option index), in the order cast.
    votes: tuple[tuple[str, int], ...] = ()
    answered_by: str | None = None
    closed_by: str | None = None
    #: The ask after the message is exactly the ask before it (refused, or ``not_yours``).
    unchanged: bool = False

    @property
    def refused(self) -> bool:
        """The message is not text: it is refused and the ask is left as it was."""
        return self.kind is None

    @property
    def is_miss(self) -> bool:
        """The message is a miss (``retry`` or ``escalated``)."""
        return self.kind in (ReplyKind.RETRY, ReplyKind.ESCALATED)


def normalise(text: str) -> str:
    """Unicode NFKC, trimmed, inner whitespace folded to one space, case folded."""
    return " ".join(unicodedata.normalize("NFKC", text).split()).casefold()


def is_expired(last_touched: datetime, ttl: timedelta, now: datetime) -> bool:
    """An ask is alive through exactly its TTL after it was last touched, expired after."""
    return now - last_touched > ttl


def as_text(message: str | bytes, limit: int = MAX_MESSAGE_CHARS) -> str | None:
    """The message as text, or ``None`` when it must be refused."""
    if isinstance(message, bytes):
        try:
            message = message.decode("utf-8")
        except UnicodeDecodeError:
            return None
    if "\x00" in message or len(message) > limit:
        return None
    try:
        message.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate
        return None
    return message


def expected(
    options: Sequence[str],
    message: str | bytes,
    *,
    mismatches: int = 0,
    escalate_after: int = DEFAULT_ESCALATE_AFTER,
    expired: bool = False,
    limit: int = MAX_MESSAGE_CHARS,
    responders: Sequence[str] = (),
    quorum: int = 1,
    votes: Sequence[tuple[str, int]] = (),
    sender: str | None = None,
) -> Expected:
    """What ``message`` from ``sender`` must do to an open ask with ``options`` (none: a text ask).

    ``mismatches`` is the ask's miss count before the message, ``expired`` whether the
    message arrives after the ask's TTL. ``responders`` (none: anyone answers),
    ``quorum`` and ``votes`` (``(sender, option index)`` pairs) are who may answer it and
    the votes it holds.
    """
    before = tuple(votes)
    text = as_text(message, limit)
    if text is None:
        return Expected(None, AskStatus.OPEN, mismatches, votes=before, unchanged=True)
    if expired:
        return Expected(ReplyKind.PASS, AskStatus.EXPIRED, mismatches, votes=before)
    if responders and sender not in responders:
        return Expected(ReplyKind.NOT_YOURS, AskStatus.OPEN, mismatches, votes=before, unchanged=True)
    decided = _decide(tuple(options), text)
    if decided is None:
        missed = mismatches + 1
        kind = ReplyKind.ESCALATED if missed >= escalate_after else ReplyKind.RETRY
        return Expected(kind, AskStatus.OPEN, missed, votes=before)
    kind, answer, option_index = decided
    if kind is ReplyKind.SELECTED and responders:
        assert option_index is not None and sender is not None
        cast = (*((who, index) for who, index in before if who != sender), (sender, option_index))
        if sum(1 for _, index in cast if index == option_index) < quorum:
            return Expected(ReplyKind.VOTED, AskStatus.OPEN, 0, votes=cast)
        return Expected(kind, AskStatus.ANSWERED, 0, answer, option_index, votes=cast, answered_by=sender)
    status = CLOSING_STATUS.get(kind, AskStatus.OPEN)
    closes = status is AskStatus.ANSWERED
    return Expected(
        kind,
        status,
        0 if closes else mismatches,
        answer,
        option_index,
        votes=before,
        answered_by=sender if closes else None,
        closed_by=sender if status is AskStatus.CANCELLED else None,
    )


def _decide(options: tuple[str, ...], text: str) -> tuple[ReplyKind, str | None, int | None] | None:
    """The reply kind, answer and option index a message decides; ``None`` for a miss."""
    word = normalise(text)
    slash = word[1:] if word.startswith("/") else None
    if slash is not None and slash in CANCEL_WORDS:
        return ReplyKind.CANCELLED, None, None
    if slash is not None and slash in RESHOW_WORDS:
        return ReplyKind.RESHOWN, None, None
    if not options:
        return (ReplyKind.ANSWERED, text, None) if word else None
    index = _selected_index(options, word)
    if index is not None:
        return ReplyKind.SELECTED, options[index - 1], index
    if word in CANCEL_WORDS:
        return ReplyKind.CANCELLED, None, None
    if word in RESHOW_WORDS:
        return ReplyKind.RESHOWN, None, None
    return None


def _selected_index(options: tuple[str, ...], word: str) -> int | None:
    """The option a normalised word selects (1-based): a canonical number, then a label."""
    # A number longer than n's digits is out of range without converting it (no huge ints).
    if CANONICAL_NUMBER.fullmatch(word) and len(word) <= len(str(len(options))) and int(word) <= len(options):
        return int(word)
    for position, label in enumerate(options, start=1):
        if normalise(label) == word:
            return position
    return None


__all__ = ["CLOSING_STATUS", "Expected", "as_text", "expected", "is_expired", "normalise"]
