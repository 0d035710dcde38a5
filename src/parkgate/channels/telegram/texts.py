"""What a posted ask's Telegram message says: the question while open, and how it ended.

On Telegram typed slash commands reach the bot, so the question keeps the contract's
footer (its exits, ``/menu`` and ``/cancel``, typed), and under it the line every channel
posts: whom it is for, how many must agree, until when it is open (in UTC, with its TTL:
:func:`~parkgate.channels.lines.about_line`). The close lines are every channel's too
(:mod:`parkgate.channels.lines`), with people named by ``mention``.

Messages are sent as plain text (no ``parse_mode``), so nothing in a prompt, a label, an
answer or a name is read as HTML or Markdown. Telegram still finds ``@username`` in
plain text and notifies that person; an ``@`` that would start one in what a message
quotes (prompts, labels, answers, replies, first names) is sent as ``＠`` (U+FF20), which
reads the same and mentions no one (:func:`plain`). The mentions made are the code's
own, of a person the message names (a responder, a voter, who answered or dropped the
ask): the ``@username`` Telegram gave, else, for a person with no username whose first
name the bot has seen, a ``text_mention`` entity over that name (sent in the call's
``entities``, so the text stays plain and Telegram notifies them). A text is built with
each such name marked (:func:`marked`, noncharacters that :func:`length` and :func:`cut`
do not count and :func:`plain` removes from what a message quotes), and the marks become
entities, in UTF-16 offsets, once the final text is cut (:func:`with_entities`); a name
the cut removes, even in part, is mentioned by no entity.

A message holds at most :data:`MAX_MESSAGE_CHARS` characters (UTF-16 code units, as
Telegram counts them). A question longer than that is refused when the ask is parked
(:func:`check_fits`), and the line under it is cut to fit (:func:`open_text`); a close
edit is shortened to fit, the quoted answer first, so it always succeeds
(:func:`closed_text`); a reply line is cut to fit (:func:`fitted`).
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any

from parkgate.channels.lines import about_line, closed_line
from parkgate.core.closed_words import Mention
from parkgate.core.machine import render_question
from parkgate.core.model import Ask
from parkgate.errors import InputError

#: The longest message text the Bot API sends, in UTF-16 code units.
MAX_MESSAGE_CHARS = 4096
#: What ends a text cut to fit.
ELLIPSIS = "…"
#: An ``@`` Telegram would read as the start of a mention: not after a word character
#: (``name@example.com`` is an address, left alone), before a username character.
_MENTION_AT = re.compile(r"(?<![A-Za-z0-9_])@(?=[A-Za-z0-9_])")
#: What such an ``@`` is sent as: the fullwidth commercial at, which starts no mention.
QUOTED_AT = "\uff20"
#: The marks around a name to be sent as a text mention, ``MARK_OPEN`` user id ``MARK_ID``
#: name ``MARK_CLOSE``: Unicode noncharacters, kept for a program's own use, which no text
#: sent holds (:func:`plain` removes them from what a message quotes).
MARK_OPEN, MARK_ID, MARK_CLOSE = "\ufdd0", "\ufdd1", "\ufdd2"
#: A mark as a whole (the opening one with its user id): what Telegram never sees.
_MARK = re.compile(f"{MARK_OPEN}[0-9]*{MARK_ID}|{MARK_CLOSE}")
#: One piece of a marked text: a mark, or one character.
_PIECE = re.compile(f"{MARK_OPEN}[0-9]*{MARK_ID}|.", re.DOTALL)
#: A marked name, whole: its user id and the name.
_MARKED = re.compile(f"{MARK_OPEN}([0-9]+){MARK_ID}([^{MARK_OPEN}{MARK_ID}{MARK_CLOSE}]+){MARK_CLOSE}")
#: Each mark character, removed from quoted text and from what is left of a cut mark.
_MARK_CHARS = str.maketrans("", "", MARK_OPEN + MARK_ID + MARK_CLOSE)


def plain(text: str) -> str:
    """``text`` as quoted in a message: every ``@`` that would mention someone made ``＠``
    (and any mark character dropped, so quoted text marks no one)."""
    return _MENTION_AT.sub(QUOTED_AT, text.translate(_MARK_CHARS))


def _units(text: str) -> int:
    """UTF-16 code units in ``text``."""
    return len(text.encode("utf-16-le")) // 2


def length(text: str) -> int:
    """``text``'s length as Telegram counts it: UTF-16 code units (an emoji may be two),
    marks left out (what is sent holds none)."""
    return _units(_MARK.sub("", text))


def cut(text: str, limit: int) -> str:
    """``text`` when it fits in ``limit`` UTF-16 code units, else its start and ``…`` in that many
    (marks kept where they stand; a character that would not fit whole, half a surrogate pair, dropped)."""
    if length(text) <= limit:
        return text
    room = max(0, limit - length(ELLIPSIS))
    kept: list[str] = []
    used = 0
    for piece in _PIECE.finditer(text):
        part = piece.group()
        size = length(part)
        if used + size > room:
            break
        used += size
        kept.append(part)
    return "".join(kept) + ELLIPSIS


def marked(user_id: int, name: str) -> str:
    """``name`` marked as the person ``user_id``'s, to be sent as a text mention (:func:`with_entities`)."""
    return f"{MARK_OPEN}{user_id}{MARK_ID}{name.translate(_MARK_CHARS)}{MARK_CLOSE}"


