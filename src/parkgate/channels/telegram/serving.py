"""``POST /telegram/webhook`` in ``parkgate serve``: Telegram's updates, checked against the
webhook's secret before anything is read or written, then handed to the gateway on a
worker thread.

Telegram sends the secret given to ``setWebhook`` (``secret_token``) in the
``X-Telegram-Bot-Api-Secret-Token`` header of every update. A missing or wrong one is a
401; a body that is not an update is a 400; both change nothing. A button press is
answered in the response itself (an ``answerCallbackQuery`` call, which Telegram makes),
so the webhook never waits on the Bot API.

Nor does it call the Bot API to read ``/cancel@YourBot``: the bot's username is
``PARKGATE_TELEGRAM_BOT_USERNAME``, or asked of the Bot API (``getMe``) once when the
channel is served, off the request path, or learnt from the first message the bot sends.
A Bot API that fails ``getMe`` leaves it unknown (logged), and a webhook still answers 200.
"""

from __future__ import annotations

import hmac
import json
import re
import threading
from collections.abc import Mapping
from typing import TYPE_CHECKING

import anyio
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from parkgate.channels.serving import ServedChannel
from parkgate.channels.telegram.api import DEFAULT_ROOT, BotApi
from parkgate.channels.telegram.channel import TelegramChannel
from parkgate.channels.telegram.inbound import TelegramInbound
from parkgate.channels.telegram.spec import ENV_API_URL, ENV_BOT_TOKEN, ENV_BOT_USERNAME, ENV_WEBHOOK_SECRET
from parkgate.errors import BadRequest, InputError, SettingsError, Unauthorized

if TYPE_CHECKING:
    from parkgate.gateway import Gateway

#: Where Telegram sends updates (the URL given to ``setWebhook``).
WEBHOOK_PATH = "/telegram/webhook"
#: The header Telegram sends the webhook's ``secret_token`` in.
SECRET_HEADER = "X-Telegram-Bot-Api-Secret-Token"
#: What ``setWebhook`` takes as a ``secret_token``: 1 to 256 of ``A-Z a-z 0-9 _ -``.
_SECRET = re.compile(r"[A-Za-z0-9_-]{1,256}")
#: A bot's username, as Telegram allows them (``@`` optional).
_USERNAME = re.compile(r"@?[A-Za-z0-9_]{3,64}")


def channel_from_env(environ: Mapping[str, str]) -> TelegramChannel:
    """The Telegram channel ``PARKGATE_TELEGRAM_BOT_TOKEN``, ``PARKGATE_TELEGRAM_API_URL`` and
    (optional) ``PARKGATE_TELEGRAM_BOT_USERNAME`` name.

    Raises:
        SettingsError: The bot token is missing, or the username is not one.
    """
    token = environ.get(ENV_BOT_TOKEN, "").strip()
    if not token:
        raise SettingsError(f"Telegram needs {ENV_BOT_TOKEN}")
    username = environ.get(ENV_BOT_USERNAME, "").strip() or None
    if username is not None and _USERNAME.fullmatch(username) is None:
        raise SettingsError(f"{ENV_BOT_USERNAME} must be the bot's username, such as YourBot (A-Z, a-z, 0-9 and _)")
    return TelegramChannel(BotApi(token, environ.get(ENV_API_URL, "").strip() or DEFAULT_ROOT), username)


#: The channel alone, for sending (``parkgate deliver``): the bot token is all it needs.
sending = channel_from_env


def webhook_secret(environ: Mapping[str, str]) -> str:
    """The webhook's secret from ``PARKGATE_TELEGRAM_WEBHOOK_SECRET``.

    Raises:
        SettingsError: It is missing, or not a secret ``setWebhook`` takes.
    """
    secret = environ.get(ENV_WEBHOOK_SECRET, "").strip()
    if not secret:
        raise SettingsError(f"Telegram's webhook needs {ENV_WEBHOOK_SECRET}: the secret_token given to setWebhook")
    if _SECRET.fullmatch(secret) is None:
        raise SettingsError(f"{ENV_WEBHOOK_SECRET} must be 1 to 256 of A-Z, a-z, 0-9, _ and - (as setWebhook takes)")
    return secret


class TelegramWebhook:
    """The ``POST /telegram/webhook`` route: check the secret, read the update, hand it over."""

    def __init__(self, inbound: TelegramInbound, secret: str) -> None:
        self.inbound = inbound
        self._secret = secret.encode()

    async def receive(self, request: Request) -> Response:
        """Answer one webhook request: 401 without the secret, 400 for a body that is not an update."""
        given = request.headers.get(SECRET_HEADER, "").encode("utf-8", "replace")
        if not hmac.compare_digest(given, self._secret):
            detail = f"the {SECRET_HEADER} header is missing or is not this webhook's secret"
            return JSONResponse(
                {"error": Unauthorized.wire_code, "detail": detail}, status_code=Unauthorized.http_status
            )
        try:
            payload = json.loads(await request.body())
            answer = await anyio.to_thread.run_sync(self.inbound.handle, payload)
        except (ValueError, InputError) as error:  # JSON that does not parse, or is not an update
            detail = f"not a Telegram update: {error}"
            return JSONResponse({"error": BadRequest.wire_code, "detail": detail}, status_code=BadRequest.http_status)
        return JSONResponse(answer) if answer is not None else Response(status_code=200)


def serve(gateway: Gateway, environ: Mapping[str, str]) -> ServedChannel:
    """The Telegram channel and its webhook route, from ``PARKGATE_TELEGRAM_*``.

    Args:
        gateway: The gateway the asks are parked in.
        environ: The environment: the bot token, the webhook's secret, the Bot API's root.

    Returns:
        The channel and ``POST /telegram/webhook``.

    Raises:
        SettingsError: The bot token or the webhook's secret is missing or bad.
    """
    secret = webhook_secret(environ)
    channel = channel_from_env(environ)
    if channel.bot_username is None:  # asked once, off the request path: a webhook never waits on getMe
        threading.Thread(target=channel.learn_username, name="parkgate-telegram-getme", daemon=True).start()
    endpoint = TelegramWebhook(TelegramInbound(gateway, channel), secret)
    route = Route(WEBHOOK_PATH, endpoint.receive, methods=["POST"])
    return ServedChannel(channel, [route], frozenset({WEBHOOK_PATH}))
