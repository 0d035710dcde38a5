"""The interfaces of the store's side tables that a transaction hands out beside the asks
and the outbox: the follow-ups of closed asks, the deliverers' heartbeats, an agent SDK's
kept run state, the idempotency keys of parks, and the history of every ask."""

from __future__ import annotations

from datetime import datetime
from typing import Protocol

from parkgate.core.history import HistoryQuery
from parkgate.core.model import Ask


class FollowUps(Protocol):
    """The duties of waiters that follow an ask up once it closes."""

    def closed_follow_ups(
        self,
        now: datetime,
        limit: int,
        owner: str | None = None,
        watcher: str | None = None,
        after: str | None = None,
    ) -> list[Ask]:
        """Closed asks whose follow-up is neither done nor claimed past ``now``, earliest
        close first: only ``owner``'s when given, only ``watcher``'s (and those pending
        from before watchers were named) when given, and only those closed after the ask
        ``after`` when given (the next page)."""
        ...

    def claim_follow_up(self, ask_id: str, now: datetime, until: datetime) -> bool:
        """Lease ``ask_id``'s follow-up until ``until`` if it is pending and unclaimed (or its
        claim ran out by ``now``); whether this call took it."""
        ...

    def follow_up_done(self, ask_id: str, now: datetime) -> None:
        """Mark ``ask_id``'s follow-up done: it is never listed or claimed again."""
        ...


class Heartbeats(Protocol):
    """The deliverers' heartbeats: who delivers on this database, and when it last beat."""

    def beat(self, deliverer_id: str, now: datetime) -> None:
        """Stamp a running deliverer's heartbeat."""
        ...

    def stop_beating(self, deliverer_id: str) -> None:
        """Remove a deliverer that stops cleanly."""
        ...

    def last_beat(self) -> datetime | None:
        """The latest heartbeat of any deliverer on this database (``None``: never)."""
        ...


class AgentStates(Protocol):
    """An agent SDK's serialised run state, kept with its run until the agent finishes."""

    def keep(self, run_id: str, state: str, now: datetime) -> None:
        """Keep ``state`` for ``run_id``, replacing what was kept."""
        ...

    def kept(self, run_id: str) -> str | None:
        """The state kept for ``run_id`` (``None``: none)."""
        ...

    def forget(self, run_id: str) -> None:
        """Remove the state kept for ``run_id``, if any."""
        ...


class AskKeys(Protocol):
    """The idempotency keys of parks: which ask an owner's key parked."""

    def ask_for_key(self, owner: str | None, key: str) -> str | None:
        """The id of the ask ``owner`` parked with ``key`` (``None``: none yet)."""
        ...

    def record_key(self, owner: str | None, key: str, ask_id: str) -> None:
        """Record that ``owner``'s ``key`` parked ``ask_id``; the same key twice is a
        :class:`StoreConflict` at the latest on commit (the unit is retried and finds it)."""
        ...


class History(Protocol):
    """The reads of every ask, open or closed: the operator's history, a lookup by the
    start of an id, and the rows the figures are computed from
    (:mod:`parkgate.store.history_sql`). Reads only: closing what they find lapsed is the
    gateway's."""

    def history(self, query: HistoryQuery, limit: int, target_key: str | None = None) -> list[Ask]:
        """At most ``limit`` asks as ``query`` filters and orders them, from the place its
        cursor names (:mod:`parkgate.core.history`), as stored: an open ask past its TTL
        is listed as open (the gateway closes those first).

        ``target_key`` is the key of the channel's target JSON that holds the target id
        ``query.channel`` names (``"channel"`` for Slack); ``None``: the channel alone is matched.
        """
        ...

    def asks_starting(self, prefix: str, limit: int) -> list[Ask]:
        """At most ``limit`` asks, open or closed, whose id starts with ``prefix``, by id."""
        ...

    def lapsed(
        self, now: datetime, limit: int, owner: str | None = None, conversation_id: str | None = None
    ) -> list[Ask]:
        """At most ``limit`` open asks past their TTL at ``now`` (a read closes them as
        expired), oldest first: only ``owner``'s, only that conversation's, when given."""
        ...

    def figure_rows(
        self, since: datetime | None, until: datetime | None, limit: int, owner: str | None = None
    ) -> list[Ask]:
        """The asks the figures of ``[since, until)`` are computed from, at most ``limit``,
        newest first: those asked or closed in the window (either bound ``None``: open on
        that side) and every open ask; only ``owner``'s when given."""
        ...
