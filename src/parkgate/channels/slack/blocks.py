"""What parkgate shows on Slack, as Block Kit: an open ask (its question, a button per
option, Cancel and Show options), a closed ask's update (every channel's close lines,
:mod:`parkgate.channels.lines`, with people named as Slack shows them), and reply lines
with the exits that work on Slack (the buttons; :data:`~parkgate.channels.slack.phrases.EXITS`).

Everything Slack renders is escaped for Slack (:func:`escape`): a prompt, an option, an
answer or a name holding ``<!channel>``, ``<@U123>`` or ``<https://evil.example|...>`` is
shown as those characters, never as a mention or a disguised link. The one markup made
here is :func:`mention`'s ``<@U123>``, built from a sender id that is a Slack user id.

Pure functions of an :class:`~parkgate.core.model.Ask`: no Slack call is made here.
"""

from __future__ import annotations

import dataclasses
import re
from datetime import UTC, datetime
from typing import Any

from parkgate.channels import lines
from parkgate.channels.base import ChannelReply
from parkgate.channels.slack.phrases import EXITS
from parkgate.core import machine
from parkgate.core import phrases as P
from parkgate.core.kinds import ReplyKind
from parkgate.core.model import Ask

#: The ``action_id`` prefix of parkgate's buttons; an option's is ``parkgate:option:N``.
ACTION_PREFIX = "parkgate:"
OPTION_ACTION = ACTION_PREFIX + "option:"
CANCEL_ACTION = ACTION_PREFIX + "cancel"
MENU_ACTION = ACTION_PREFIX + "menu"
#: The ``block_id`` of an ask's buttons is this and the ask's id.
BLOCK_PREFIX = "parkgate-"
#: A click's text for ``handle``: the slash forms, which leave or re-show whatever the labels.
ACTION_TEXT: dict[str, str] = {CANCEL_ACTION: "/" + P.CANCEL_WORD, MENU_ACTION: "/" + P.MENU_WORD}
#: Slack takes at most 25 elements in an actions block: the options' buttons and the two exits.
MAX_OPTION_BUTTONS = 23
#: The longest text Slack shows on a button, and in a section block.
MAX_BUTTON_CHARS = 75
MAX_SECTION_CHARS = 3000


#: A Slack user id (``U...``, or ``W...`` on Enterprise Grid): the only sender :func:`mention` links.
SLACK_USER_ID = re.compile(r"[UW][A-Z0-9]{2,30}")
#: Slack's entities for its three control characters (``&`` first, so no entity is escaped twice).
_ENTITIES = (("&", "&amp;"), ("<", "&lt;"), (">", "&gt;"))


def escape(text: str) -> str:
    """``text`` as Slack shows it literally: ``&``, ``<`` and ``>`` as the entities Slack's
    formatting docs name, so no mention, channel ping or link is read from it."""
    for character, entity in _ENTITIES:
        text = text.replace(character, entity)
    return text


def unescape(text: str) -> str:
    """A person's message text as they typed it: Slack sends ``&``, ``<`` and ``>`` escaped."""
    for character, entity in reversed(_ENTITIES):
        text = text.replace(entity, character)
    return text


def clip(text: str, limit: int) -> str:
    """Escaped ``text`` cut to at most ``limit`` characters, never inside an entity."""
    if len(text) <= limit:
        return text
    cut = text[:limit]
    amp = cut.rfind("&")
    return cut[:amp] if amp != -1 and ";" not in cut[amp:] else cut


def for_slack(text: str) -> str:
    """``text`` with every line that names the slash forms naming Slack's buttons instead."""
    for line, on_slack in EXITS.items():
        text = text.replace(line, on_slack)
    return text


def mention(user: str) -> str:
    """How Slack shows a user id (``<@U123>``); a sender that is no Slack user id (an email,
    a name given over HTTP) as escaped text."""
    return f"<@{user}>" if SLACK_USER_ID.fullmatch(user) else escape(user)


def _mrkdwn(text: str) -> dict[str, Any]:
    """A mrkdwn text object of escaped ``text``; ``verbatim`` so Slack makes no link or
    mention of its own from it (the ``<@U123>`` :func:`mention` builds still works)."""
    return {"type": "mrkdwn", "text": text, "verbatim": True}


