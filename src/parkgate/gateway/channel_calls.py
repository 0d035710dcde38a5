"""The gateway's channel calls (:mod:`parkgate.channels`): the channels whose jobs its
deliverer runs, a platform's message or click, and the reads a channel routes by."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from parkgate.channels.base import Channel, ChecksPosts
from parkgate.core.kinds import AskStatus
from parkgate.core.model import Ask, Reply
from parkgate.core.stopping_point import AskSpec
from parkgate.errors import InputError
from parkgate.gateway.checks import check_id, check_limit
from parkgate.gateway.messages import UnitRunner
from parkgate.gateway.options import AskOptions
from parkgate.store import Store
from parkgate.store.channel_tables import ChannelJob, ChannelPost
from parkgate.store.signal import Change, CloseSignal


class ChannelCalls:
    """The channel calls of :class:`~parkgate.gateway.Gateway`."""

    store: Store
    signal: CloseSignal
    channels: dict[str, Channel]
    _units: UnitRunner

    #: :meth:`MessageCalls._message <parkgate.gateway.messages.MessageCalls._message>`.
    _message: Callable[..., Reply]

    def add_channel(self, channel: Channel) -> None:
        """Add ``channel`` (replacing one of the same name): this gateway's deliverer runs its jobs.

        Args:
            channel: The channel, such as a :class:`~parkgate.channels.slack.SlackChannel`.

        Raises:
            InputError: ``channel`` has no usable ``name``.
        """
        name = getattr(channel, "name", None)
        if not isinstance(name, str) or not name.isidentifier():
            raise InputError("a channel needs a name: an identifier, its key in post_to and in an ask's JSON")
        self.channels[name] = channel
        self._units.on_channel_jobs = lambda: self.signal.changed(Change.OUTBOX)
        self.signal.changed(Change.OUTBOX)  # jobs queued before it was added may be due

    def _check_post(self, conversation_id: str, spec: AskSpec, options: AskOptions, now: datetime) -> None:
        """Let the channel ``options.post_to`` names refuse the ask before it is parked
        (:class:`~parkgate.channels.base.ChecksPosts`), as the ask would be posted.

        Raises:
            InputError: The channel cannot post it there; nothing is written.
        """
        target = options.post_to
        channel = self.channels.get(target.channel) if target is not None else None
        if target is None or not isinstance(channel, ChecksPosts):
            return
        draft = Ask(
            id="",
            conversation_id=conversation_id,
            run_id="",
            kind=spec.kind,
            prompt=spec.prompt,
            options=spec.options,
            status=AskStatus.OPEN,
            asked_at=now,
            last_touched=now,
            ttl_seconds=0.0,
            default=options.default,
            owner=options.owner,
            expect=options.expect,
            responders=options.responders,
            quorum=options.quorum,
        )
        channel.check_post(draft, target.where)

    def handle_in_channel(
        self,
        conversation_id: str,
        text: str | bytes,
        message_id: str | None,
        sender: str | None,
        *,
        ask_id: str | None = None,
    ) -> Reply:
        """:meth:`handle` for a message or a click on a channel: a reply shown in the ask's
        thread (retry, escalated, reshown, voted, not_yours) is queued for the channel in
        the same transaction, so it is posted even if this process stops right after.

        Args:
            conversation_id: The conversation of the ask the message is for.
            text: What the person wrote, or the click's equivalent (``"2"``, ``"/cancel"``).
            message_id: The platform's id of the event: a retry of it changes nothing.
            sender: The platform's user id.
            ask_id: A click's ask: the message then goes to that ask only, and is ``pass``
                if another ask is open in the conversation (or none is).

        Returns:
            What was done, as :meth:`handle` returns it.

        Raises:
            InputError: Bad input, raised before anything is read or written.
        """
        if ask_id is not None:
            check_id(ask_id, "ask_id")
        return self._message(conversation_id, text, message_id, sender, channel_reply=True, only_ask=ask_id)

    def channel_post(self, ask_id: str) -> ChannelPost | None:
        """Where ``ask_id`` is posted on a channel, as stored (``None``: never posted).

        Args:
            ask_id: The ask's id.

        Returns:
            The post: its channel, target, location (``None`` until posted) and thread.
        """
        check_id(ask_id, "ask_id")
        with self.store.transaction() as tx:
            return tx.channels.post_of(ask_id)

    def channel_posts(self, ask_ids: list[str]) -> list[ChannelPost | None]:
        """Where each of ``ask_ids`` is posted on a channel, as stored, in their order.

        Args:
            ask_ids: The asks' ids.

        Returns:
            Each ask's post, ``None`` for one never posted.
        """
        if not ask_ids:
            return []
        with self.store.transaction() as tx:
            found = tx.channels.posts_of(ask_ids)
        return [found.get(ask_id) for ask_id in ask_ids]

    def ask_in_thread(self, channel: str, thread_key: str) -> tuple[str, str] | None:
        """The latest ask posted in a channel's thread, as stored: how a reply there is routed.

        Args:
            channel: The channel's name.
            thread_key: The thread's key, as the channel's :class:`~parkgate.channels.Posted` gave it.

        Returns:
            ``(ask id, conversation id)``, or ``None`` when no ask was posted there.
        """
        with self.store.transaction() as tx:
            return tx.channels.ask_in_thread(channel, thread_key)

    def open_asks_in(
        self, channel: str, thread_key: str, *, under: bool = False, limit: int = 2
    ) -> list[tuple[str, str]]:
        """The open asks posted in a channel's thread, the latest first, as stored: how a
        typed message there is routed (one open ask takes it; with more, none does unless
        the message replies to one's post).

        Args:
            channel: The channel's name.
            thread_key: The thread's key, as the channel's :class:`~parkgate.channels.Posted`
                gave it; with ``under``, the start the keys of a place's threads share
                (a Telegram chat's, ``"-100/0/"``).
            under: Read every thread whose key starts with ``thread_key``.
            limit: At most this many (2 tells one from several).

        Returns:
            ``(ask id, conversation id)`` pairs; empty when nothing open was posted there.
        """
        check_limit(limit)
        with self.store.transaction() as tx:
            return tx.channels.open_asks_in(channel, thread_key, under, limit)

    def failed_channel_jobs(self, limit: int = 100) -> list[tuple[ChannelJob, str | None]]:
        """The channel jobs given up, the latest first, each with its last error.

        Args:
            limit: At most this many (a whole number of at least 1).

        Returns:
            ``(job, last error)`` pairs.
        """
        check_limit(limit)
        with self.store.transaction() as tx:
            return tx.channels.failed_jobs(limit)
