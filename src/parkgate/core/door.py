"""How a door check is judged: four non-answers, then the exit word, to a parked conversation.

One definition for every door check (``parkgate doorcheck`` on parkgate itself,
``parkgate audit door`` on any chat endpoint). Each reply is a line: the ``input`` sent,
the reply's ``text``, whether the conversation is still ``parked`` after it, and, for
parkgate's own replies, its ``kind``. A door passes when:

- no reply is passed on: a ``pass`` kind, or a reply that is null or empty, is what a
  caller reads as "not an answer" and sends to a model;
- the reply changes shape by the third or fourth non-answer: its shape (the kind, or the
  text with numbers and spacing folded, so "try 2" and "try 3" are one shape) differs
  from the first non-answer's on both;
- the conversation ends unparked after the exit word.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from parkgate.core.kinds import ReplyKind
from parkgate.core.phrases import CANCEL_WORD

#: The write-up's four non-answers, sent before :data:`DOOR_EXIT`.
DOOR_NON_ANSWERS = ("pick the right one", "did it run?", "help", "what now")
#: The exit word every door check sends last.
DOOR_EXIT = CANCEL_WORD
#: The most of a reply's text a verdict quotes.
QUOTED_CHARS = 40

_DIGITS = re.compile(r"\d+")
_SPACE = re.compile(r"\s+")


def reply_shape(line: Mapping[str, Any]) -> str:
    """A reply's shape: its ``kind`` when it has one, else its text case-folded with
    every run of digits as ``#`` and every run of spacing as one space."""
    kind = line.get("kind")
    if kind is not None:
        return str(kind)
    text = _SPACE.sub(" ", _DIGITS.sub("#", str(line.get("text") or ""))).strip()
    return text.casefold()


def passed_on(line: Mapping[str, Any]) -> str | None:
    """How a reply leaks to a model (``"pass"``, ``"null"``, ``"empty"``), or ``None``."""
    if line.get("kind") is not None:
        return "pass" if line["kind"] == ReplyKind.PASS.value else None
    text = line.get("text")
    if text is None:
        return "null"
    return "empty" if not str(text).strip() else None


def _quoted(line: Mapping[str, Any]) -> str:
    shape = reply_shape(line)
    return shape if len(shape) <= QUOTED_CHARS else shape[: QUOTED_CHARS - 1] + "\u2026"


def door_verdict(lines: Sequence[Mapping[str, Any]], misses: int = len(DOOR_NON_ANSWERS)) -> str | None:
    """Judge a door check's replies.

    Args:
        lines: One mapping a reply, in the order sent: ``input``, ``text``, ``parked``
            (``True``, ``False``, or ``None`` when the check cannot tell) and optionally
            ``kind``; the first ``misses`` answer non-answers, the last the exit word.
        misses: How many non-answers were sent before the exit word (at least 4).

    Returns:
        ``None`` when the door works, else one sentence saying what is wrong.
    """
    if len(lines) != misses + 1 or misses < 4:
        return f"expected {misses} non-answers and an exit, got {len(lines)} replies"
    for line in lines:
        leak = passed_on(line)
        if leak:
            return f"the reply to {line['input']!r} was passed on ({leak}): a caller sends that message to a model"
    shapes = [reply_shape(line) for line in lines[:misses]]
    if shapes[0] in (shapes[2], shapes[3]):
        quoted = [_quoted(line) for line in lines[:misses]]
        return f"the reply never changed shape by the 3rd/4th non-answer: {quoted}"
    last = lines[-1]
    if last.get("parked") is None:
        return f"the reply to {last['input']!r} carries no parked flag, so nothing shows that it left"
    if last["parked"]:
        return f"{last['input']!r} did not leave: the conversation is still parked after it"
    return None