def _button(text: str, action_id: str, ask_id: str, style: str | None = None) -> dict[str, Any]:
    button: dict[str, Any] = {
        "type": "button",
        "text": {"type": "plain_text", "text": clip(escape(text), MAX_BUTTON_CHARS), "emoji": False},
        "action_id": action_id,
        "value": ask_id,
    }
    if style is not None:
        button["style"] = style
    return button


def question_text(ask: Ask) -> str:
    """The ask's question as Slack shows it: the rendered menu, exits named as buttons, escaped."""
    return escape(for_slack(machine.render_question(ask)))


def reply_text(reply: ChannelReply, ask: Ask | None = None) -> str:
    """A reply's line as Slack shows it: exits named as buttons, escaped (the prompt a line
    quotes and the options a menu lists are shown as they are), and the people it names
    as mentions (``<@U123>``), so Slack notifies them. A vote's line is followed by the
    votes so far of ``ask``, each option's voters mentioned."""
    text = reply.shown(mention, lambda text: escape(for_slack(text)))
    votes = lines.votes_line(ask, mention, escape) if ask is not None and reply.kind is ReplyKind.VOTED else None
    return text if votes is None else f"{text}\n{votes}"


def slack_date(moment: datetime) -> str:
    """A time as Slack shows it to each reader in their own time zone ("Today 15:00"):
    Slack's ``<!date^...>`` token, with the UTC time for clients that cannot show it."""
    stamp = int(moment.replace(tzinfo=moment.tzinfo or UTC).timestamp())
    return f"<!date^{stamp}^{{date_short_pretty}} {{time}}|{escape(lines.utc_time(moment))}>"


def about_text(ask: Ask) -> str:
    """What an open ask's post says under its question: whom it is for (mentions, so they
    are notified), how many must agree, and until when it is open (in each reader's time)."""
    return lines.about_line(ask, mention, P.CHANNEL_OPEN_UNTIL.format(when=slack_date(ask.due_at)))


def ask_blocks(ask: Ask) -> list[dict[str, Any]]:
    """An open ask: its question, then a button per option (the first
    :data:`MAX_OPTION_BUTTONS`; the rest are typed by number), Show options and Cancel,
    then whom it is for, how many must agree and until when (:func:`about_text`)."""
    buttons = [
        _button(label, f"{OPTION_ACTION}{index}", ask.id)
        for index, label in enumerate(ask.options[:MAX_OPTION_BUTTONS], start=1)
    ]
    buttons.append(_button(P.CHANNEL_SHOW_OPTIONS_BUTTON, MENU_ACTION, ask.id))
    buttons.append(_button(P.CHANNEL_CANCEL_BUTTON, CANCEL_ACTION, ask.id, style="danger"))
    return [
        {"type": "section", "text": _mrkdwn(clip(question_text(ask), MAX_SECTION_CHARS))},
        {"type": "actions", "block_id": BLOCK_PREFIX + ask.id, "elements": buttons},
        {"type": "context", "elements": [_mrkdwn(clip(about_text(ask), MAX_SECTION_CHARS))]},
    ]


def _escaped(ask: Ask) -> Ask:
    """``ask`` with the text a close line quotes (its answer) escaped; names go through :func:`mention`."""
    return ask if ask.answer is None else dataclasses.replace(ask, answer=escape(ask.answer))


def closed_line(ask: Ask) -> str:
    """How a closed ask ended, with people named as Slack shows them (:mod:`parkgate.channels.lines`)."""
    return lines.closed_line(_escaped(ask), mention)


def already_closed_line(ask: Ask) -> str:
    """What a click on closed ``ask`` answers: "This question is already closed (answered by <@U123>)."."""
    return lines.already_closed_line(_escaped(ask), mention)


def closed_blocks(ask: Ask) -> list[dict[str, Any]]:
    """A closed ask: its prompt and how it ended; no buttons."""
    return [
        {"type": "section", "text": _mrkdwn(clip(escape(ask.prompt), MAX_SECTION_CHARS))},
        {"type": "context", "elements": [_mrkdwn(closed_line(ask))]},
    ]
