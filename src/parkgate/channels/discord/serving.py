"""``POST /discord/interactions`` in ``parkgate serve``: Discord's interactions, each
checked against the application's public key before anything is read or written, then
answered at once and acted on after (:mod:`~parkgate.channels.discord.interactions`).

Discord signs every interaction with Ed25519: ``X-Signature-Ed25519`` is the signature
(hex) of ``X-Signature-Timestamp`` followed by the raw body, checked with PyNaCl. A missing
or bad signature is a 401, with nothing read, and so is a signed timestamp more than
:data:`MAX_SKEW_SECONDS` from the server's clock (a captured request sent again later);
a body that is not an interaction is a 400.
The endpoint URL given in the Developer Portal is checked by Discord the same way: it
sends a PING (answered PONG) and a badly signed one it expects refused.
"""

from __future__ import annotations

import binascii
import json
from collections.abc import Mapping
from datetime import datetime
from typing import TYPE_CHECKING

from nacl.exceptions import BadSignatureError, CryptoError
from nacl.signing import VerifyKey
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from parkgate.channels.discord.api import DEFAULT_ROOT, DiscordApi
from parkgate.channels.discord.channel import DiscordChannel
from parkgate.channels.discord.interactions import DiscordInteractions
from parkgate.channels.discord.spec import ENV_API_URL, ENV_BOT_TOKEN, ENV_PUBLIC_KEY
from parkgate.channels.serving import ServedChannel
from parkgate.clock import Clock
from parkgate.errors import BadRequest, InputError, SettingsError, Unauthorized

if TYPE_CHECKING:
    from parkgate.gateway import Gateway

#: Where Discord sends interactions (the Interactions Endpoint URL is this on your server).
INTERACTIONS_PATH = "/discord/interactions"
SIGNATURE_HEADER = "X-Signature-Ed25519"
TIMESTAMP_HEADER = "X-Signature-Timestamp"
#: How far a signed timestamp (Unix seconds) may be from the server's clock, either way:
#: Discord sends each interaction at once, so an older one is a replay.
MAX_SKEW_SECONDS = 300


def sending(environ: Mapping[str, str]) -> DiscordChannel:
    """The channel alone, for sending (``parkgate deliver``): the bot token is all it needs.

    Raises:
        SettingsError: The bot token is missing.
    """
    token = environ.get(ENV_BOT_TOKEN, "").strip()
    if not token:
        raise SettingsError(f"Discord needs {ENV_BOT_TOKEN}")
    return DiscordChannel(DiscordApi(token, environ.get(ENV_API_URL, "").strip() or DEFAULT_ROOT))


def public_key(environ: Mapping[str, str]) -> VerifyKey:
    """The application's public key from ``PARKGATE_DISCORD_PUBLIC_KEY``.

    Raises:
        SettingsError: It is missing, or not 64 hex digits (an Ed25519 public key).
    """
    given = environ.get(ENV_PUBLIC_KEY, "").strip()
    if not given:
        raise SettingsError(f"Discord needs {ENV_PUBLIC_KEY}: the application's public key (Developer Portal)")
    try:
        raw = bytes.fromhex(given)
        if len(raw) != 32:
            raise ValueError(f"{len(raw)} bytes")
        return VerifyKey(raw)
    except ValueError:
        raise SettingsError(f"{ENV_PUBLIC_KEY} must be the application's public key: 64 hex digits") from None


def verified(key: VerifyKey, signature: str | None, timestamp: str | None, body: bytes) -> bool:
    """Whether ``signature`` (hex) signs ``timestamp`` followed by ``body`` with ``key``."""
    if not signature or not timestamp:
        return False
    try:
        key.verify(timestamp.encode() + body, binascii.unhexlify(signature))
    except (BadSignatureError, CryptoError, ValueError, binascii.Error, UnicodeEncodeError):
        return False
    return True


def timely(timestamp: str, now: datetime) -> bool:
    """Whether ``timestamp`` (Unix seconds, as signed) is within :data:`MAX_SKEW_SECONDS` of ``now``."""
    try:
        sent = int(timestamp)
    except ValueError:
        return False
    return abs(now.timestamp() - sent) <= MAX_SKEW_SECONDS


class InteractionsEndpoint:
    """The ``POST /discord/interactions`` route: check the signature and its age, read, answer."""

    def __init__(self, interactions: DiscordInteractions, key: VerifyKey, clock: Clock) -> None:
        self.interactions = interactions
        self.key = key
        self.clock = clock

    async def receive(self, request: Request) -> Response:
        """Answer one interaction: 401 unsigned or stale, 400 malformed, else its response at once."""
        body = await request.body()
        signatures, timestamps = request.headers.getlist(SIGNATURE_HEADER), request.headers.getlist(TIMESTAMP_HEADER)
        detail = None
        if len(signatures) != 1 or len(timestamps) != 1 or not verified(self.key, signatures[0], timestamps[0], body):
            detail = "the interaction is not signed with this application's key"
        elif not timely(timestamps[0], self.clock.now()):
            detail = f"the interaction's signed timestamp is more than {MAX_SKEW_SECONDS} s from this server's clock"
        if detail is not None:
            return JSONResponse(
                {"error": Unauthorized.wire_code, "detail": detail}, status_code=Unauthorized.http_status
            )
        try:
            payload = json.loads(body)
            if not isinstance(payload, dict):
                raise InputError("not a JSON object")
            answer = self.interactions.answer(payload)
        except (ValueError, InputError) as error:
            detail = f"not a Discord interaction: {error}"
            return JSONResponse({"error": BadRequest.wire_code, "detail": detail}, status_code=BadRequest.http_status)
        return JSONResponse(answer)


def serve(gateway: Gateway, environ: Mapping[str, str]) -> ServedChannel:
    """The Discord channel and its interactions route, from ``PARKGATE_DISCORD_*``.

    Args:
        gateway: The gateway the asks are parked in.
        environ: The environment: the bot token, the public key, the API's root.

    Returns:
        The channel and ``POST /discord/interactions``.

    Raises:
        SettingsError: The bot token or the public key is missing or bad.
    """
    key = public_key(environ)
    channel = sending(environ)
    endpoint = InteractionsEndpoint(DiscordInteractions(gateway, channel), key, gateway.clock)
    route = Route(INTERACTIONS_PATH, endpoint.receive, methods=["POST"])
    return ServedChannel(channel, [route], frozenset({INTERACTIONS_PATH}))
