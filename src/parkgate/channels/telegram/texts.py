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
reads the same and mentions no one (:func:`plain`). The one mention made is the code's
own: the ``@username`` Telegram gave for a person the message names (a responder, a
voter, who answered or dropped the ask).

A message holds at most :data:`MAX_MESSAGE_CHARS` characters (UTF-16 code units, as
Telegram counts them). A question longer than that is refused when the ask is parked
(:func:`check_fits`), and the line under it is cut to fit (:func:`open_text`); a close
edit is shortened to fit, the quoted answer first, so it always succeeds
(:func:`closed_text`); a reply line is cut to fit (:func:`fitted`).
"""

from __future__ import annotations

import dataclasses
import re

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


def plain(text: str) -> str:
    """``text`` as quoted in a message: every ``@`` that would mention someone made ``＠``."""
    return _MENTION_AT.sub(QUOTED_AT, text)


def length(text: str) -> int:
    """``text``'s length as Telegram counts it: UTF-16 code units (an emoji may be two)."""
    return len(text.encode("utf-16-le")) // 2


def cut(text: str, limit: int) -> str:
    """``text`` when it fits in ``limit`` UTF-16 code units, else its start and ``…`` in that many."""
    if length(text) <= limit:
        return text
    room = max(0, limit - length(ELLIPSIS))
    units = text.encode("utf-16-le")[: room * 2]
    return units.decode("utf-16-le", "ignore") + ELLIPSIS  # a surrogate pair cut in half is dropped


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
