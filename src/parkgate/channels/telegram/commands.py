"""Telegram's bot commands read as parkgate's slash forms.

Telegram delivers a bot command as an ordinary message, ``/cancel`` in a private chat and
``/cancel@YourBot`` in a group, where several bots may listen. The ``@botname`` suffix is
part of the slash form: it is stripped like the slash is, so ``/cancel@YourBot`` is the
contract's ``/cancel``. A command addressed to another bot is not this bot's to read, and
neither is one addressed to any bot while this bot's username is unknown (its ``getMe``
failed and none was configured): reading it would need a Bot API call on the update's path.
"""

from __future__ import annotations

import re

#: A bot command with its addressee: ``/word@botname`` (Telegram's command and username characters).
_ADDRESSED = re.compile(r"(/[A-Za-z0-9_]{1,64})@([A-Za-z0-9_]{1,64})")


def addressed_text(text: str, bot_username: str | None) -> str | None:
    """The text to hand to the gateway, or ``None`` when it is a command for another bot.

    Args:
        text: The message's text as typed.
        bot_username: This bot's username (with or without a leading ``@``); ``None``
            when unknown, which takes no command addressed to a bot as this bot's.

    Returns:
        ``text`` with the ``@botname`` suffix of its leading command removed when it names
        this bot (compared case-insensitively, as Telegram's usernames are), ``text``
        unchanged when it starts with no addressed command, and ``None`` when its leading
        command names another bot, or any bot while ``bot_username`` is unknown.
    """
    stripped = text.lstrip()
    first, space, rest = _split_first_word(stripped)
    found = _ADDRESSED.fullmatch(first)
    if found is None:
        return text
    command, addressee = found.groups()
    if bot_username is None or addressee.casefold() != bot_username.lstrip("@").casefold():
        return None
    return command + space + rest


def _split_first_word(text: str) -> tuple[str, str, str]:
    """``"/a@b  rest"`` -> ``("/a@b", "  ", "rest")``: the first word, the space after it, the rest."""
    found = re.match(r"(\S*)(\s*)(.*)", text, flags=re.DOTALL)
    assert found is not None  # the pattern matches every string
    first, space, rest = found.groups()
    return first, space, rest
