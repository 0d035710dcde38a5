"""The Slack channel's inbound side, on ``slack-bolt``: a click on an ask's button and a
typed reply in its thread go through
:meth:`Gateway.handle_in_channel <parkgate.Gateway.handle_in_channel>`, with the Slack user
id as ``sender`` and the event's id (``event_id``, or a click's ``trigger_id``) as
``message_id``, so Slack's retries apply once.

:func:`register` adds parkgate to any Bolt :class:`~slack_bolt.App`: a listener for its
buttons (``action_id`` ``parkgate:...``) and a global middleware that takes the messages
in threads where an ask was posted. Everything else, and a message in such a thread once
nothing is parked there (``pass``), goes on to the app's own listeners.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from slack_bolt import Ack, App, BoltResponse

from parkgate.channels.slack.blocks import ACTION_PREFIX, ACTION_TEXT, OPTION_ACTION, already_closed_line
from parkgate.channels.slack.channel import NAME, SlackChannel, thread_key
from parkgate.core.kinds import ReplyKind
from parkgate.errors import ParkgateError

if TYPE_CHECKING:
    from parkgate.gateway import Gateway

log = logging.getLogger("parkgate.channels")


class SlackEvents:
    """Turns Slack's events and clicks into gateway calls.

    Args:
        gateway: The gateway whose asks were posted to Slack.
        channel: The Slack channel that tells a clicker privately that an ask already closed.
    """

    def __init__(self, gateway: Gateway, channel: SlackChannel) -> None:
        self.gateway = gateway
        self.channel = channel

    def on_click(self, ack: Ack, body: dict[str, Any], action: dict[str, Any]) -> None:
        """A button of a posted ask: an option (its number), Show options (``/menu``) or Cancel (``/cancel``)."""
        action_id, ask_id = str(action.get("action_id", "")), str(action.get("value", ""))
        user, trigger = body.get("user", {}).get("id"), body.get("trigger_id")
        option = action_id.startswith(OPTION_ACTION)
        text = action_id.removeprefix(OPTION_ACTION) if option else ACTION_TEXT.get(action_id)
        if text is None or not ask_id or not isinstance(user, str):
            ack()
            return
        try:
            ask = self.gateway.get(ask_id)
            reply = self.gateway.handle_in_channel(ask.conversation_id, text, trigger, user, ask_id=ask_id)
        except ParkgateError as error:  # an unknown ask, bad input: nothing changes
            ack()
            log.warning("a Slack click on ask %s was refused: %s", ask_id, error)
            return
        ack()  # within Slack's 3 seconds: the gateway call is one transaction
        if reply.kind is ReplyKind.PASS:
            self._already_closed(ask_id, user)

    def _already_closed(self, ask_id: str, user: str) -> None:
        """Tell ``user`` alone that the ask they clicked is closed, and how; nothing changes."""
        post = self.gateway.channel_post(ask_id)
        if post is None or post.location is None:
            return
        try:
            self.channel.notify(json.loads(post.location), user, already_closed_line(self.gateway.get(ask_id)))
        except Exception as error:  # a courtesy line: the click changed nothing either way
            log.warning("could not tell %s that ask %s is closed: %s", user, ask_id, error)

    def on_message(self, body: dict[str, Any], next: Callable[[], None]) -> BoltResponse | None:
        """A global middleware: a person's message in a thread where an ask was posted goes
        to that ask; anything else (and a ``pass``) goes on to the app's listeners."""
        event = body.get("event") if body.get("type") == "event_callback" else None
        found = self._thread_ask(event) if isinstance(event, dict) else None
        if found is None or not isinstance(event, dict):
            next()
            return None
        ask_id, conversation_id = found
        reply = self.gateway.handle_in_channel(
            conversation_id, str(event.get("text", "")), body.get("event_id"), str(event["user"]), ask_id=ask_id
        )
        if reply.kind is ReplyKind.PASS:
            next()
            return None
        return BoltResponse(status=200, body="")

    def _thread_ask(self, event: dict[str, Any]) -> tuple[str, str] | None:
        """The ask posted in the thread of a person's plain message, if any."""
        if event.get("type") != "message" or event.get("subtype") or event.get("bot_id"):
            return None
        channel, thread_ts, user = event.get("channel"), event.get("thread_ts"), event.get("user")
        if not (isinstance(channel, str) and isinstance(thread_ts, str) and isinstance(user, str)):
            return None
        return self.gateway.ask_in_thread(NAME, thread_key(channel, thread_ts))


def register(app: App, gateway: Gateway, channel: SlackChannel | None = None) -> SlackChannel:
    """Add parkgate to a Bolt app: its buttons and the replies in its asks' threads go to
    ``gateway``; the app's own listeners still get every other event, and every message
    in a thread where nothing is parked.

    The Slack channel is added to ``gateway`` too, so its deliverer
    (``Gateway(..., deliver=True)`` or ``parkgate deliver``) posts the asks parked with
    ``post_to=ChannelTarget("slack", {"channel": ...})`` and keeps them up to date.

    Args:
        app: The Bolt app (its client posts, unless ``channel`` is given).
        gateway: The gateway the asks are parked in.
        channel: The channel to post with; one on ``app.client`` when left out.

    Returns:
        The Slack channel added to ``gateway``.
    """
    slack = channel or SlackChannel(app.client)
    events = SlackEvents(gateway, slack)
    app.action(re.compile("^" + re.escape(ACTION_PREFIX)))(events.on_click)
    app.middleware(events.on_message)
    gateway.add_channel(slack)
    return slack
