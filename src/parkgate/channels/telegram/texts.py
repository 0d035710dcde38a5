"""What a posted ask's Telegram message says: the question while open, and how it ended.

On Telegram typed slash commands reach the bot, so the question keeps the contract's
footer (its exits, ``/menu`` and ``/cancel``, typed). The close lines are every channel's
(:mod:`parkgate.channels.lines`), with people named by ``mention``.
"""

from __future__ import annotations

from parkgate.channels.lines import Mention, closed_line
from parkgate.core.machine import render_question
from parkgate.core.model import Ask


def open_text(ask: Ask) -> str:
    """The message of an open ask: its prompt, numbered options and exits."""
    return render_question(ask)


def closed_text(ask: Ask, mention: Mention) -> str:
    """The message of a closed ask: its question without the exits, a blank line, how it ended.

    Args:
        ask: The ask, closed.
        mention: Names a person from their sender id (a Telegram user id).

    Returns:
        The message's new text.
    """
    return f"{render_question(ask, footer=False)}\n\n{closed_line(ask, mention)}"
