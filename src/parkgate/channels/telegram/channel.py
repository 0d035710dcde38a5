"""The Telegram channel: posts an ask with its inline keyboard, edits it when it closes,
and posts the replies shown in its chat, through the Bot API.

Each method runs as a job of parkgate's durable channel queue (in the deliverer's worker
thread), so a Bot API outage delays the message and loses nothing: a failed call raises
and the job is retried with backoff; a refusal that a retry cannot change (a chat that is
gone, a bot that was removed) gives the job up at once, kept as failed with its error
(:mod:`~parkgate.channels.telegram.api` raises each as it should be taken).

People are named as Telegram names them: ``@username`` where they have one, else their
first name with a ``text_mention`` entity over it, which notifies them as a username
does (:func:`~parkgate.channels.telegram.texts.with_entities`); their id where this
process knows neither.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Mapping
from typing import Any

from telegram import User

from parkgate.channels.base import ChannelJobFailed, ChannelReply, Posted, SeenNames, not_yours_reply
from parkgate.channels.lines import votes_line
from parkgate.channels.telegram.api import BotApi
from parkgate.channels.telegram.buttons import ask_keyboard
from parkgate.channels.telegram.routing import thread_key
from parkgate.channels.telegram.spec import NAME
from parkgate.channels.telegram.texts import (
    MAX_MESSAGE_CHARS,
    check_fits,
    closed_text,
    fitted,
    length,
    marked,
    open_text,
    plain,
    question_text,
    with_entities,
)
from parkgate.channels.telegram.updates import Place, user_name
from parkgate.core.kinds import ReplyKind
from parkgate.core.model import Ask
from parkgate.errors import InputError

#: The least time between two ``getMe`` calls while the bot's username is unknown, in seconds.
GET_ME_RETRY_SECONDS = 60.0

log = logging.getLogger("parkgate.telegram")


class TelegramChannel:
    """Parkgate's asks in Telegram chats, through one bot.

    Args:
        api: The bot's Bot API client.
        bot_username: The bot's username, for commands addressed ``/cancel@YourBot``
            (``PARKGATE_TELEGRAM_BOT_USERNAME``). Left out, it is learnt off the update
            path: by :meth:`learn_username` (``getMe``, which ``parkgate serve`` calls once
            at start) or from the sender of any message the bot sends. Until it is known,
            a command addressed to a bot is not taken as this bot's.
    """

    name = NAME

    def __init__(self, api: BotApi, bot_username: str | None = None) -> None:
        self.api = api
        self._username = bot_username.lstrip("@") if bot_username else None
        #: The names of people this process has seen: ``@username``, else a first name (for the close lines).
        self.names = SeenNames()
        self._lock = threading.Lock()
        self._next_get_me = 0.0

    @property
    def bot_username(self) -> str | None:
        """The bot's username when known (given, or learnt); never asked of the Bot API here,
        so a webhook that needs it makes no call and cannot fail on one."""
        return self._username

    def learn_username(self) -> str | None:
        """The bot's username, asked of the Bot API (``getMe``) when it is not known yet.

        A failed call is logged and leaves it unknown; it is asked again at most every
        :data:`GET_ME_RETRY_SECONDS`. Called at start and by the channel's jobs, never
        while an update is handled.

        Returns:
            The username, or ``None`` while it is unknown.
        """
        if self._username is not None:
            return self._username
        now = time.monotonic()
        with self._lock:
            if now < self._next_get_me:
                return None
            self._next_get_me = now + GET_ME_RETRY_SECONDS
        try:
            me = self.api.call("getMe", {})
        except (ConnectionError, ChannelJobFailed) as error:
            log.warning("the bot's username is unknown (%s): commands addressed to a bot are not taken", error)
            return None
        self._learn_from(me)
        return self._username

    def _learn_from(self, sender: object) -> None:
        """Keep the bot's username from ``getMe``'s answer or a sent message's ``from``."""
        if self._username is None and isinstance(sender, Mapping) and sender.get("is_bot") is True:
            username = sender.get("username")
            if isinstance(username, str) and username:
                self._username = username

    def check_post(self, ask: Ask, where: Mapping[str, Any]) -> None:
        """The park-time check: ``where`` is a Telegram target, and the ask's question
        fits in one message (:data:`~parkgate.channels.telegram.texts.MAX_MESSAGE_CHARS`).

        Raises:
            InputError: The target is bad or the question too long; nothing is parked.
        """
        check_target(where)
        check_fits(ask)

    def known_names(self) -> dict[str, str]:
        """The ``@username`` of each person this process has seen (first names, which their
        owners choose, are left out: :class:`~parkgate.channels.base.KnowsNames`)."""
        return self.names.handles()

    def post(self, ask: Ask, target: Mapping[str, Any]) -> Posted:
        """Send the ask's question with a button per option, Cancel and Show options.

        Args:
            ask: The open ask.
            target: ``{"chat_id": ..., "message_thread_id": ...?}``.

        Returns:
            ``{"chat_id", "message_id"}`` (and the topic's ``message_thread_id`` when given),
            and the message's thread key.
        """
        try:
            where = check_target(target)
        except InputError as error:  # a target no retry can make usable
            raise ChannelJobFailed(str(error)) from None
        question = question_text(ask)
        if length(question) > MAX_MESSAGE_CHARS:  # parked where the park could not check it (a workflow's later phase)
            raise ChannelJobFailed(
                f"the question is {length(question)} characters, over Telegram's {MAX_MESSAGE_CHARS}"
            )
        place = Place(where["chat_id"], where.get("message_thread_id"))
        text = open_text(ask, lambda user_id: self._mention(place.chat_id, user_id))
        params: dict[str, Any] = {
            "chat_id": place.chat_id,
            **_text(text),
            "reply_markup": ask_keyboard(ask.id, ask.options),
        }
        if place.thread_id is not None:
            params["message_thread_id"] = place.thread_id
        message = self.api.call("sendMessage", params)
        self._learn_from(message.get("from"))
        location: dict[str, Any] = {"chat_id": place.chat_id, "message_id": int(message["message_id"])}
        if place.thread_id is not None:
            location["message_thread_id"] = place.thread_id
        return Posted(location, thread_key(place, location["message_id"]))

    def closed(self, ask: Ask, location: Mapping[str, Any]) -> None:
        """Edit the ask's message to its question and how it ended; the keyboard goes."""
        chat_id = location["chat_id"]
        text = closed_text(ask, lambda user_id: self._mention(chat_id, user_id))
        self.api.call("editMessageText", {"chat_id": chat_id, "message_id": location["message_id"], **_text(text)})

    def reply(self, ask: Ask, location: Mapping[str, Any], reply: ChannelReply) -> None:
        """Post ``reply`` as a reply to the ask's message; ``not_yours`` goes privately to
        its sender where Telegram allows (a person who started a chat with the bot), else there."""
        chat_id = location["chat_id"]

        def name(user_id: str) -> str:
            return self._mention(chat_id, user_id)

        if reply.kind is ReplyKind.NOT_YOURS:
            # Theirs alone: in their own chat with the bot, or not at all (a person who
            # never started one cannot be written to; the group never sees it).
            if reply.to is not None and _is_user_id(reply.to):
                text = fitted(not_yours_reply(ask, reply.to).shown(name, plain))
                try:
                    self.api.call("sendMessage", {"chat_id": int(reply.to), **_text(text)})
                except ChannelJobFailed as error:
                    log.info("the not_yours line for %s was not sent: %s", reply.to, error)
            return
        text = reply.shown(name, plain)  # a reshown question or a reminder quotes the prompt
        votes = votes_line(ask, name, plain) if reply.kind is ReplyKind.VOTED else None
        text = fitted(text if votes is None else f"{text}\n{votes}")
        params: dict[str, Any] = {
            "chat_id": location["chat_id"],
            **_text(text),
            "reply_parameters": {"message_id": location["message_id"], "allow_sending_without_reply": True},
        }
        if location.get("message_thread_id") is not None:
            params["message_thread_id"] = location["message_thread_id"]
        self.api.call("sendMessage", params)

    def _mention(self, chat_id: int, user_id: str) -> str:
        """``@username`` of ``user_id``, else their first name marked for a text mention
        (:func:`~parkgate.channels.telegram.texts.marked`): as seen here, else as the chat
        says (``getChatMember``); their id where neither says."""
        name = self.names.name(user_id)
        if not _is_user_id(user_id):
            return name
        if name != user_id:
            return _named(user_id, name)
        try:
            member = self.api.call("getChatMember", {"chat_id": chat_id, "user_id": int(user_id)})
        except ChannelJobFailed:  # no longer in the chat: named by their id
            return user_id
        user = User.de_json(member.get("user") or {}, None) if isinstance(member, dict) else None
        if user is None:
            return user_id
        name = user_name(user)
        self.names.saw(user_id, name)
        return _named(user_id, name)


