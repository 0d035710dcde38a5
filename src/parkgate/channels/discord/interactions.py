"""Discord's interactions into the gateway: a button press, or Reply's form sent, becomes
:meth:`Gateway.handle_in_channel <parkgate.Gateway.handle_in_channel>` with the Discord
user id as ``sender`` and the interaction's id as ``message_id`` (a redelivery applies once).

Discord shows "This interaction failed" unless an interaction is answered within 3
seconds, so :meth:`DiscordInteractions.answer` answers at once, from the interaction
alone, with no read or write: a press with a deferred update (type 6), Reply with its
form (a modal, type 9), a PING with a PONG. The work is done after, by a few worker
threads of this object's own (:meth:`DiscordInteractions.act`), off the request.

A press is read against the ask its button was posted for, and only on that ask's own
message. What the person alone should see is sent as an ephemeral followup (flags 64,
through the interaction's webhook): a press by someone the ask is not for
(``not_yours``: who it is for, and nothing changes), a press on a closed ask (how it
closed), a press on a message that is not its ask's. Everything the channel shows for all
comes from the channel's jobs: the message edited on close, the lines in its thread.

**Responders** are Discord user ids, and optionally roles, named ``<@&role id>``. A press
by someone who is no responder but holds a responder role (the interaction's
``member.roles``) answers as that role: the role is the sender, so a role's members share
one vote.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from parkgate.channels.discord.channel import DiscordChannel
from parkgate.channels.discord.phrases import NO_COMMANDS, NOT_THIS_MESSAGE
from parkgate.channels.discord.spec import NAME
from parkgate.channels.discord.texts import (
    ANSWER_FIELD,
    FORM,
    MAX_INPUT_CHARS,
    REPLY,
    Press,
    already_closed_line,
    modal,
    not_yours_line,
    read_custom_id,
)
from parkgate.core.kinds import ReplyKind
from parkgate.errors import InputError, ParkgateError, UnknownAsk

if TYPE_CHECKING:
    from parkgate.gateway import Gateway

log = logging.getLogger("parkgate.discord")

#: Interaction types and response types, as Discord numbers them.
PING, APPLICATION_COMMAND, MESSAGE_COMPONENT, MODAL_SUBMIT = 1, 2, 3, 5
PONG, CHANNEL_MESSAGE, DEFERRED_UPDATE = 1, 4, 6
#: The message flag that shows a message to the person who acted alone.
EPHEMERAL = 64
#: Worker threads that act on interactions, and how many acknowledged ones may wait for them.
WORKERS = 4
MAX_WAITING = 500


@dataclass(frozen=True, slots=True)
class Interaction:
    """A press or a form sent, as read from Discord's interaction."""

    id: str
    application_id: str
    token: str
    press: Press
    #: What it says to the gateway: an option's number, ``/cancel``, ``/menu``, or the form's text.
    text: str
    user: str
    roles: tuple[str, ...]
    #: The message the button was on: its channel and id (``None`` when Discord sent none).
    channel_id: str | None
    message_id: str | None
    #: The presser's unique username, when the interaction gives one.
    handle: str | None = None