def with_entities(text: str) -> tuple[str, list[dict[str, Any]]]:
    """A marked text as it is sent: the text without its marks, and a ``text_mention``
    entity per whole marked name (its offset and length in UTF-16 code units).

    Args:
        text: A message's final text (cut to fit), with the names :func:`marked` in it.

    Returns:
        The text Telegram is sent, and its ``entities`` (empty where no name is marked, or
        none is left whole).
    """
    sent: list[str] = []
    entities: list[dict[str, Any]] = []
    offset = 0
    start = 0
    for match in _MARKED.finditer(text):
        before = _MARK.sub("", text[start : match.start()]).translate(_MARK_CHARS)
        offset += _units(before)
        name = match.group(2)
        user = {"id": int(match.group(1)), "is_bot": False, "first_name": name}
        entities.append({"type": "text_mention", "offset": offset, "length": _units(name), "user": user})
        offset += _units(name)
        sent += [before, name]
        start = match.end()
    sent.append(_MARK.sub("", text[start:]).translate(_MARK_CHARS))
    return "".join(sent), entities


def fitted(text: str) -> str:
    """``text`` cut to one message (a reply line that quotes a long question)."""
    return cut(text, MAX_MESSAGE_CHARS)


def question_text(ask: Ask) -> str:
    """An open ask's question as its message shows it: its prompt, numbered options and exits."""
    return plain(render_question(ask))


def open_text(ask: Ask, mention: Mention = str) -> str:
    """The message of an open ask: its question, a blank line, and whom it is for, how
    many must agree and until when, people named by ``mention`` (that line cut to fit
    beside the question, which :func:`check_fits` keeps within a message)."""
    question = question_text(ask)
    room = MAX_MESSAGE_CHARS - length(question) - length("\n\n")
    if room <= length(ELLIPSIS):
        return question
    return f"{question}\n\n{cut(about_line(ask, mention), room)}"


def check_fits(ask: Ask) -> None:
    """Refuse ``ask`` when its question would be longer than Telegram sends.

    Raises:
        InputError: The question, as posted, is over :data:`MAX_MESSAGE_CHARS`.
    """
    size = length(question_text(ask))
    if size > MAX_MESSAGE_CHARS:
        raise InputError(
            f"the question is {size} characters as posted on Telegram (its prompt, numbered options and "
            f"exits), and a Telegram message holds at most {MAX_MESSAGE_CHARS}: shorten the prompt or the options"
        )


def closed_text(ask: Ask, mention: Mention) -> str:
    """The message of a closed ask: its question without the exits, a blank line, how it ended.

    The text always fits in a message: a long quoted answer is cut with ``…`` first, and
    then, if the line still does not fit beside the question, the question is.

    Args:
        ask: The ask, closed.
        mention: Names a person from their sender id (a Telegram user id).

    Returns:
        The message's new text.
    """
    question = plain(render_question(ask, footer=False))
    quoted = ask if ask.answer is None else dataclasses.replace(ask, answer=plain(ask.answer))
    line = closed_line(quoted, mention)
    room = MAX_MESSAGE_CHARS - length(question) - length("\n\n")
    if length(line) > room and quoted.answer:
        spare = length(line) - length(quoted.answer)  # the line without its answer
        answer = cut(quoted.answer, max(length(ELLIPSIS), room - spare))
        line = closed_line(dataclasses.replace(quoted, answer=answer), mention)
    if length(line) > room:
        question = cut(question, MAX_MESSAGE_CHARS - length("\n\n") - length(line))
    return fitted(f"{question}\n\n{line}")
