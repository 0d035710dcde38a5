"""Telegram as parkgate knows it: the channel's one declaration (:data:`SPEC`, registered
on import), its name and its settings. Importing it imports no Telegram library."""

from __future__ import annotations

from parkgate.channels.registry import ChannelSpec, register

#: The channel's name: the key of ``post_to`` targets and of the ask JSON's field.
NAME = "telegram"
ENV_BOT_TOKEN = "PARKGATE_TELEGRAM_BOT_TOKEN"
ENV_WEBHOOK_SECRET = "PARKGATE_TELEGRAM_WEBHOOK_SECRET"
ENV_API_URL = "PARKGATE_TELEGRAM_API_URL"
ENV_BOT_USERNAME = "PARKGATE_TELEGRAM_BOT_USERNAME"

SPEC = register(
    ChannelSpec(
        name=NAME,
        title="Telegram",
        settings={
            ENV_BOT_TOKEN: "the bot's token from @BotFather: set, parkgate serve serves Telegram",
            ENV_WEBHOOK_SECRET: "the secret_token given to setWebhook, checked on every update",
            ENV_API_URL: "the Bot API server's root (default https://api.telegram.org; a stand-in in tests)",
            ENV_BOT_USERNAME: "the bot's username, for /cancel@YourBot (else asked with getMe)",
        },
        switch=ENV_BOT_TOKEN,
        target="parkgate.channels.telegram.models:TelegramTarget",
        target_id="chat_id",
        location="parkgate.channels.telegram.models:TelegramPost",
        serve="parkgate.channels.telegram.serving:serve",
        sending="parkgate.channels.telegram.serving:sending",
        commands=("parkgate.channels.telegram.cli:telegram",),
        extra="telegram",
        package="parkgate.channels.telegram",
    )
)
