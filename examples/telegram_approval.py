"""A deploy approval in Telegram, by long polling (no public URL needed): parkgate posts the
question with a button per option, Cancel and Show options, takes the press (or a typed
reply, ``/cancel@YourBot`` included), and edits the message when it closes: answered,
dropped, or expired.

Run it (the bot is made with BotFather as docs/channels/telegram.md says, and added to
the chat; a group's id is negative)::

    export PARKGATE_TELEGRAM_BOT_TOKEN=123456:ABC...
    python examples/telegram_approval.py -1001234567890

It prints how the ask closed. Without Telegram, tests/channels/test_telegram_example.py
runs the same code against a local stand-in of the Bot API (``PARKGATE_TELEGRAM_API_URL``).
"""

from __future__ import annotations

import os
import sys
import threading

from parkgate import Ask, ChannelTarget, Gateway
from parkgate.channels.deliver import ChannelDeliverer
from parkgate.channels.telegram import BotApi, TelegramChannel, TelegramInbound, poll

#: How long the approval stays open before it expires (and the message says so).
TTL_SECONDS = 15 * 60


def start_bot(gateway: Gateway, token: str, api_root: str, stop: threading.Event) -> threading.Thread:
    """Add the Telegram channel to ``gateway`` and read the bot's updates in a thread until ``stop``."""
    channel = TelegramChannel(BotApi(token, api_root))
    gateway.add_channel(channel)  # the gateway's deliverer posts, edits and replies through it
    inbound = TelegramInbound(gateway, channel)
    thread = threading.Thread(
        target=poll, args=(channel.api, inbound.handle_polled), kwargs={"stop": stop}, daemon=True
    )
    thread.start()
    return thread


def request_approval(gateway: Gateway, chat_id: int, timeout: float = TTL_SECONDS + 5) -> Ask:
    """Post the approval to ``chat_id`` and wait until it closes (answered, cancelled or expired)."""
    asked = gateway.ask(
        f"deploy-approval-{chat_id}",
        "Deploy build 1042 to production?",
        ["Deploy", "Hold"],
        ttl=TTL_SECONDS,
        replace=True,
        post_to=ChannelTarget("telegram", {"chat_id": chat_id}),
    )
    assert asked.ask_id is not None
    return gateway.wait(asked.ask_id, timeout)


def main() -> None:
    chat_id = int(sys.argv[1] if len(sys.argv) > 1 else os.environ["TELEGRAM_CHAT_ID"])
    token = os.environ["PARKGATE_TELEGRAM_BOT_TOKEN"]
    api_root = os.environ.get("PARKGATE_TELEGRAM_API_URL", "https://api.telegram.org")
    stop = threading.Event()
    # deliver=True: a deliverer thread posts the ask, edits it on close, and expires it on time.
    with Gateway(os.environ.get("PARKGATE_DB", "sqlite:///telegram-approvals.db"), deliver=True) as gateway:
        start_bot(gateway, token, api_root, stop)
        try:
            ask = request_approval(gateway, chat_id)
            who = ask.answered_by or ask.closed_by or "nobody"
            print(f"{ask.status.value}: {ask.answer or 'nothing ran'} (by {who})")
            # Before leaving, run the jobs still queued (the close's edit of the message);
            # left queued, they would run at the next start, as they are kept in the database.
            ChannelDeliverer(gateway.store, gateway.clock, gateway.channels).run_due()
        finally:
            stop.set()


if __name__ == "__main__":
    main()
