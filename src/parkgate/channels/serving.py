"""How ``parkgate serve`` mounts channels: each channel module is switched on by an
environment variable and hands back its :class:`ServedChannel`.

A channel module (``parkgate.channels.slack``, ...) defines
``serve(gateway, environ) -> ServedChannel``: it reads its settings from ``environ``
(raising :class:`~parkgate.errors.InputError` naming a missing or bad one), and returns
the channel the deliverer runs jobs for and the routes the server mounts. It also
defines ``sending(environ) -> Channel``: the channel alone, from only what sending needs,
for ``parkgate deliver``, which runs jobs and serves no routes. A new channel is that
module and one line in :data:`SERVED`.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from types import ModuleType
from typing import TYPE_CHECKING, Any

from parkgate.channels.base import Channel

if TYPE_CHECKING:
    from parkgate.gateway import Gateway

#: Each served channel's module, and the environment variable whose presence switches it on.
SERVED: Mapping[str, str] = {
    "parkgate.channels.slack": "PARKGATE_SLACK_BOT_TOKEN",
    "parkgate.channels.telegram": "PARKGATE_TELEGRAM_BOT_TOKEN",
}


@dataclass(frozen=True)
class ServedChannel:
    """What a channel module's ``serve`` returns.

    ``routes`` are Starlette routes the server mounts (such as ``POST /slack/events``);
    they answer the platform, which signs its requests instead of sending a bearer token,
    so the server's guard leaves ``signed_paths`` to the route's own verification (no
    token, any body type) and keeps its host, cross-site and size checks.
    """

    channel: Channel
    routes: Sequence[Any] = ()
    signed_paths: frozenset[str] = field(default_factory=frozenset)


def served_channels(gateway: Gateway, environ: Mapping[str, str]) -> list[ServedChannel]:
    """The channels ``environ`` switches on, each added to ``gateway`` (its jobs then run
    in this process's deliverer).

    Args:
        gateway: The gateway the channels hand their events to.
        environ: The environment (``os.environ``) the channels read their settings from.

    Returns:
        The served channels, in :data:`SERVED`'s order.

    Raises:
        InputError: A switched-on channel's settings are missing or bad.
    """
    served: list[ServedChannel] = []
    for module in _switched_on(environ):
        one: ServedChannel = module.serve(gateway, environ)
        gateway.add_channel(one.channel)
        served.append(one)
    return served


def sending_channels(gateway: Gateway, environ: Mapping[str, str]) -> list[Channel]:
    """The channels ``environ`` switches on, for posting and updating only (what
    ``parkgate deliver`` runs): each added to ``gateway``, needing only what sending needs
    (a bot token; no signing or webhook secret, as no route is served).

    Args:
        gateway: The gateway whose channel jobs this process runs.
        environ: The environment (``os.environ``) the channels read their settings from.

    Returns:
        The channels, in :data:`SERVED`'s order.

    Raises:
        InputError: A switched-on channel's sending settings are missing or bad.
    """
    channels: list[Channel] = []
    for module in _switched_on(environ):
        channel: Channel = module.sending(environ)
        gateway.add_channel(channel)
        channels.append(channel)
    return channels


def _switched_on(environ: Mapping[str, str]) -> Iterator[ModuleType]:
    """The channel modules whose switch ``environ`` sets, imported."""
    for module_name, switch in SERVED.items():
        if environ.get(switch, "").strip():
            yield importlib.import_module(module_name)
