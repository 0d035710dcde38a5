"""``parkgate telegram``: the Telegram bot without ``parkgate serve``: long polling for
development behind no public URL, and the ``setWebhook`` call for a served bot.

Both read the bot's settings from the environment, as ``serve`` does:
``PARKGATE_TELEGRAM_BOT_TOKEN``, ``PARKGATE_TELEGRAM_API_URL`` (the Bot API's root),
``PARKGATE_TELEGRAM_BOT_USERNAME`` (optional) and, for the webhook,
``PARKGATE_TELEGRAM_WEBHOOK_SECRET``. The ``parkgate`` command mounts it as the
channel's declaration lists it (:data:`~parkgate.channels.telegram.SPEC`'s ``commands``).
"""

from __future__ import annotations

import os
import threading
from typing import Any

import click

from parkgate.cli.stores import db_option, gateway_session, shown_url
from parkgate.errors import ChannelJobFailed, ParkgateError


@click.command()
@db_option
@click.option("--poll", is_flag=True, help="Read the bot's updates with getUpdates (long polling) until Ctrl-C.")
@click.option(
    "--set-webhook",
    "webhook_url",
    metavar="URL",
    help="Point the bot's webhook at URL (https://.../telegram/webhook) with PARKGATE_TELEGRAM_WEBHOOK_SECRET.",
)
def telegram(db_url: str, poll: bool, webhook_url: str | None) -> None:
    """Run the Telegram bot by long polling, or set its webhook for `parkgate serve`.

    --poll answers the bot's updates from this process, for development behind no public
    URL: asks posted with "telegram" are posted, pressed, typed to and edited on close
    as under `parkgate serve`, whose due reads and channel jobs this command runs too.
    Telegram refuses getUpdates while a webhook is set (deleteWebhook removes it).
    """
    from parkgate.channels.telegram.serving import channel_from_env, webhook_secret

    if poll == (webhook_url is not None):
        raise click.UsageError("give either --poll or --set-webhook URL")
    try:
        channel = channel_from_env(os.environ)
        if webhook_url is not None:
            _set_webhook(channel.api, webhook_url, webhook_secret(os.environ))
            return
    except ParkgateError as error:
        raise click.ClickException(str(error)) from None
    with gateway_session(db_url, surface="telegram") as gateway:
        _poll_until_stopped(gateway, channel, db_url)


def _set_webhook(api: Any, url: str, secret: str) -> None:
    """``setWebhook`` with the secret Telegram sends back in every update's header."""
    from parkgate.channels.telegram.polling import ALLOWED_UPDATES

    params = {"url": url, "secret_token": secret, "allowed_updates": list(ALLOWED_UPDATES)}
    try:
        api.call("setWebhook", params)
    except (ConnectionError, ChannelJobFailed) as error:
        raise click.ClickException(f"setWebhook failed: {error}") from None
    click.echo(f"webhook set: Telegram now sends the bot's updates to {url}")


def _poll_until_stopped(gateway: Any, channel: Any, db_url: str) -> None:
    """Poll with ``channel``'s bot into ``gateway``, its deliverer running, until Ctrl-C."""
    from parkgate.channels.telegram.inbound import TelegramInbound
    from parkgate.channels.telegram.polling import poll
    from parkgate.gateway.delivering import start_thread

    gateway.add_channel(channel)
    channel.learn_username()  # for /cancel@YourBot; a failure is logged, and polling goes on
    inbound = TelegramInbound(gateway, channel)
    deliverer = start_thread(gateway)
    click.echo(f"parkgate telegram: polling for the bot's updates into {shown_url(db_url)} (Ctrl-C stops)")
    try:
        poll(channel.api, inbound.handle_polled, stop=threading.Event())
    except KeyboardInterrupt:
        click.echo("parkgate telegram stopped")
    finally:
        deliverer.stop()
        channel.api.close()
