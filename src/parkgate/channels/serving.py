"""How ``parkgate serve`` mounts channels: each registered channel
(:mod:`parkgate.channels.registry`) is switched on by its setting and hands back its
:class:`ServedChannel`.

A channel's declaration names ``serve(gateway, environ) -> ServedChannel``: it reads its
settings from ``environ`` (raising :class:`~parkgate.errors.InputError` naming a missing
or bad one), and returns the channel the deliverer runs jobs for and the inbound routes
the server mounts. It also names ``sending(environ) -> Channel``: the channel alone, from
only what sending needs, for ``parkgate deliver``, which runs jobs and serves no routes.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from parkgate.channels.base import Channel
from parkgate.channels.registry import ChannelSpec, registered
from parkgate.errors import SettingsError

if TYPE_CHECKING:
    from parkgate.gateway import Gateway


@dataclass(frozen=True)
class ServedChannel:
    """What a channel's ``serve`` returns: the channel and its inbound routes.

    ``routes`` are Starlette routes the server mounts (a platform's inbound events);
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
        The served channels, in the order registered.

    Raises:
        InputError: A switched-on channel's settings are missing or bad.
    """
    served: list[ServedChannel] = []
    for spec in _switched_on(environ):
        one: ServedChannel = spec.imported(spec.serve)(gateway, environ)
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
        The channels, in the order registered.

    Raises:
        InputError: A switched-on channel's sending settings are missing or bad.
    """
    channels: list[Channel] = []
    for spec in _switched_on(environ):
        channel: Channel = spec.imported(spec.sending)(environ)
        gateway.add_channel(channel)
        channels.append(channel)
    return channels


def _switched_on(environ: Mapping[str, str]) -> Iterator[ChannelSpec]:
    """The registered channels whose switch ``environ`` sets.

    Raises:
        SettingsError: A channel's required setting is set and its switch is not (half a
            configuration): the start stops, naming the switch.
    """
    for spec in registered():
        if environ.get(spec.switch, "").strip():
            yield spec
            continue
        given = [name for name in spec.required if environ.get(name, "").strip()]
        if given:
            raise SettingsError(f"{spec.title} needs {spec.switch} too: {given[0]} is set, and it is not")
