"""Discord: asks posted as messages with a button per option, Cancel and Show options (and
Reply, whose form takes typed text); presses and forms taken through Discord's HTTP
interactions, signed with Ed25519; every close shown by editing the message; reminders
and escalations in a thread started from it (optional extra ``parkgate[discord]``:
``pynacl``, which checks the signatures).

- :data:`SPEC`: the channel's declaration (:mod:`parkgate.channels.registry`), read
  without the extra.
- :class:`DiscordChannel` (outbound): the channel's jobs as REST calls (:class:`DiscordApi`).
- :class:`DiscordInteractions` (inbound): an interaction answered at once, acted on after.
- :func:`serve`: what ``parkgate serve`` mounts at ``POST /discord/interactions`` when
  ``PARKGATE_DISCORD_BOT_TOKEN`` and ``PARKGATE_DISCORD_PUBLIC_KEY`` are set
  (``PARKGATE_DISCORD_API_URL`` is the REST API's root, such as a stand-in).
- :func:`sending`: the channel alone from the bot token, for ``parkgate deliver``.

Importing the package imports its declaration alone; each other name is imported on
first use (:class:`~parkgate.errors.MissingExtra` when the extra is not installed).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from parkgate.channels.discord.spec import ENV_API_URL, ENV_BOT_TOKEN, ENV_PUBLIC_KEY, NAME, SPEC

if TYPE_CHECKING:
    from parkgate.channels.discord.api import DiscordApi
    from parkgate.channels.discord.channel import DiscordChannel
    from parkgate.channels.discord.interactions import DiscordInteractions
    from parkgate.channels.discord.serving import INTERACTIONS_PATH, sending, serve

#: Where each name imported on first use is.
_LAZY = {
    "DiscordApi": "parkgate.channels.discord.api:DiscordApi",
    "DiscordChannel": "parkgate.channels.discord.channel:DiscordChannel",
    "DiscordInteractions": "parkgate.channels.discord.interactions:DiscordInteractions",
    "INTERACTIONS_PATH": "parkgate.channels.discord.serving:INTERACTIONS_PATH",
    "sending": "parkgate.channels.discord.serving:sending",
    "serve": "parkgate.channels.discord.serving:serve",
}


#: A name of the package that needs its extra, imported on first use.
__getattr__ = SPEC.lazy(__name__, _LAZY)


__all__ = [
    "ENV_API_URL",
    "ENV_BOT_TOKEN",
    "ENV_PUBLIC_KEY",
    "INTERACTIONS_PATH",
    "NAME",
    "SPEC",
    "DiscordApi",
    "DiscordChannel",
    "DiscordInteractions",
    "sending",
    "serve",
]
