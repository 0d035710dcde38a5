"""What a posted ask's Discord message says, and its buttons: the question while open (a
button per option, Cancel and Show options, and Reply for typed text), how it ended, and
the lines posted in its thread. Pure functions of an :class:`~parkgate.core.model.Ask`.

**Buttons.** A message holds at most :data:`MAX_ROWS` action rows of
:data:`MAX_ROW_BUTTONS` buttons. The options take the first rows
(:data:`MAX_OPTION_BUTTONS`); the last row holds the exits. A text ask, and a choice ask
with more options than buttons (the rest are typed by number), get **Reply**, which opens
a form with one text field (a modal). Each button's ``custom_id`` names the ask and the
button (``pg:<ask id>:<button>``, at most 100 characters): a press is read against the ask
it was posted for, never whatever is open in the channel now. A press becomes the text the
contract already reads: an option's number, ``/cancel`` or ``/menu``.

**Mentions.** Every message is sent with ``allowed_mentions`` limited, so nothing in a
prompt, a label or an answer pings anyone (``@everyone`` included); people are named
``<@id>`` (a role ``<@&id>``), which Discord shows as their name. The post pings the
responders it names under its question (whom it is for, how many must agree, until
when: :func:`post_text`), a reminder or an escalation the people it names, and no
message anyone else (:func:`allowed_mentions`).

A message holds at most :data:`MAX_CONTENT_CHARS` characters: a longer question is
refused when the ask is parked (:func:`check_fits`), a close edit and a thread line are
cut to fit.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from typing import Any

from parkgate.channels import lines
from parkgate.channels.base import ChannelReply
from parkgate.channels.discord.phrases import (
    ANSWER_LABEL,
    EXITS,
    MODAL_TITLE,
    REPLY_BUTTON,
    THREAD_NAME,
    TYPE_A_NUMBER_FOOTER,
)
from parkgate.core import machine
from parkgate.core import phrases as P
from parkgate.core.kinds import AskKind, ReplyKind
from parkgate.core.model import Ask
from parkgate.errors import InputError
from parkgate.gateway.checks import MAX_MESSAGE_CHARS

#: Discord's limits: a message's content, action rows, buttons per row, a button's label,
#: a ``custom_id``, a modal's title and a text field's label, a text field's value, a thread's name.
MAX_CONTENT_CHARS = 2000
MAX_ROWS = 5
MAX_ROW_BUTTONS = 5
MAX_LABEL_CHARS = 80
MAX_CUSTOM_ID_CHARS = 100
MAX_MODAL_TEXT_CHARS = 45
MAX_INPUT_CHARS = min(4000, MAX_MESSAGE_CHARS)
MAX_THREAD_NAME_CHARS = 100
#: The rows options take; the last row holds the exits.
MAX_OPTION_BUTTONS = (MAX_ROWS - 1) * MAX_ROW_BUTTONS
#: Component types, button styles, a text field's style and the modal response, as Discord numbers them.
ACTION_ROW, BUTTON, TEXT_INPUT = 1, 2, 4
PRIMARY, SECONDARY, DANGER = 1, 2, 4
PARAGRAPH = 2
MODAL = 9
#: Every ``custom_id`` parkgate makes starts with this.
PREFIX = "pg"
#: The button part of a ``custom_id``: Cancel, Show options, Reply (opens the form), the form itself.
CANCEL, SHOW_OPTIONS, REPLY, FORM = "c", "m", "r", "f"
#: The form's text field's ``custom_id``.
ANSWER_FIELD = "answer"
#: A Discord id: what :func:`mention` makes ``<@id>`` of.
SNOWFLAKE = re.compile(r"[0-9]{1,20}")
#: A role named as a responder: ``<@&id>``.
ROLE = re.compile(r"<@&([0-9]{1,20})>")
ELLIPSIS = "…"


@dataclass(frozen=True, slots=True)
class Press:
    """A press of one of an ask's buttons, or its form sent: the ask, and what it stands for
    (``text`` ``None`` for Reply, which opens the form)."""

    ask_id: str
    button: str
    text: str | None


def custom_id(ask_id: str, button: str | int) -> str:
    """The ``custom_id`` of ``button`` (an option's number, or :data:`CANCEL`,
    :data:`SHOW_OPTIONS`, :data:`REPLY`, :data:`FORM`) on ``ask_id``'s message."""
    made = f"{PREFIX}:{ask_id}:{button}"
    if len(made) > MAX_CUSTOM_ID_CHARS:
        raise ValueError(f"a custom_id over {MAX_CUSTOM_ID_CHARS} characters: {made!r}")
    return made


