"""Discord as parkgate knows it: the channel's one declaration (:data:`SPEC`, registered on
import), its name and its settings. Importing it imports no Discord library."""

from __future__ import annotations

from parkgate.channels.registry import ChannelSpec, register

#: The channel's name: the key of its targets (``post_to``), jobs and ask JSON field.
NAME = "discord"
ENV_PUBLIC_KEY = "PARKGATE_DISCORD_PUBLIC_KEY"
ENV_BOT_TOKEN = "PARKGATE_DISCORD_BOT_TOKEN"
ENV_API_URL = "PARKGATE_DISCORD_API_URL"

SPEC = register(
    ChannelSpec(
        name=NAME,
        title="Discord",
        settings={
            ENV_BOT_TOKEN: "the bot's token (Developer Portal, Bot): set, parkgate serve serves Discord",
            ENV_PUBLIC_KEY: "the application's public key, which every interaction's Ed25519 signature is checked with",
            ENV_API_URL: "the REST API's root (default https://discord.com/api/v10; a stand-in or a proxy)",
        },
        switch=ENV_BOT_TOKEN,
        target="parkgate.channels.discord.models:DiscordTarget",
        target_id="channel_id",
        location="parkgate.channels.discord.models:DiscordPost",
        serve="parkgate.channels.discord.serving:serve",
        sending="parkgate.channels.discord.serving:sending",
        required=(ENV_PUBLIC_KEY,),
        extra="discord",
        package="parkgate.channels.discord",
    )
)
