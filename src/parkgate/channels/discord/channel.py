"""The Discord channel's outbound side: its jobs as REST calls. An ask is posted as a
message with its buttons, edited when it closes (its buttons removed, who closed it
named), and its thread lines (a retry, a re-shown question, a vote, a reminder, an
escalation) go in a thread started from its message.

Each method runs as a job of parkgate's durable channel queue, so a Discord outage
delays the message and loses nothing (:mod:`~parkgate.channels.discord.api` says which
answer retries, waits or gives up).
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

from parkgate.channels.base import ChannelReply, Posted, SeenNames
from parkgate.channels.discord.api import DiscordApi
from parkgate.channels.discord.models import DiscordTarget
from parkgate.channels.discord.spec import NAME
from parkgate.channels.discord.texts import (
    MAX_CONTENT_CHARS,
    allowed_mentions,
    check_fits,
    closed_text,
    components,
    post_text,
    question_text,
    thread_line,
    thread_name,
)
from parkgate.core.kinds import EventType, ReplyKind
from parkgate.core.model import Ask
from parkgate.errors import ChannelJobFailed, InputError

log = logging.getLogger("parkgate.discord")

#: Discord's code for "A thread has already been created for this message".
THREAD_EXISTS = 160004
#: Minutes of silence before Discord archives an ask's thread (a day).
THREAD_ARCHIVE_MINUTES = 1440
#: The lines that ping the people they name (:mod:`parkgate.channels.reminders`): a
#: reminder its responders, an escalation the people it added.
PINGING = frozenset({EventType.REMINDER, EventType.ESCALATED})
#: The threads this process has started or found, kept so a reply makes one call (the latest first out).
THREADS_KEPT = 4096


def check_target(where: Mapping[str, Any]) -> str:
    """A ``discord`` target's channel id: ``{"channel_id": "123..."}``.

    Raises:
        InputError: It is not one (another key, or a channel id that is not a Discord id).
    """
    unknown = sorted(set(where) - {"channel_id"})
    if unknown:
        raise InputError(f"discord takes channel_id, not {unknown[0]!r}")
    try:
        return DiscordTarget.model_validate(dict(where), strict=True).channel_id
    except ValueError:
        raise InputError("discord.channel_id must be a Discord channel id: digits, as a string") from None


def thread_key(channel_id: str, message_id: str) -> str:
    """The key of an ask's message: ``{channel id}/{message id}``."""
    return f"{channel_id}/{message_id}"


class DiscordChannel:
    """Parkgate's asks in Discord channels, through one bot.

    Args:
        api: The bot's REST client.
    """

    name = NAME

    def __init__(self, api: DiscordApi) -> None:
        self.api = api
        self._threads: OrderedDict[str, str] = OrderedDict()
        self._lock = threading.Lock()
        #: The ``@username`` of each person whose press this process has read.
        self.names = SeenNames()

    def known_names(self) -> dict[str, str]:
        """The ``@username`` of each person whose press this process has read
        (:class:`~parkgate.channels.base.KnowsNames`)."""
        return self.names.handles()

    def check_post(self, ask: Ask, where: Mapping[str, Any]) -> None:
        """The park-time check: ``where`` is a Discord target and the question fits a message.

        Raises:
            InputError: The target is bad or the question too long; nothing is parked.
        """
        check_target(where)
        check_fits(ask)

    def post(self, ask: Ask, target: Mapping[str, Any]) -> Posted:
        """Create the ask's message: its question, whom it is for (pinged), how many must
        agree and until when, and its buttons (Create Message).

        Returns:
            ``{"channel_id", "message_id"}``, and the message's thread key.
        """
        try:
            channel_id = check_target(target)
        except InputError as error:  # a target no retry can make usable
            raise ChannelJobFailed(str(error)) from None
        question = question_text(ask)
        if len(question) > MAX_CONTENT_CHARS:  # parked where the park could not check it (a workflow's later phase)
            raise ChannelJobFailed(f"the question is {len(question)} characters, over Discord's {MAX_CONTENT_CHARS}")
        body = {
            "content": post_text(ask),
            "components": components(ask),
            "allowed_mentions": allowed_mentions(ask.responders),
        }
        message = self.api.call("POST", f"/channels/{channel_id}/messages", body)
        message_id = str(message["id"])
        return Posted({"channel_id": channel_id, "message_id": message_id}, thread_key(channel_id, message_id))

    def closed(self, ask: Ask, location: Mapping[str, Any]) -> None:
        """Edit the ask's message to its question and how it ended, naming who closed it; its buttons go."""
        body = {"content": closed_text(ask), "components": [], "allowed_mentions": allowed_mentions()}
        self.api.call("PATCH", f"/channels/{location['channel_id']}/messages/{location['message_id']}", body)

    def reply(self, ask: Ask, location: Mapping[str, Any], reply: ChannelReply) -> None:
        """Post ``reply`` in the thread of the ask's message (started by the first one).

        ``not_yours`` goes to its sender alone: the interaction that caused it was answered
        privately when it came (Discord lets a bot whisper only in answer to an interaction),
        so nothing is posted here. A reminder pings the responders it names, an
        escalation the people it adds (:data:`PINGING`); no other line pings anyone.
        """
        if reply.kind is ReplyKind.NOT_YOURS:
            return
        named = reply.names if reply.kind in PINGING else ()
        body = {"content": thread_line(ask, reply), "allowed_mentions": allowed_mentions(named)}
        thread = self._thread_of(ask, location)
        if thread is None:  # no thread can be started there: a reply to the message, in its channel
            body["message_reference"] = {"message_id": location["message_id"], "fail_if_not_exists": False}
            self.api.call("POST", f"/channels/{location['channel_id']}/messages", body)
            return
        self.api.call("POST", f"/channels/{thread}/messages", body)

    def _thread_of(self, ask: Ask, location: Mapping[str, Any]) -> str | None:
        """The id of the thread started from the ask's message, started now if need be;
        ``None`` where Discord starts none (a message in a thread, a missing permission).

        A thread started from a message has the message's id, so one Discord says exists
        already (started by an earlier job, or another process) is that id.
        """
        message_id = str(location["message_id"])
        with self._lock:
            known = self._threads.get(message_id)
        if known is not None:
            return known
        path = f"/channels/{location['channel_id']}/messages/{message_id}/threads"
        body = {"name": thread_name(ask), "auto_archive_duration": THREAD_ARCHIVE_MINUTES}
        try:
            started = self.api.call("POST", path, body, tolerate=frozenset({THREAD_EXISTS}))
        except ChannelJobFailed as refused:
            log.warning("no thread for ask %s's message (%s): its lines go in its channel", ask.id, refused)
            return None
        thread = message_id if started is None else str(started["id"])
        with self._lock:
            self._threads[message_id] = thread
            while len(self._threads) > THREADS_KEPT:
                self._threads.popitem(last=False)
        return thread
