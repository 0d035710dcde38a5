"""Telegram: asks posted as messages with an inline keyboard (a button per option, Cancel
and Show options); button presses and typed messages answered through the gateway; every
close shown by editing the message (optional extra ``parkgate[telegram]``:
``python-telegram-bot``, whose ``Update`` parsing reads every update).

- :data:`SPEC`: the channel's declaration (:mod:`parkgate.channels.registry`), read
  without the extra.
- :class:`TelegramChannel` (outbound): the channel's jobs as Bot API calls
  (:class:`BotApi`, ``{root}/bot{token}/{method}``).
- :class:`TelegramInbound` (inbound): one update into the gateway.
- :func:`serve`: what ``parkgate serve`` mounts at ``POST /telegram/webhook`` when
  ``PARKGATE_TELEGRAM_BOT_TOKEN`` is set (with ``PARKGATE_TELEGRAM_WEBHOOK_SECRET``;
  ``PARKGATE_TELEGRAM_API_URL`` is the Bot API server's root, such as a stand-in;
  ``PARKGATE_TELEGRAM_BOT_USERNAME`` the bot's username, else asked with ``getMe``).
- :func:`sending`: the channel alone from the bot token, for ``parkgate deliver``.
- :func:`poll`: long polling with ``getUpdates`` (``parkgate telegram --poll``, the
  channel's command: :mod:`parkgate.channels.telegram.cli`).

Importing the package imports its declaration alone; each other name is imported on
first use, with python-telegram-bot (:class:`~parkgate.errors.MissingExtra` when the
extra is not installed).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from parkgate.channels.telegram.spec import (
    ENV_API_URL,
    ENV_BOT_TOKEN,
    ENV_BOT_USERNAME,
    ENV_WEBHOOK_SECRET,
    NAME,
    SPEC,
)

if TYPE_CHECKING:
    from parkgate.channels.telegram.api import BotApi
    from parkgate.channels.telegram.channel import TelegramChannel, check_target
    from parkgate.channels.telegram.inbound import TelegramInbound
    from parkgate.channels.telegram.polling import poll
    from parkgate.channels.telegram.serving import SECRET_HEADER, WEBHOOK_PATH, channel_from_env, sending, serve

#: Where each name imported on first use is.
_LAZY = {
    "BotApi": "parkgate.channels.telegram.api:BotApi",
    "TelegramChannel": "parkgate.channels.telegram.channel:TelegramChannel",
    "check_target": "parkgate.channels.telegram.channel:check_target",
    "TelegramInbound": "parkgate.channels.telegram.inbound:TelegramInbound",
    "poll": "parkgate.channels.telegram.polling:poll",
    "SECRET_HEADER": "parkgate.channels.telegram.serving:SECRET_HEADER",
    "WEBHOOK_PATH": "parkgate.channels.telegram.serving:WEBHOOK_PATH",
    "channel_from_env": "parkgate.channels.telegram.serving:channel_from_env",
    "sending": "parkgate.channels.telegram.serving:sending",
    "serve": "parkgate.channels.telegram.serving:serve",
}


#: A name of the package that needs its extra, imported on first use.
__getattr__ = SPEC.lazy(__name__, _LAZY)


__all__ = [
    "ENV_API_URL",
    "ENV_BOT_TOKEN",
    "ENV_BOT_USERNAME",
    "ENV_WEBHOOK_SECRET",
    "NAME",
    "SECRET_HEADER",
    "SPEC",
    "WEBHOOK_PATH",
    "BotApi",
    "TelegramChannel",
    "TelegramInbound",
    "channel_from_env",
    "check_target",
    "poll",
    "sending",
    "serve",
]