def _named(user_id: str, name: str) -> str:
    """A known person's name in a text being built: ``@username`` as it is, a first name
    marked to be sent as a text mention."""
    return name if name.startswith("@") else marked(int(user_id), name)


def _text(built: str) -> dict[str, Any]:
    """A sent message's ``text`` (and ``entities``, its text mentions, when it has any) from
    its text as built, names marked."""
    text, entities = with_entities(built)
    return {"text": text, "entities": entities} if entities else {"text": text}


def check_target(where: Mapping[str, Any]) -> dict[str, Any]:
    """A ``telegram`` target checked: ``{"chat_id": int, "message_thread_id": int?}``.

    Raises:
        InputError: ``chat_id`` is missing or not a whole number, or another key is bad.
    """
    unknown = set(where) - {"chat_id", "message_thread_id"}
    if unknown:
        raise InputError(f"telegram takes chat_id and message_thread_id, not {', '.join(sorted(unknown))}")
    checked: dict[str, Any] = {}
    for key in ("chat_id", "message_thread_id"):
        value = where.get(key)
        if value is None and key == "message_thread_id":
            continue
        if isinstance(value, bool) or not isinstance(value, int):
            raise InputError(f"telegram.{key} must be a whole number (a Telegram id)")
        checked[key] = value
    return checked


def _is_user_id(sender: str) -> bool:
    """Whether ``sender`` is a Telegram user id (what this channel sends as ``sender``)."""
    return sender.isascii() and sender.isdigit()
