"""The channel calls of :class:`~parkgate.AsyncGateway`: each
:class:`~parkgate.gateway.channel_calls.ChannelCalls` call, awaited."""

from __future__ import annotations

from parkgate.channels.base import Channel
from parkgate.core.model import Reply
from parkgate.gateway import Gateway
from parkgate.gateway.offload import offload
from parkgate.store.channel_tables import ChannelJob, ChannelPost


class AsyncChannelCalls:
    """The channel calls of :class:`~parkgate.AsyncGateway`, on its ``sync`` gateway."""

    sync: Gateway

    async def add_channel(self, channel: Channel) -> None:
        """Add ``channel``: the deliverer runs its jobs (:meth:`Gateway.add_channel`)."""
        self.sync.add_channel(channel)  # no I/O: nothing to hand to a thread

    async def handle_in_channel(
        self,
        conversation_id: str,
        text: str | bytes,
        message_id: str | None,
        sender: str | None,
        *,
        ask_id: str | None = None,
    ) -> Reply:
        """A channel's message or click, its reply queued for the thread (:meth:`Gateway.handle_in_channel`)."""
        return await offload(self.sync.handle_in_channel, conversation_id, text, message_id, sender, ask_id=ask_id)

    async def channel_post(self, ask_id: str) -> ChannelPost | None:
        """Where ``ask_id`` is posted, as stored (:meth:`Gateway.channel_post`)."""
        return await offload(self.sync.channel_post, ask_id)

    async def channel_posts(self, ask_ids: list[str]) -> list[ChannelPost | None]:
        """Where each ask is posted, as stored (:meth:`Gateway.channel_posts`)."""
        return await offload(self.sync.channel_posts, ask_ids)

    async def open_asks_in(
        self, channel: str, thread_key: str, *, under: bool = False, limit: int = 2
    ) -> list[tuple[str, str]]:
        """The open asks posted in a thread (or under a place), as stored (:meth:`Gateway.open_asks_in`)."""
        return await offload(self.sync.open_asks_in, channel, thread_key, under=under, limit=limit)

    async def ask_in_thread(self, channel: str, thread_key: str) -> tuple[str, str] | None:
        """The latest ask posted in a thread, as stored (:meth:`Gateway.ask_in_thread`)."""
        return await offload(self.sync.ask_in_thread, channel, thread_key)

    async def failed_channel_jobs(self, limit: int = 100) -> list[tuple[ChannelJob, str | None]]:
        """The channel jobs given up, the latest first (:meth:`Gateway.failed_channel_jobs`)."""
        return await offload(self.sync.failed_channel_jobs, limit)
