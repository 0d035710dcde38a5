"""Telegram updates into the gateway: a button press or a typed message becomes
:meth:`Gateway.handle_in_channel <parkgate.Gateway.handle_in_channel>`, with the Telegram
user id as ``sender`` and the update id as ``message_id`` (a redelivered update applies once).

A press is read against the ask its keyboard was posted for, never whatever is open in
the chat now; a press on a closed ask changes nothing, is logged as a ``late`` event and
answers "This question is already closed (answered by @alice at 14:02 UTC on 6 Dec
2026)." A typed message goes where :mod:`~parkgate.channels.telegram.routing` says. What
the gateway replies is posted by the channel's jobs; a press, a typed message that
answered none of several open asks, and a reply to a closed ask's message (late, logged
so, and told how and when the ask closed) are answered at once by
:meth:`TelegramInbound.handle`'s return value, a Bot API call (``answerCallbackQuery``,
``sendMessage``) the webhook sends back as its response, and the long poll makes.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from parkgate.channels.base import not_yours_reply
from parkgate.channels.jobs import POSTED_REPLIES
from parkgate.channels.lines import already_closed_line
from parkgate.channels.telegram.buttons import read_press
from parkgate.channels.telegram.channel import TelegramChannel
from parkgate.channels.telegram.commands import addressed_text
from parkgate.channels.telegram.routing import place_key, thread_key
from parkgate.channels.telegram.spec import NAME
from parkgate.channels.telegram.updates import ButtonPress, TypedMessage, read_update
from parkgate.core import phrases as P
from parkgate.core.kinds import ReplyKind
from parkgate.errors import ChannelJobFailed, UnknownAsk

if TYPE_CHECKING:
    from parkgate.gateway import Gateway

log = logging.getLogger("parkgate.telegram")

#: A Bot API call to make in answer to an update: ``{"method": ..., **params}``.
Answer = dict[str, Any]


class TelegramInbound:
    """Hands one bot's updates to a gateway.

    Args:
        gateway: The gateway that holds the asks (with ``channel`` added to it).
        channel: The Telegram channel the asks were posted through.
    """

    def __init__(self, gateway: Gateway, channel: TelegramChannel) -> None:
        self.gateway = gateway
        self.channel = channel

    def handle(self, payload: Mapping[str, Any]) -> Answer | None:
        """Act on one update.

        Args:
            payload: The update's JSON object.

        Returns:
            The ``answerCallbackQuery`` call a button press is answered with; the
            ``sendMessage`` call a typed message that answered none of several open asks
            is answered with (:data:`~parkgate.core.phrases.CHANNEL_REPLY_TO_THE_QUESTION`);
            else ``None``.

        Raises:
            InputError: The payload is not an update; nothing was read or written.
        """
        event = read_update(payload)
        if isinstance(event, ButtonPress):
            return self._press(event)
        if isinstance(event, TypedMessage):
            return self._typed(event)
        return None

    def handle_polled(self, payload: Mapping[str, Any]) -> None:
        """:meth:`handle` for an update read by long polling: the press's answer, which a
        webhook sends back in its response, is called on the Bot API here (a failure is logged).

        Args:
            payload: The update's JSON object, as ``getUpdates`` gives it.

        Raises:
            InputError: The payload is not an update; nothing was read or written.
        """
        answer = self.handle(payload)
        if answer is None:
            return
        method = answer.pop("method")
        try:
            self.channel.api.call(method, answer)
        except (ConnectionError, ChannelJobFailed) as error:
            log.warning("%s", error)

    def _press(self, event: ButtonPress) -> Answer:
        self.channel.names.saw(event.sender, event.name)
        answer: Answer = {"method": "answerCallbackQuery", "callback_query_id": event.callback_query_id}
        press = read_press(event.data)
        if press is None or not self._on_its_message(press.ask_id, event):
            return answer
        try:
            ask = self.gateway.get(press.ask_id)  # the read that closes it when past its TTL
        except UnknownAsk:
            return answer
        reply = self.gateway.handle_in_channel(
            ask.conversation_id, press.text, str(event.update_id), event.sender, ask_id=ask.id
        )
        if reply.kind is ReplyKind.NOT_YOURS:  # the responders as this process knows their names
            alert = not_yours_reply(ask, event.sender).shown(self.channel.names.name)
            return {**answer, "text": alert, "show_alert": True}
        if reply.kind not in (ReplyKind.LATE, ReplyKind.PASS):
            return answer if reply.kind in POSTED_REPLIES else {**answer, "text": reply.text}
        # The ask closed (before the press, or meanwhile): the press was late, and logged so.
        closed = self.gateway.get(ask.id)
        return {**answer, "text": already_closed_line(closed, self.channel.names.name), "show_alert": True}

    def _on_its_message(self, ask_id: str, event: ButtonPress) -> bool:
        """Whether the press is on the message ``ask_id`` was posted as: data copied onto
        another message (or another chat) answers nothing. An ask whose post was sent again
        after a call that left no record (:attr:`~parkgate.store.channel_tables.ChannelPost.unrecorded_sends`)
        may have an earlier message in the chat it was posted to: a press there is the ask's own."""
        post = self.gateway.channel_post(ask_id)
        if post is None or post.channel != NAME or event.place is None:
            return False
        if post.location is not None:
            where = json.loads(post.location)
            if where.get("chat_id") == event.place.chat_id and where.get("message_id") == event.message_id:
                return True
        return post.unrecorded_sends and json.loads(post.target).get("chat_id") == event.place.chat_id

    def _typed(self, event: TypedMessage) -> Answer | None:
        self.channel.names.saw(event.sender, event.name)
        text = addressed_text(event.text, self.channel.bot_username)  # known or not: no Bot API call here
        if text is None:  # a command for another bot (or for a bot while this one's username is unknown)
            return None
        found = None
        if event.reply_to_message_id is not None:
            found = self.gateway.ask_in_thread(NAME, thread_key(event.place, event.reply_to_message_id))
        if found is None:
            # Not a reply to an ask's message: it goes to the one ask open here, and to none
            # when several are (another's question may be waiting for this very text).
            open_here = self.gateway.open_asks_in(NAME, place_key(event.place), under=True)
            if len(open_here) > 1:
                return self._reply_to_the_question(event)
            found = open_here[0] if open_here else None
        if found is None:
            return None
        ask_id, conversation_id = found
        reply = self.gateway.handle_in_channel(conversation_id, text, str(event.update_id), event.sender, ask_id=ask_id)
        if reply.kind is not ReplyKind.LATE:
            return None
        # A reply to a closed ask's message: late, logged so, and the sender told how it closed.
        return self._reply_to(event, already_closed_line(self.gateway.get(ask_id), self.channel.names.name))

    @classmethod
    def _reply_to_the_question(cls, event: TypedMessage) -> Answer:
        """The ``sendMessage`` that tells the sender, in reply to their message, to reply to
        the question's own message: what they typed answered none of the asks open here."""
        return cls._reply_to(event, P.CHANNEL_REPLY_TO_THE_QUESTION)

    @staticmethod
    def _reply_to(event: TypedMessage, text: str) -> Answer:
        """The ``sendMessage`` of ``text`` in reply to the sender's message."""
        answer: Answer = {"method": "sendMessage", "chat_id": event.place.chat_id, "text": text}
        if event.place.thread_id is not None:
            answer["message_thread_id"] = event.place.thread_id
        if event.message_id is not None:
            answer["reply_parameters"] = {"message_id": event.message_id, "allow_sending_without_reply": True}
        return answer