def read_custom_id(value: object) -> Press | None:
    """What a ``custom_id`` stands for, ``None`` when parkgate did not make it."""
    if not isinstance(value, str):
        return None
    prefix, _, rest = value.partition(":")
    ask_id, _, button = rest.partition(":")
    if prefix != PREFIX or not ask_id or not button:
        return None
    if button == CANCEL:
        return Press(ask_id, button, "/" + P.CANCEL_WORD)
    if button == SHOW_OPTIONS:
        return Press(ask_id, button, "/" + P.MENU_WORD)
    if button in (REPLY, FORM):
        return Press(ask_id, button, None)
    if button.isascii() and button.isdigit() and not button.startswith("0") and int(button) <= MAX_OPTION_BUTTONS:
        return Press(ask_id, button, button)
    return None


def clip(text: str, limit: int) -> str:
    """``text`` when it fits in ``limit`` characters, else its start and ``…`` in that many."""
    return text if len(text) <= limit else text[: max(0, limit - len(ELLIPSIS))] + ELLIPSIS


def for_discord(text: str) -> str:
    """``text`` with every line that names the typed exits naming Discord's buttons instead."""
    for line, on_discord in EXITS.items():
        text = text.replace(line, on_discord)
    return text


def mention(sender: str) -> str:
    """How Discord names a sender: ``<@id>`` for a user id, a role as given (``<@&id>``),
    anything else (a name given over HTTP, an operator) as it is."""
    return f"<@{sender}>" if SNOWFLAKE.fullmatch(sender) else sender


def _typed_past_buttons(ask: Ask) -> bool:
    """Whether ``ask`` has more options than buttons: the rest are typed in Reply's form."""
    return ask.kind is not AskKind.TEXT and len(ask.options) > MAX_OPTION_BUTTONS


def question_text(ask: Ask) -> str:
    """The message of an open ask: its prompt, numbered options and Discord's exits."""
    text = machine.render_question(ask)
    if _typed_past_buttons(ask):
        text = text.replace(P.CHOICE_MENU_FOOTER_SLASHED, TYPE_A_NUMBER_FOOTER)
        text = text.replace(P.CHOICE_MENU_FOOTER, TYPE_A_NUMBER_FOOTER)
    return for_discord(text)


def post_text(ask: Ask) -> str:
    """The message of an open ask: its question, a blank line, and whom it is for
    (mentioned), how many must agree and until when (:func:`~parkgate.channels.lines.about_line`),
    that line cut to fit beside the question."""
    question = question_text(ask)
    room = MAX_CONTENT_CHARS - len(question) - 2
    if room <= len(ELLIPSIS):
        return question
    return f"{question}\n\n{clip(lines.about_line(ask, mention), room)}"


def check_fits(ask: Ask) -> None:
    """Refuse ``ask`` when its message would be longer than Discord sends.

    Raises:
        InputError: The question, as posted, is over :data:`MAX_CONTENT_CHARS`.
    """
    size = len(question_text(ask))
    if size > MAX_CONTENT_CHARS:
        raise InputError(
            f"the question is {size} characters as posted on Discord (its prompt, numbered options and exits), "
            f"and a Discord message holds at most {MAX_CONTENT_CHARS}: shorten the prompt or the options"
        )


def _button(label: str, button: str | int, ask_id: str, style: int = SECONDARY) -> dict[str, Any]:
    return {
        "type": BUTTON,
        "style": style,
        "label": clip(label, MAX_LABEL_CHARS),
        "custom_id": custom_id(ask_id, button),
    }