def _string(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def read_interaction(payload: Mapping[str, Any]) -> Interaction | None:
    """A component press or a form submission parkgate's buttons made, or ``None``.

    Raises:
        InputError: The payload lacks what every interaction has (its id, token, user).
    """
    data = payload.get("data")
    press = read_custom_id(data.get("custom_id") if isinstance(data, dict) else None)
    if press is None:
        return None
    member = payload.get("member")
    user = member.get("user") if isinstance(member, dict) else payload.get("user")
    user_id = _string(user.get("id")) if isinstance(user, dict) else None
    interaction_id, application_id = _string(payload.get("id")), _string(payload.get("application_id"))
    token = _string(payload.get("token"))
    if user_id is None or interaction_id is None or application_id is None or token is None:
        raise InputError("an interaction needs its id, application_id, token and user")
    roles = member.get("roles") if isinstance(member, dict) else None
    message = payload.get("message")
    channel_id = message_id = None
    if isinstance(message, dict):
        channel_id, message_id = _string(message.get("channel_id")), _string(message.get("id"))
    text = press.text
    if press.button == FORM:
        text = _form_text(data if isinstance(data, dict) else {})
    return Interaction(
        interaction_id,
        application_id,
        token,
        press,
        text or "",
        user_id,
        tuple(role for role in roles if isinstance(role, str)) if isinstance(roles, list) else (),
        channel_id or _string(payload.get("channel_id")),
        message_id,
        _string(user.get("username")) if isinstance(user, dict) else None,
    )


def _form_text(data: Mapping[str, Any]) -> str:
    """The answer typed in Reply's form (its one text field)."""
    for row in data.get("components") or ():
        for field in row.get("components") or () if isinstance(row, dict) else ():
            if (
                isinstance(field, dict)
                and field.get("custom_id") == ANSWER_FIELD
                and isinstance(field.get("value"), str)
            ):
                return str(field["value"])[:MAX_INPUT_CHARS]
    raise InputError("a parkgate form sent without its answer field")


def sender_for(responders: tuple[str, ...], user: str, roles: tuple[str, ...]) -> str:
    """Who a press is from, for the gateway: the user, or the responder role they hold
    when they are no responder themselves."""
    if not responders or user in responders:
        return user
    return next((f"<@&{role}>" for role in roles if f"<@&{role}>" in responders), user)


class DiscordInteractions:
    """Answers one application's interactions at once and acts on them after.

    Args:
        gateway: The gateway that holds the asks (with ``channel`` added to it).
        channel: The Discord channel the asks were posted through (its REST client sends
            the followups).
        workers: How many threads act on interactions.
    """

    def __init__(self, gateway: Gateway, channel: DiscordChannel, workers: int = WORKERS) -> None:
        self.gateway = gateway
        self.channel = channel
        self._pool = ThreadPoolExecutor(workers, thread_name_prefix="parkgate-discord")
        self._room = threading.BoundedSemaphore(MAX_WAITING)

    def answer(self, payload: Mapping[str, Any]) -> dict[str, Any]:
        """The interaction's response, made at once; the press's work is queued.

        Args:
            payload: The interaction's JSON object (its signature checked).

        Returns:
            The response: PONG, the form, a deferred update, or a private line.

        Raises:
            InputError: The payload is not an interaction; nothing was read or written.
        """
        kind = payload.get("type")
        if kind == PING:
            return {"type": PONG}
        if kind not in (MESSAGE_COMPONENT, MODAL_SUBMIT):
            return {"type": CHANNEL_MESSAGE, "data": {"content": NO_COMMANDS, "flags": EPHEMERAL}}
        interaction = read_interaction(payload)
        if interaction is None:  # another app's component on a message of ours: acknowledged, left alone
            return {"type": DEFERRED_UPDATE}
        self.channel.names.saw_handle(interaction.user, interaction.handle)
        if interaction.press.button == REPLY:
            message = payload.get("message")
            content = message.get("content") if isinstance(message, dict) else None
            return modal(interaction.press.ask_id, content if isinstance(content, str) else "")
        if not self._room.acquire(blocking=False):
            log.warning("a Discord press was dropped: %d are waiting to be acted on", MAX_WAITING)
            return {"type": CHANNEL_MESSAGE, "data": {"content": "parkgate is busy: press again.", "flags": EPHEMERAL}}
        self._pool.submit(self._act_then_release, interaction)
        return {"type": DEFERRED_UPDATE}

    def _act_then_release(self, interaction: Interaction) -> None:
        try:
            self.act(interaction)
        except Exception:  # a worker thread: logged, never lost silently
            log.exception("a Discord press on ask %s failed", interaction.press.ask_id)
        finally:
            self._room.release()

    def act(self, interaction: Interaction) -> None:
        """Do what an acknowledged press or form asks, telling the person privately what
        only they should see."""
        ask_id = interaction.press.ask_id
        if not self._on_its_message(ask_id, interaction):
            self.whisper(interaction, NOT_THIS_MESSAGE)
            return
        try:
            ask = self.gateway.get(ask_id)  # the read that closes it when past its TTL
        except UnknownAsk:
            return
        sender = sender_for(ask.responders, interaction.user, interaction.roles)
        try:
            reply = self.gateway.handle_in_channel(
                ask.conversation_id, interaction.text, interaction.id, sender, ask_id=ask.id
            )
        except ParkgateError as error:  # text no ask takes (a NUL character): nothing changed
            log.warning("a Discord press on ask %s was refused: %s", ask.id, error)
            return
        if reply.kind is ReplyKind.NOT_YOURS:
            self.whisper(interaction, not_yours_line(ask))
            return
        if reply.kind in (ReplyKind.LATE, ReplyKind.PASS):  # the ask closed: the press was late, and logged so
            self.whisper(interaction, already_closed_line(self.gateway.get(ask.id)))

    def whisper(self, interaction: Interaction, text: str) -> None:
        """Send ``text`` to the person who acted alone (an ephemeral followup); a failure is logged."""
        body = {"content": text, "flags": EPHEMERAL, "allowed_mentions": {"parse": []}}
        path = f"/webhooks/{interaction.application_id}/{interaction.token}"
        try:
            self.channel.api.call("POST", path, body, what="a followup")
        except (ConnectionError, ParkgateError) as error:
            log.warning("could not tell %s privately: %s", interaction.user, error)

    def _on_its_message(self, ask_id: str, interaction: Interaction) -> bool:
        """Whether the press is on the message ``ask_id`` was posted as (or, for an ask
        whose post was sent again after a call that left no record, in its channel)."""
        post = self.gateway.channel_post(ask_id)
        if post is None or post.channel != NAME:
            return False
        if post.location is not None:
            where = json.loads(post.location)
            if where.get("channel_id") == interaction.channel_id and where.get("message_id") == interaction.message_id:
                return True
        return post.unrecorded_sends and json.loads(post.target).get("channel_id") == interaction.channel_id
