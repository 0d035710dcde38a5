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

A click acts only on the ask whose recorded Slack post is the message it came from, and
only through the action ids parkgate makes (``parkgate:option:N``, ``parkgate:menu``,
``parkgate:cancel``); any other click changes nothing. A click is acknowledged before
anything else is done, and every private line (a click on a closed ask, a file sent with
no text, a message too long to be an answer) is sent by :class:`Notices`, a thread and a
bounded queue of parkgate's own: Bolt runs listeners, lazy listeners too, on one small
executor (five threads in ``App``'s default), and a slow Web API holding them would leave
the next click unacknowledged past Slack's 3 seconds.
"""

from __future__ import annotations

import json
import logging
import queue
import re
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from slack_bolt import Ack, App, BoltResponse

from parkgate.channels.slack.blocks import (
    ACTION_PREFIX,
    ACTION_TEXT,
    BLOCK_PREFIX,
    MAX_OPTION_BUTTONS,
    OPTION_ACTION,
    already_closed_line,
    escape,
    unescape,
)
from parkgate.channels.slack.channel import SlackChannel, thread_key
from parkgate.channels.slack.phrases import FILE_NOT_READ, NOT_THIS_MESSAGE
from parkgate.channels.slack.spec import NAME
from parkgate.core import phrases as P
from parkgate.core.kinds import ReplyKind
from parkgate.errors import ParkgateError
from parkgate.gateway.checks import MAX_MESSAGE_CHARS
from parkgate.store.channel_tables import ChannelPost

if TYPE_CHECKING:
    from parkgate.gateway import Gateway

log = logging.getLogger("parkgate.channels")

#: An option button's ``action_id``, exactly as :func:`~parkgate.channels.slack.blocks.ask_blocks` makes it.
OPTION_ACTION_ID = re.compile(re.escape(OPTION_ACTION) + r"([1-9][0-9]?)")
#: Message subtypes that are a person's reply: a plain one, one also sent to the channel, one with files.
REPLY_SUBTYPES = frozenset({None, "thread_broadcast", "file_share"})
#: Private lines waiting for Slack beyond this many are dropped (each is a courtesy: nothing changed).
NOTICE_QUEUE = 200


class Notices:
    """Private lines (``chat.postEphemeral``) sent in order by one worker thread of their
    own, off Bolt's listener threads: a slow Web API holds this thread, never a listener.

    Args:
        channel: The Slack channel that sends them.
        limit: How many lines may wait; one more is dropped, and logged.
    """

    def __init__(self, channel: SlackChannel, limit: int = NOTICE_QUEUE) -> None:
        self.channel = channel
        self._waiting: queue.Queue[tuple[dict[str, Any], str, str]] = queue.Queue(limit)
        self._lock = threading.Lock()
        self._worker: threading.Thread | None = None

    def send(self, location: Mapping[str, Any], user: str, text: str) -> None:
        """Queue ``text`` (Slack text, escaped) for ``user`` alone, in the thread at ``location``."""
        try:
            self._waiting.put_nowait((dict(location), user, text))
        except queue.Full:
            log.warning("a private line to %s was dropped: %d are waiting for Slack", user, self._waiting.maxsize)
            return
        with self._lock:
            if self._worker is None:
                self._worker = threading.Thread(target=self._run, name="parkgate-slack-notices", daemon=True)
                self._worker.start()

    def _run(self) -> None:
        while True:
            location, user, text = self._waiting.get()
            try:
                self.channel.notify(location, user, text)
            except Exception as error:  # a courtesy line: what was clicked or sent changed nothing
                log.warning("could not send %s a private line: %s", user, error)


@dataclass(frozen=True, slots=True)
class Click:
    """A click on one of parkgate's buttons, as parsed from Slack's ``block_actions`` payload."""

    ask_id: str
    #: What the click says to the gateway: an option's number, ``/menu`` or ``/cancel``.
    text: str
    #: The option's number, for an option's button.
    option: int | None
    user: str
    trigger_id: str | None
    #: The message the button is on: its channel, its ts, and its thread's ts if it is in one.
    channel: str
    message_ts: str
    thread_ts: str | None

    @property
    def where(self) -> dict[str, str]:
        """The clicked message's thread, where a private line to the clicker goes."""
        return {"channel": self.channel, "ts": self.thread_ts or self.message_ts}


def parse_click(body: Mapping[str, Any], action: Mapping[str, Any]) -> Click | None:
    """``action`` as a click on a button parkgate made, or ``None``: an action id that is not
    exactly one parkgate makes, a ``block_id`` that is not the ask's, or no message, user or
    ask id of the right type."""
    action_id, ask_id, block_id = action.get("action_id"), action.get("value"), action.get("block_id")
    if not (isinstance(action_id, str) and isinstance(ask_id, str) and ask_id and block_id == BLOCK_PREFIX + ask_id):
        return None
    option_id = OPTION_ACTION_ID.fullmatch(action_id)
    option = int(option_id.group(1)) if option_id else None
    text = str(option) if option is not None else ACTION_TEXT.get(action_id)
    if text is None or (option is not None and option > MAX_OPTION_BUTTONS):
        return None
    user, container, message = body.get("user"), body.get("container"), body.get("message")
    user_id = user.get("id") if isinstance(user, dict) else None
    if not isinstance(user_id, str) or not isinstance(container, dict) or container.get("type") != "message":
        return None
    channel, message_ts = container.get("channel_id"), container.get("message_ts")
    if not (isinstance(channel, str) and isinstance(message_ts, str)):
        return None
    thread_ts = message.get("thread_ts") if isinstance(message, dict) else None
    trigger = body.get("trigger_id")
    return Click(
        ask_id,
        text,
        option,
        user_id,
        trigger if isinstance(trigger, str) else None,
        channel,
        message_ts,
        thread_ts if isinstance(thread_ts, str) else None,
    )


def posted_at(post: ChannelPost | None, channel: str, ts: str) -> bool:
    """Whether ``post`` is the Slack message ``ts`` in ``channel``, as recorded when it was posted.

    An ask whose post was sent again after a call that left no record
    (:attr:`~parkgate.store.channel_tables.ChannelPost.unrecorded_sends`) may have an earlier
    message in the channel it was posted to: a click there is the ask's own."""
    if post is None or post.channel != NAME:
        return False
    if post.location is not None:
        location = json.loads(post.location)
        if isinstance(location, dict) and location.get("channel") == channel and location.get("ts") == ts:
            return True
    return post.unrecorded_sends and json.loads(post.target).get("channel") == channel


class SlackEvents:
    """Turns Slack's events and clicks into gateway calls.

    Args:
        gateway: The gateway whose asks were posted to Slack.
        channel: The Slack channel that sends the private lines (:class:`Notices`).
    """

    def __init__(self, gateway: Gateway, channel: SlackChannel) -> None:
        self.gateway = gateway
        self.channel = channel
        self.notices = Notices(channel)

    def on_click(self, ack: Ack, body: dict[str, Any], action: dict[str, Any]) -> None:
        """A button of a posted ask: an option (its number), Show options (``/menu``) or
        Cancel (``/cancel``), acknowledged at once; the gateway call is one transaction, and
        any private line is queued (:class:`Notices`)."""
        ack()
        click = parse_click(body, action)
        if click is None:
            log.warning("a Slack click that is not on a button parkgate made was ignored")
            return
        self.channel.names.saw_handle(click.user, body["user"].get("username"))
        try:
            self._click(click)
        except ParkgateError as error:  # an unknown ask, bad input: nothing changes
            log.warning("a Slack click on ask %s was refused: %s", click.ask_id[:80], error)

    def _click(self, click: Click) -> None:
        if not posted_at(self.gateway.channel_post(click.ask_id), click.channel, click.message_ts):
            self.notices.send(click.where, click.user, self._message_stands(click))
            return
        ask = self.gateway.get(click.ask_id)
        if click.option is not None and click.option > len(ask.options):
            log.warning("a Slack click on ask %s names option %d, which it does not have", ask.id, click.option)
            return
        reply = self.gateway.handle_in_channel(
            ask.conversation_id, click.text, click.trigger_id, click.user, ask_id=ask.id
        )
        if reply.kind in (ReplyKind.LATE, ReplyKind.PASS):  # the ask closed: the press was late, and logged so
            self.notices.send(click.where, click.user, already_closed_line(self.gateway.get(ask.id)))

    def _message_stands(self, click: Click) -> str:
        """What a click naming an ask not posted on its message answers: how the message's own
        ask ended, when it has one that closed; else that the button changed nothing."""
        found = self.gateway.ask_in_thread(NAME, thread_key(click.channel, click.thread_ts or click.message_ts))
        if found is not None and posted_at(self.gateway.channel_post(found[0]), click.channel, click.message_ts):
            own = self.gateway.get(found[0])
            if not own.is_open:
                # A press on its message is late for it (what the button named is another ask's).
                return already_closed_line(self.gateway.record_late(own.id, click.user, NAME))
        return escape(NOT_THIS_MESSAGE)

    def on_message(self, body: dict[str, Any], next: Callable[[], None]) -> BoltResponse | None:
        """A global middleware: a person's message in a thread where one ask is open goes to
        that ask; where several are, to none (the person is told privately); anything else
        (and a ``pass``) goes on to the app's listeners.

        A file with no text, and a message longer than an answer may be, are refused with
        a private line to the person while the ask is open; either way Slack gets a 200, so
        it does not send the event again."""
        event = body.get("event") if body.get("type") == "event_callback" else None
        open_here = self._thread_asks(event) if isinstance(event, dict) else []
        if not open_here or not isinstance(event, dict):
            next()
            return None
        user, where = str(event["user"]), {"channel": str(event["channel"]), "ts": str(event["thread_ts"])}
        if len(open_here) > 1:
            self.notices.send(where, user, escape(P.CHANNEL_REPLY_TO_THE_QUESTION))
            return BoltResponse(status=200, body="")
        ask_id, conversation_id = open_here[0]
        raw = event.get("text")
        text = unescape(raw) if isinstance(raw, str) else ""
        if not text.strip() and event.get("files"):
            return self._refuse(ask_id, where, user, FILE_NOT_READ, next)
        if len(text) > MAX_MESSAGE_CHARS:
            line = P.CHANNEL_MESSAGE_TOO_LONG.format(count=len(text), limit=MAX_MESSAGE_CHARS)
            return self._refuse(ask_id, where, user, line, next)
        try:
            reply = self.gateway.handle_in_channel(conversation_id, text, body.get("event_id"), user, ask_id=ask_id)
        except ParkgateError as error:  # text no ask takes (a NUL character): Slack's retry would fare the same
            log.warning("a Slack message for ask %s was refused: %s", ask_id, error)
            return BoltResponse(status=200, body="")
        if reply.kind is ReplyKind.PASS:
            next()
            return None
        if reply.kind is ReplyKind.LATE:  # the ask closed as this reply found it past its TTL: told so
            self.notices.send(where, user, already_closed_line(self.gateway.get(ask_id)))
        return BoltResponse(status=200, body="")

    def _refuse(
        self, ask_id: str, where: Mapping[str, str], user: str, line: str, next: Callable[[], None]
    ) -> BoltResponse | None:
        """A message the thread's ask does not take: the person is told while it is open;
        once it closed, the message goes on to the app's listeners like any other."""
        if not self.gateway.get(ask_id).is_open:
            next()
            return None
        self.notices.send(where, user, escape(line))
        return BoltResponse(status=200, body="")

    def _thread_asks(self, event: dict[str, Any]) -> list[tuple[str, str]]:
        """The open asks (up to two, the latest first) posted in the thread of a person's
        message (a plain reply, one also sent to the channel, or one with files): one takes
        it; more than one leave it to none of them (a Slack thread has no reply-to to say
        which one it answers)."""
        subtype = event.get("subtype")
        if event.get("type") != "message" or event.get("bot_id"):
            return []
        if not (subtype is None or isinstance(subtype, str)) or subtype not in REPLY_SUBTYPES:
            return []
        channel, thread_ts, user = event.get("channel"), event.get("thread_ts"), event.get("user")
        if not (isinstance(channel, str) and isinstance(thread_ts, str) and isinstance(user, str)):
            return []
        return self.gateway.open_asks_in(NAME, thread_key(channel, thread_ts))


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