def components(ask: Ask) -> list[dict[str, Any]]:
    """An open ask's action rows: a button per option (the first :data:`MAX_OPTION_BUTTONS`),
    five to a row, then Reply (a text ask; options past the buttons), Show options and Cancel."""
    options = (
        [
            _button(f"{number}. {label}", number, ask.id, PRIMARY)
            for number, label in enumerate(ask.options[:MAX_OPTION_BUTTONS], start=1)
        ]
        if ask.kind is not AskKind.TEXT
        else []
    )
    rows = [options[start : start + MAX_ROW_BUTTONS] for start in range(0, len(options), MAX_ROW_BUTTONS)]
    exits = []
    if ask.kind is AskKind.TEXT or _typed_past_buttons(ask):
        exits.append(_button(REPLY_BUTTON, REPLY, ask.id, PRIMARY))
    exits.append(_button(P.CHANNEL_SHOW_OPTIONS_BUTTON, SHOW_OPTIONS, ask.id))
    exits.append(_button(P.CHANNEL_CANCEL_BUTTON, CANCEL, ask.id, DANGER))
    rows.append(exits)
    return [{"type": ACTION_ROW, "components": row} for row in rows]


def modal(ask_id: str, prompt: str) -> dict[str, Any]:
    """The interaction response that opens Reply's form: one text field for the answer."""
    return {
        "type": MODAL,
        "data": {
            "custom_id": custom_id(ask_id, FORM),
            "title": clip(MODAL_TITLE, MAX_MODAL_TEXT_CHARS),
            "components": [
                {
                    "type": ACTION_ROW,
                    "components": [
                        {
                            "type": TEXT_INPUT,
                            "custom_id": ANSWER_FIELD,
                            "style": PARAGRAPH,
                            "label": clip(ANSWER_LABEL, MAX_MODAL_TEXT_CHARS),
                            "placeholder": clip(prompt.splitlines()[0] if prompt.strip() else ANSWER_LABEL, 100),
                            "required": True,
                            "max_length": MAX_INPUT_CHARS,
                        }
                    ],
                }
            ],
        },
    }


def closed_text(ask: Ask) -> str:
    """The message of a closed ask: its question without the exits, a blank line, how it
    ended and who closed it; cut to fit, the question first."""
    line = lines.closed_line(ask, mention)
    if len(line) > MAX_CONTENT_CHARS // 2 and ask.answer:  # a long quoted answer is cut first
        spare = len(line) - len(ask.answer)
        line = lines.closed_line(
            dataclasses.replace(ask, answer=clip(ask.answer, max(1, MAX_CONTENT_CHARS // 2 - spare))), mention
        )
    question = clip(machine.render_question(ask, footer=False), MAX_CONTENT_CHARS - len(line) - 2)
    return clip(f"{question}\n\n{line}", MAX_CONTENT_CHARS)


def already_closed_line(ask: Ask) -> str:
    """What a press on closed ``ask`` answers: "This question is already closed (answered by <@1>).\""""
    return lines.already_closed_line(ask, mention)


def not_yours_line(ask: Ask) -> str:
    """What a press by someone the ask is not for answers: who it is for, as Discord names them."""
    return machine.not_yours_line(ask, mention)


def thread_line(ask: Ask, reply: ChannelReply) -> str:
    """A line posted in the ask's thread: Discord's exits, the people it names (and the
    ask's responders where it quotes them) mentioned, a vote's line followed by the votes
    so far with each option's voters mentioned; cut to fit."""
    shown = for_discord(reply.shown(str))
    for person in {*ask.responders, *reply.names}:
        if SNOWFLAKE.fullmatch(person):
            shown = re.sub(rf"(?<![0-9@&]){person}(?![0-9])", f"<@{person}>", shown)
    votes = lines.votes_line(ask, mention) if reply.kind is ReplyKind.VOTED else None
    return clip(shown if votes is None else f"{shown}\n{votes}", MAX_CONTENT_CHARS)


def allowed_mentions(people: tuple[str, ...] = ()) -> dict[str, Any]:
    """Who a message may ping: no one, or (a reminder, an escalation) the ``people`` it
    names: user ids, and roles written ``<@&id>``."""
    if not people:
        return {"parse": []}
    users = sorted({person for person in people if SNOWFLAKE.fullmatch(person)})[:100]
    roles = sorted({found.group(1) for person in people if (found := ROLE.fullmatch(person))})[:100]
    return {"parse": [], "users": users, "roles": roles}


def thread_name(ask: Ask) -> str:
    """The name of the thread started from the ask's message: its prompt's first line."""
    first = ask.prompt.strip().splitlines()[0].strip() if ask.prompt.strip() else ""
    return clip(first or THREAD_NAME, MAX_THREAD_NAME_CHARS)
