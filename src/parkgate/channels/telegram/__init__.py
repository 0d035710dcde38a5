"""Telegram: asks posted as messages with an inline keyboard (a button per option, Cancel
and Show options); button presses and typed messages answered through the gateway; every
close shown by editing the message (optional extra ``parkgate[telegram]``:
``python-telegram-bot``, whose ``Update`` parsing reads every update).

- :class:`TelegramChannel` (outbound): the channel's jobs as Bot API calls
  (:class:`BotApi`, ``{root}/bot{token}/{method}``).
- :class:`TelegramInbound` (inbound): one update into the gateway.
- :func:`serve`: what ``parkgate serve`` mounts at ``POST /telegram/webhook`` when
  ``PARKGATE_TELEGRAM_BOT_TOKEN`` is set (with ``PARKGATE_TELEGRAM_WEBHOOK_SECRET``;
  ``PARKGATE_TELEGRAM_API_URL`` is the Bot API server's root, such as a stand-in;
  ``PARKGATE_TELEGRAM_BOT_USERNAME`` the bot's username, else asked with ``getMe``).
- :func:`sending`: the channel alone from the bot token, for ``parkgate deliver``.
- :func:`poll`: long polling with ``getUpdates`` (``parkgate telegram --poll``).
"""

from __future__ import annotations

from parkgate.errors import MissingExtra

try:
    import telegram  # noqa: F401
except ModuleNotFoundError as missing:  # pragma: no cover - the extra is installed in dev
    raise MissingExtra(__name__, missing, extra="telegram") from None

from parkgate.channels.telegram.api import BotApi
from parkgate.channels.telegram.channel import NAME, TelegramChannel, check_target
from parkgate.channels.telegram.inbound import TelegramInbound
from parkgate.channels.telegram.polling import poll
from parkgate.channels.telegram.serving import (
    ENV_API_URL,
    ENV_BOT_TOKEN,
    ENV_BOT_USERNAME,
    ENV_WEBHOOK_SECRET,
    SECRET_HEADER,
    WEBHOOK_PATH,
    channel_from_env,
    sending,
    serve,
)

__all__ = [
    "ENV_API_URL",
    "ENV_BOT_TOKEN",
    "ENV_BOT_USERNAME",
    "ENV_WEBHOOK_SECRET",
    "NAME",
    "SECRET_HEADER",
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
