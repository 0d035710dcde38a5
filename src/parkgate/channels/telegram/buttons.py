"""The inline keyboard of a posted ask, and what a press of one of its buttons means.

An ask is posted with one button per option, then **Cancel** and **Show options**. Each
button's ``callback_data`` names the ask and the button (``pg:<ask id>:<button>``), at
most 64 bytes as the Bot API allows: a press is read against the ask it was posted for,
never against whatever is open in the chat now. A press becomes the text the contract
already reads: an option's number selects it, Cancel is ``/cancel`` and Show options is
``/menu`` (the slash forms, which no option label shadows).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from telegram import InlineKeyboardButton, InlineKeyboardMarkup

from parkgate.core.phrases import CANCEL_WORD, CHANNEL_CANCEL_BUTTON, CHANNEL_SHOW_OPTIONS_BUTTON, MENU_WORD

#: Every button's data starts with this, so a press on another bot's keyboard is not read as ours.
PREFIX = "pg"
#: The data's button part for Cancel and for Show options (an option's is its number).
CANCEL = "c"
SHOW_OPTIONS = "m"
#: The Bot API's limit on ``callback_data``, in bytes.
MAX_DATA_BYTES = 64


@dataclass(frozen=True, slots=True)
class Press:
    """A press of one of an ask's buttons: the ask it was posted for and the text it stands for."""

    ask_id: str
    text: str


def button_data(ask_id: str, button: str | int) -> str:
    """The ``callback_data`` of ``button`` (an option's 1-based number, :data:`CANCEL` or
    :data:`SHOW_OPTIONS`) on ``ask_id``'s message.

    Args:
        ask_id: The ask the keyboard belongs to.
        button: An option's number, or :data:`CANCEL` / :data:`SHOW_OPTIONS`.

    Returns:
        The data Telegram sends back when the button is pressed.
    """
    data = f"{PREFIX}:{ask_id}:{button}"
    if len(data.encode()) > MAX_DATA_BYTES:
        raise ValueError(f"callback data over {MAX_DATA_BYTES} bytes: {data!r}")
    return data


def read_press(data: str | None) -> Press | None:
    """What a button's ``callback_data`` stands for, ``None`` when it is not one of ours.

    Args:
        data: The callback query's data.

    Returns:
        The ask and the text to hand to the gateway, or ``None`` for data parkgate did not write.
    """
    if data is None:
        return None
    prefix, _, rest = data.partition(":")
    ask_id, _, button = rest.partition(":")
    if prefix != PREFIX or not ask_id or not button:
        return None
    if button == CANCEL:
        return Press(ask_id, "/" + CANCEL_WORD)
    if button == SHOW_OPTIONS:
        return Press(ask_id, "/" + MENU_WORD)
    if button.isascii() and button.isdigit() and not button.startswith("0"):
        return Press(ask_id, button)
    return None


def ask_keyboard(ask_id: str, options: tuple[str, ...] | list[str]) -> dict[str, Any]:
    """The ``reply_markup`` of a posted ask: a row per option, then Cancel and Show options.

    Args:
        ask_id: The ask.
        options: Its option labels (none for a text ask, which gets the two exits alone).

    Returns:
        The inline keyboard as the Bot API's JSON object.
    """
    rows = [
        [InlineKeyboardButton(f"{number}. {label}", callback_data=button_data(ask_id, number))]
        for number, label in enumerate(options, start=1)
    ]
    rows.append(
        [
            InlineKeyboardButton(CHANNEL_CANCEL_BUTTON, callback_data=button_data(ask_id, CANCEL)),
            InlineKeyboardButton(CHANNEL_SHOW_OPTIONS_BUTTON, callback_data=button_data(ask_id, SHOW_OPTIONS)),
        ]
    )
    return InlineKeyboardMarkup(rows).to_dict()
