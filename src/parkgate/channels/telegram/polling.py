"""Long polling: the updates of a bot with no public URL, read with ``getUpdates``.

For development behind no public URL (``parkgate telegram --poll``). Each update is
handed to the same handler the webhook uses; the next call's ``offset`` confirms the
updates handled so far, so Telegram drops them. A handler that fails is logged and its
update confirmed all the same: one bad update never stalls the bot.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from parkgate.channels.telegram.api import CALL_TIMEOUT, POLL_SECONDS, BotApi
from parkgate.errors import ChannelJobFailed

log = logging.getLogger("parkgate.telegram")

#: The updates a parkgate bot reads.
ALLOWED_UPDATES = ("message", "callback_query")
#: The pause after a failed ``getUpdates`` before the next, in seconds.
RETRY_SECONDS = 2.0


def poll(
    api: BotApi,
    handle: Callable[[dict[str, Any]], object],
    *,
    stop: threading.Event,
    poll_seconds: int = POLL_SECONDS,
    retry_seconds: float = RETRY_SECONDS,
) -> int:
    """Hand every update to ``handle`` until ``stop`` is set; return how many were handled.

    Args:
        api: The bot's Bot API client.
        handle: Called with each update's JSON object, one at a time, in order.
        stop: Set it to end the loop (after the call in flight).
        poll_seconds: How long one ``getUpdates`` waits for an update.
        retry_seconds: The pause after a failed ``getUpdates``.

    Returns:
        How many updates were handed to ``handle``.
    """
    offset = 0
    handled = 0
    while not stop.is_set():
        params = {"offset": offset, "timeout": poll_seconds, "allowed_updates": list(ALLOWED_UPDATES)}
        try:
            updates = api.call("getUpdates", params, timeout=poll_seconds + CALL_TIMEOUT)
        except (ConnectionError, ChannelJobFailed) as error:
            log.warning("%s", error)
            stop.wait(retry_seconds)
            continue
        for update in updates or []:
            offset = max(offset, int(update["update_id"]) + 1)
            try:
                handle(update)
            except Exception:  # one bad update never stalls the bot: logged, and confirmed
                log.exception("update %s was not handled", update.get("update_id"))
            handled += 1
    return handled
