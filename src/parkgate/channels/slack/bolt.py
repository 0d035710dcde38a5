"""The Slack channel's inbound side, on ``slack-bolt``: a click on an ask's button and a
typed reply in its thread go through
:meth:`Gateway.handle_in_channel <parkgate.Gateway.handle_in_channel>`, with the Slack user
id as ``sender`` and the event's id (``event_id``, or a click's ``trigger_id``) as
``message_id``, so Slack's retries apply once.

:func:`register` adds parkgate to any Bolt :class:`~slack_bolt.App`: a listener for its
buttons (``action_id`` ``parkgate:...``) and a global middleware that takes the messages
in threads where an ask is open. Everything else, and a message in such a thread once
nothing is parked there (``pass``), goes on to the app's own listeners. A thread where
more than one ask is open (asks posted into one thread) takes a message for none of
them: Slack has no reply-to inside a thread, so the person is told privately to answer
with the question's own message or buttons.
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
from parkgate.core import phrases as P
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
        """A global middleware: a person's message in a thread where one ask is open goes to
        that ask; where several are, to none (the person is told privately); anything else
        (and a ``pass``) goes on to the app's listeners."""
        event = body.get("event") if body.get("type") == "event_callback" else None
        open_here = self._thread_asks(event) if isinstance(event, dict) else []
        if not open_here or not isinstance(event, dict):
            next()
            return None
        if len(open_here) > 1:
            self._reply_to_the_question(event)
            return BoltResponse(status=200, body="")
        ask_id, conversation_id = open_here[0]
        reply = self.gateway.handle_in_channel(
            conversation_id, str(event.get("text", "")), body.get("event_id"), str(event["user"]), ask_id=ask_id
        )
        if reply.kind is ReplyKind.PASS:
            next()
            return None
        return BoltResponse(status=200, body="")

    def _thread_asks(self, event: dict[str, Any]) -> list[tuple[str, str]]:
        """The open asks (up to two, the latest first) posted in the thread of a person's
        plain message: one takes it; more than one leave it to none of them (a Slack thread
        has no reply-to to say which one it answers)."""
        if event.get("type") != "message" or event.get("subtype") or event.get("bot_id"):
            return []
        channel, thread_ts, user = event.get("channel"), event.get("thread_ts"), event.get("user")
        if not (isinstance(channel, str) and isinstance(thread_ts, str) and isinstance(user, str)):
            return []
        return self.gateway.open_asks_in(NAME, thread_key(channel, thread_ts))

    def _reply_to_the_question(self, event: dict[str, Any]) -> None:
        """Tell the sender alone that their message answered none of the asks open in its thread."""
        where = {"channel": str(event["channel"]), "ts": str(event["thread_ts"])}
        try:
            self.channel.notify(where, str(event["user"]), P.CHANNEL_REPLY_TO_THE_QUESTION)
        except Exception as error:  # a courtesy line: the message changed nothing either way
            log.warning("could not tell %s that their message answered no question: %s", event["user"], error)


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
