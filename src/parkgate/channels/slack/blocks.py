"""What parkgate shows on Slack, as Block Kit: an open ask (its question, a button per
option, Cancel and Show options), a closed ask's update (every channel's close lines,
:mod:`parkgate.channels.lines`, with people named as Slack shows them), and reply lines
with the exits that work on Slack (the buttons; :data:`~parkgate.core.phrases.SLACK_EXITS`).

Pure functions of an :class:`~parkgate.core.model.Ask`: no Slack call is made here.
"""

from __future__ import annotations

from typing import Any

from parkgate.channels import lines
from parkgate.core import machine
from parkgate.core import phrases as P
from parkgate.core.model import Ask

#: The ``action_id`` prefix of parkgate's buttons; an option's is ``parkgate:option:N``.
ACTION_PREFIX = "parkgate:"
OPTION_ACTION = ACTION_PREFIX + "option:"
CANCEL_ACTION = ACTION_PREFIX + "cancel"
MENU_ACTION = ACTION_PREFIX + "menu"
#: A click's text for ``handle``: the slash forms, which leave or re-show whatever the labels.
ACTION_TEXT: dict[str, str] = {CANCEL_ACTION: "/" + P.CANCEL_WORD, MENU_ACTION: "/" + P.MENU_WORD}
#: Slack takes at most 25 elements in an actions block: the options' buttons and the two exits.
MAX_OPTION_BUTTONS = 23
#: The longest text Slack shows on a button, and in a section block.
MAX_BUTTON_CHARS = 75
MAX_SECTION_CHARS = 3000


def for_slack(text: str) -> str:
    """``text`` with every line that names the slash forms naming Slack's buttons instead."""
    for line, on_slack in P.SLACK_EXITS.items():
        text = text.replace(line, on_slack)
    return text


def mention(user: str) -> str:
    """How Slack shows a user id (``<@U123>``); a sender that is no Slack user id as it is."""
    return f"<@{user}>" if user[:1] in ("U", "W") and user.isalnum() else user


def _button(text: str, action_id: str, ask_id: str, style: str | None = None) -> dict[str, Any]:
    button: dict[str, Any] = {
        "type": "button",
        "text": {"type": "plain_text", "text": text[:MAX_BUTTON_CHARS], "emoji": False},
        "action_id": action_id,
        "value": ask_id,
    }
    if style is not None:
        button["style"] = style
    return button


def question_text(ask: Ask) -> str:
    """The ask's question as Slack shows it: the rendered menu, exits named as buttons."""
    return for_slack(machine.render_question(ask))


def ask_blocks(ask: Ask) -> list[dict[str, Any]]:
    """An open ask: its question, then a button per option (the first
    :data:`MAX_OPTION_BUTTONS`; the rest are typed by number), Show options and Cancel."""
    buttons = [
        _button(label, f"{OPTION_ACTION}{index}", ask.id)
        for index, label in enumerate(ask.options[:MAX_OPTION_BUTTONS], start=1)
    ]
    buttons.append(_button(P.CHANNEL_SHOW_OPTIONS_BUTTON, MENU_ACTION, ask.id))
    buttons.append(_button(P.CHANNEL_CANCEL_BUTTON, CANCEL_ACTION, ask.id, style="danger"))
    return [
        {"type": "section", "text": {"type": "mrkdwn", "text": question_text(ask)[:MAX_SECTION_CHARS]}},
        {"type": "actions", "block_id": f"parkgate-{ask.id}", "elements": buttons},
    ]


def closed_line(ask: Ask) -> str:
    """How a closed ask ended, with people named as Slack shows them (:mod:`parkgate.channels.lines`)."""
    return lines.closed_line(ask, mention)


def already_closed_line(ask: Ask) -> str:
    """What a click on closed ``ask`` answers: "This question is already closed (answered by <@U123>)."."""
    return lines.already_closed_line(ask, mention)


def closed_blocks(ask: Ask) -> list[dict[str, Any]]:
    """A closed ask: its prompt and how it ended; no buttons."""
    return [
        {"type": "section", "text": {"type": "mrkdwn", "text": ask.prompt[:MAX_SECTION_CHARS]}},
        {"type": "context", "elements": [{"type": "mrkdwn", "text": closed_line(ask)}]},
    ]
