"""The channel posts and jobs a transaction reads and writes (:class:`ChannelTables`), and
the rows it hands out (:mod:`parkgate.channels` runs them)."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol


@dataclass(frozen=True, slots=True)
class ChannelJob:
    """One ``channel_outbox`` row as a channel deliverer claims it (:mod:`parkgate.channels`)."""

    id: int
    ask_id: str
    channel: str
    #: ``post``, ``closed`` or ``reply`` (:mod:`parkgate.channels.jobs`).
    job: str
    #: The job's JSON (a reply's text and recipient; ``{}`` for a post or a close).
    payload: str
    attempts: int


@dataclass(frozen=True, slots=True)
class ChannelPost:
    """Where an ask is posted on a channel: the ``channel_posts`` row."""

    ask_id: str
    channel: str
    #: Where the caller asked it to be posted (JSON), as given at the park.
    target: str
    #: Where the platform says it was posted (JSON); ``None`` until the post job succeeds.
    location: str | None
    #: The platform thread whose replies go to the ask (``None`` until posted).
    thread_key: str | None
    #: The post's platform calls begun (the deliverer counts one before each call).
    sends: int = 0

    @property
    def unrecorded_sends(self) -> bool:
        """Whether a call may have posted the ask without its message being recorded: more
        sends than the one recorded (a process killed during the call, an answer lost).
        Such a message's buttons are the ask's own, though it is not :attr:`location`."""
        return self.sends > (0 if self.location is None else 1)


class ChannelTables(Protocol):
    """Asks posted to channels and their durable job queue (``channel_posts``, ``channel_outbox``).

    Jobs are queued by :meth:`MessageTransaction.write` (a
    :class:`~parkgate.store.writes.QueuedChannelJob`), in the commit of the ask's event.
    """

    def post_of(self, ask_id: str) -> ChannelPost | None:
        """Where ``ask_id`` is posted (``None``: it was never posted to a channel)."""
        ...

    def posts_of(self, ask_ids: Collection[str]) -> dict[str, ChannelPost]:
        """Where each of these asks is posted (those never posted are left out)."""
        ...

    def ask_in_thread(self, channel: str, thread_key: str) -> tuple[str, str] | None:
        """``(ask id, conversation id)`` of the latest ask posted in that thread, else ``None``."""
        ...

    def open_asks_in(self, channel: str, thread_key: str, under: bool, limit: int) -> list[tuple[str, str]]:
        """``(ask id, conversation id)`` of at most ``limit`` open asks posted in that thread,
        the latest first; with ``under``, in any thread whose key starts with ``thread_key``
        (a place holding several threads, such as a Telegram chat)."""
        ...

    def sending(self, ask_id: str) -> int:
        """Count a platform call of ``ask_id``'s post about to begin; return the calls begun before it."""
        ...

    def posted(self, ask_id: str, location: str, thread_key: str | None, now: datetime) -> bool:
        """Record where the platform posted ``ask_id`` (its post job succeeded), unless a
        post is recorded already (the first recorded stays); whether this one was."""
        ...

    def claim_jobs(
        self, channels: Collection[str], now: datetime, lease_until: datetime, limit: int
    ) -> list[ChannelJob]:
        """At most ``limit`` due jobs of ``channels``, leased until ``lease_until``: close
        updates first, then posts, then replies, each kind by due time and id.

        A job waits while an earlier job of its ask is not done or failed, except that a
        close update waits for no reply: it follows the post alone, however many replies
        are queued before it. So an ask's post comes first, its replies keep their order,
        and its close update is never held back by replies.
        """
        ...

    def job_done(self, job_id: int, now: datetime) -> None:
        """Mark a job done."""
        ...

    def job_failed(self, job_id: int, error: str, retry_at: datetime | None, now: datetime) -> None:
        """Record a failed attempt; ``retry_at`` ``None`` gives the job up (``failed_at``)."""
        ...

    def next_jobs_at(self, channels: Collection[str]) -> dict[str, datetime]:
        """When each of ``channels`` has a job :meth:`claim_jobs` can claim next (the earliest
        due time of the jobs waiting on no earlier job); channels with none are left out."""
        ...

    def failed_jobs(self, limit: int) -> list[tuple[ChannelJob, str | None]]:
        """The jobs given up, the latest first, each with its last error: what an operator reads."""
        ...
