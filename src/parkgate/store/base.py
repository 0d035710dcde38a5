"""The small interfaces every store implements, and the values they pass.

A store knows tables and rows, nothing of phrases or matching. The gateway opens one
:meth:`Store.transaction` per inbound message; inside it, reads of an open ask lock
that row (``FOR UPDATE`` on PostgreSQL, ``BEGIN IMMEDIATE`` on SQLite) so two workers
racing on one conversation serialise. A store may answer that read from its memory of
what this process last committed (:class:`parkgate.store.sql.RecentOpenAsks`); its
writes then check that the row is still so, and a failed check is a
:class:`StoreConflict` (retried).

A transaction is several narrow interfaces, each a :class:`~typing.Protocol`: the reads
and writes of one message (:class:`MessageTransaction`), the reads of the open asks
(:class:`OpenAskReads`), the outbox (:class:`Outbox`), the channel posts and jobs
(:class:`ChannelTables`), the follow-ups (:class:`FollowUps`), the deliverers'
heartbeats (:class:`Heartbeats`) and every ask's history (:class:`History`). An engine
implements them by composition: its
transaction holds the pieces, not a chain of bases.
"""

from __future__ import annotations

import enum
from abc import ABC, abstractmethod
from collections.abc import Collection, Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from parkgate.core.events import LoggedEvent, NewEvent
from parkgate.core.model import Ask, CallbackState, CallbackStatus, Run
from parkgate.errors import SchemaMissing as SchemaMissing
from parkgate.errors import StoreClosed as StoreClosed
from parkgate.errors import StoreConflict as StoreConflict
from parkgate.errors import StoreError as StoreError
from parkgate.errors import StoreUnavailable as StoreUnavailable
from parkgate.store.channel_tables import ChannelTables
from parkgate.store.tables import AgentStates as AgentStates
from parkgate.store.tables import AskKeys as AskKeys
from parkgate.store.tables import FollowUps as FollowUps
from parkgate.store.tables import Heartbeats as Heartbeats
from parkgate.store.tables import History as History
from parkgate.store.writes import StoredReply, Writes


@dataclass(frozen=True, slots=True)
class AskGauges:
    """What the open-ask gauges show at one moment."""

    #: Open asks not past their TTL.
    open: int
    #: Open asks past their TTL: awaiting their due read, or a read nobody makes.
    overdue: int
    #: How long ago the earliest passed due time of an ask something waits on fell due
    #: (0 when none has): a due read closes such an ask at once, so a growing value
    #: means no deliverer is running or keeping up.
    oldest_unread_due_seconds: float
    #: Callbacks queued and not sent yet, and callbacks given up on (``failed``).
    callbacks_pending: int = 0
    callbacks_failed: int = 0


@dataclass(frozen=True, slots=True)
class Callback:
    """One outbox row as a deliverer claims it."""

    id: int
    ask_id: str
    url: str
    payload: str
    attempts: int
    #: The receiver's host (``None`` for a row queued before schema version 10).
    host: str | None = None
    #: The event's id, its ``webhook-id`` (``None`` for a row queued before version 14).
    event_id: str | None = None
    #: Which receiver it goes to: ``callback`` (its ask's ``callback_url``) or ``events``
    #: (the server-wide subscriber), told by comparing its URL with the ask's when claimed.
    target: str = "callback"

    @property
    def webhook_id(self) -> str:
        """The ``webhook-id`` this row is sent with: its event's id (an older row's ask id)."""
        return self.event_id or self.ask_id


class Intent(enum.Enum):
    """What a unit of work tells :meth:`Store.transaction` before it begins: whether it
    may find nothing to change.

    ``WRITE``: it writes, so the store takes the write lock before its first statement
    (``BEGIN IMMEDIATE`` on SQLite): a read and the writes it decides are never split by
    another writer. ``READ_FIRST``: it may only read (a message where nothing is parked),
    so its reads take no write lock and other processes' readers and writers go on; a
    write it then makes takes the lock at that moment, and if another writer holds the
    lock or committed since the reads, that write raises :class:`StoreConflict` and
    nothing is written. Only a unit that is retried on a conflict may say
    ``READ_FIRST``, and its retry says ``WRITE``; a unit that only reads (the next due
    time, a count) never meets a conflict, and says ``READ_FIRST`` so that it never
    queues behind this process's writers or joins their commit. A store whose reads never take the
    write lock (PostgreSQL) treats both alike. ``READ_ONLY``: it runs on the caller's
    thread, an event loop's, only on a store whose reads never wait (:attr:`Store.reads_inline`):
    its first write raises :class:`_WriteNeeded` before anything is written, and the
    unit runs again on a worker thread.
    """

    WRITE = "write"
    READ_FIRST = "read_first"
    READ_ONLY = "read_only"


class _WriteNeeded(Exception):
    """A ``READ_ONLY`` unit came to a write (or could not finish on its reads alone):
    nothing was written and nothing is remembered of it; run the unit again as a writer.
    A signal between the store and the gateway, never raised to a caller."""


class Watcher(Protocol):
    """A store's watcher of other processes' commits (see :mod:`parkgate.store.watch`)."""

    def stop(self) -> None:
        """Stop watching; the watcher's thread ends."""
        ...

    def waiting_on(self, ask_id: str) -> None:
        """A waiter of this process is about to sleep on ``ask_id`` (returns at once)."""


class MessageTransaction(Protocol):
    """The reads and writes of one inbound message, committed together."""

    def open_ask(self, conversation_id: str) -> Ask | None:
        """The conversation's open ask, locked for this transaction.

        A store may answer this (and :meth:`message_context`) from what its process last
        committed, checking the answer only at commit: then a wrong answer makes the
        commit raise :class:`StoreConflict` and nothing is written, so the caller's unit
        of work must be one that it retries (as the gateway's are).
        """
        ...

    def message_context(self, conversation_id: str, message_id: str | None) -> tuple[str | None, Ask | None]:
        """Both reads of an inbound message: ``(stored reply, None)`` for a ``message_id``
        seen before, else ``(None, the conversation's open ask, locked)``."""
        ...

    def ask(self, ask_id: str) -> Ask | None:
        """Any ask by id (open or closed), locked for this transaction."""
        ...

    def run(self, run_id: str) -> Run | None:
        """A run by id, or ``None``."""
        ...

    def reply_for(self, conversation_id: str, message_id: str) -> str | None:
        """The stored reply (JSON) of a message seen before, else ``None``."""
        ...

    def store_pass(self, reply: StoredReply) -> bool:
        """Store the reply of a ``pass`` for its ``message_id`` where its conversation still
        has no open ask and the ``message_id`` is new (a message decided before this
        transaction, :meth:`Gateway.record_inline <parkgate.gateway.Gateway.record_inline>`);
        whether it was stored. One statement: the check and the insert."""
        ...

    def write(self, writes: Writes) -> None:
        """Apply everything this unit of work writes, in the engine's fastest form.

        A store that answered a read from memory may hold the writes back until the
        commit, and then checks that memory with them.
        """
        ...


class OpenAsks(Protocol):
    """The reads of the open asks as a whole: the audit, the gauges, the due reads."""

    def open_asks(
        self,
        limit: int | None = None,
        *,
        after: tuple[datetime, str] | None = None,
        owner: str | None = None,
        conversation_id: str | None = None,
    ) -> list[Ask]:
        """Open asks, oldest first (ordered by ``asked_at`` then id, on the partial index).

        ``after`` (an ask's ``(asked_at, id)``) starts the list after that ask: a page's
        last ask gives the next page. ``owner`` keeps only the asks parked by that owner,
        ``conversation_id`` only that conversation's (read on its index: at most one).
        """
        ...

    def count_open_asks(self, owner: str | None = None) -> int:
        """How many asks are open (no rows are loaded), or only ``owner``'s."""
        ...

    def ask_gauges(self, now: datetime) -> AskGauges:
        """The open, overdue and unread-due figures as of ``now`` (the metrics gauges)."""
        ...

    def due_asks(self, now: datetime, limit: int) -> list[Ask]:
        """Open asks something waits on whose due time is ``now`` or earlier, earliest
        first, locked for this transaction; rows another transaction holds are skipped."""
        ...

    def next_due(self) -> datetime | None:
        """The earliest due time among open asks something waits on, their reminders' and
        escalations' included (``None``: none)."""
        ...

    def due_event_asks(self, now: datetime, limit: int) -> list[Ask]:
        """Open asks whose next reminder or escalation is due at ``now`` or earlier,
        earliest first, locked for this transaction; rows another transaction holds are skipped."""
        ...


class Outbox(Protocol):
    """The durable outbox of callbacks, queued by :meth:`MessageTransaction.write`."""

    def claim_callbacks(
        self,
        now: datetime,
        lease_until: datetime,
        limit: int,
        per_host: int | None = None,
        in_flight: Mapping[str, int] | None = None,
    ) -> list[Callback]:
        """At most ``limit`` due outbox rows, leased to the caller until ``lease_until`` so
        other deliverers leave them alone, in id order.

        Rows are taken in turns between receiver hosts (each host's oldest due row, then
        each host's next, ...), so a host with a long queue never fills a claim while
        another host has a row due. With ``per_host``, no more rows of a host are taken
        than ``per_host`` less its deliveries ``in_flight`` (host to count).
        """
        ...

    def count_pending_callbacks(self, owner: str) -> int:
        """How many of ``owner``'s callbacks are queued and neither delivered nor failed."""
        ...

    def callback_done(self, callback_id: int, now: datetime) -> None:
        """Mark one row delivered."""
        ...

    def callbacks_done(self, callback_ids: list[int], now: datetime) -> None:
        """Mark several rows delivered (an engine may write them as one statement)."""
        ...

    def callback_failed(self, callback_id: int, error: str, retry_at: datetime | None) -> None:
        """Record a failed attempt; ``retry_at`` ``None`` gives the callback up (``failed``)."""
        ...

    def callback_states(self, ask_ids: list[str]) -> dict[str, CallbackState]:
        """The latest callback of each of these asks that has one queued."""
        ...

    def failed_callback_asks(self, limit: int) -> list[str]:
        """The ids of asks whose callback failed, the latest failure first."""
        ...

    def rearm_callback(self, ask_id: str, now: datetime) -> bool:
        """Make a failed callback of ``ask_id`` due now with its attempts reset; whether one was."""
        ...

    def next_callback_at(self, full_hosts: Collection[str] = ()) -> datetime | None:
        """When the earliest callback still to send is due (``None``: none), leaving out
        the callbacks to ``full_hosts`` (hosts a deliverer sends no more to at present)."""
        ...

    def callback_counts(self) -> dict[CallbackStatus, int]:
        """How many callbacks are pending and failed (delivered ones are not counted)."""
        ...


class EventLog(Protocol):
    """The event log (:mod:`parkgate.core.events`): a unit of work writes its events with
    its change (:attr:`~parkgate.store.writes.Writes.events`); these are its reads, the
    writes of events whose change is outside the asks' rows, and retention."""

    def record(self, events: Iterable[NewEvent]) -> None:
        """Write ``events`` of asks this transaction has not changed (a delivery attempt,
        a channel post, a late answer), each numbered after its ask's last."""
        ...

    def of_ask(self, ask_id: str) -> list[LoggedEvent]:
        """``ask_id``'s events in order: its timeline (empty for an unknown id)."""
        ...

    def between(
        self, since: datetime | None, until: datetime | None, limit: int, after_id: int = 0, owner: str | None = None
    ) -> list[LoggedEvent]:
        """At most ``limit`` events with ``since <= at < until`` (either open) after ``after_id``, in order."""
        ...

    def misses_of(self, ask_ids: Sequence[str]) -> dict[str, int]:
        """How many messages that were no answer each ask took (its ``touched`` events of
        kind ``retry`` or ``escalated``), by id; an ask with none is left out."""
        ...

    def last_id(self) -> int:
        """The ``id`` of the latest event (0: none)."""
        ...

    def prune(self, before: datetime) -> int:
        """Delete the events older than ``before`` of closed asks (never an open ask's); how many."""
        ...


class Transaction(MessageTransaction, Protocol):
    """One transaction: a message's reads and writes, and the other tables' interfaces,
    all committed together."""

    @property
    def asks(self) -> OpenAsks:
        """The reads of the open asks."""
        ...

    @property
    def outbox(self) -> Outbox:
        """The outbox of callbacks."""
        ...

    @property
    def follow_ups(self) -> FollowUps:
        """The follow-ups of closed asks."""
        ...

    @property
    def channels(self) -> ChannelTables:
        """The asks posted to channels and their job queue."""
        ...

    @property
    def heartbeats(self) -> Heartbeats:
        """The deliverers' heartbeats."""
        ...

    @property
    def agent_states(self) -> AgentStates:
        """The agent SDKs' run states."""
        ...

    @property
    def keys(self) -> AskKeys:
        """The idempotency keys of parks."""
        ...

    @property
    def events(self) -> EventLog:
        """The event log."""
        ...

    @property
    def history(self) -> History:
        """The reads of every ask, open or closed."""
        ...


class Store(ABC):
    """A durable home for asks. Implementations: SQLite and PostgreSQL."""

    url: str
    #: Whether a unit may read on an event loop's own thread (``Intent.READ_ONLY``): true
    #: where a read never waits on another writer or the network (a SQLite file in WAL
    #: mode), so a message that changes nothing is answered without a worker thread.
    reads_inline: bool = False
    #: The migrations this store object applied (on opening, or by :meth:`migrate`).
    applied: list[int]

    @abstractmethod
    def transaction(self, intent: Intent = Intent.WRITE) -> AbstractContextManager[Transaction]:
        """One unit of work; commits on success, rolls back on any exception.

        Args:
            intent: Whether the unit writes (the default) or may find nothing to change
                (see :class:`Intent`).

        Returns:
            The transaction's context manager.
        """

    @abstractmethod
    def migrate(self) -> list[int]:
        """Apply pending schema migrations; return the versions applied now."""

    @abstractmethod
    def schema_version(self) -> int: ...

    @abstractmethod
    def ping(self) -> None:
        """Prove the store answers, with the cheapest statement it has (``SELECT 1``).

        What ``/healthz`` runs on every call: no table is read, so a health check costs
        one round trip however many asks are parked.

        Raises:
            StoreError: the store does not answer (:class:`StoreUnavailable` for a
                PostgreSQL server out of reach, :class:`StoreClosed` once closed).
        """

    def watch(self, signal: Any) -> Watcher | None:
        """Start feeding ``signal`` (a :class:`parkgate.store.signal.CloseSignal`) with other
        processes' commits; ``None``: this store cannot."""
        return None

    # The outbox, outside any message's transaction: each call is a transaction of its own.
    def claim_callbacks(
        self,
        now: datetime,
        lease_until: datetime,
        limit: int = 50,
        per_host: int | None = None,
        in_flight: Mapping[str, int] | None = None,
    ) -> list[Callback]:
        """:meth:`Outbox.claim_callbacks` in a transaction of its own; with none due (a read
        that takes no write lock) nothing is claimed and nothing written."""
        due = self.next_callback_at()
        if due is None or due > now:
            return []
        with self.transaction() as tx:
            return tx.outbox.claim_callbacks(now, lease_until, limit, per_host, in_flight)

    def callback_done(self, callback_id: int, now: datetime) -> None:
        with self.transaction() as tx:
            tx.outbox.callback_done(callback_id, now)

    def callbacks_done(self, callback_ids: list[int], now: datetime, events: Sequence[NewEvent] = ()) -> None:
        """Mark delivered rows in one transaction (a deliverer's batch, one commit), with
        the ``delivered`` events that record their attempts."""
        with self.transaction() as tx:
            tx.events.record(events)  # first: the asks' rows, then the outbox's, as a message's unit takes them
            tx.outbox.callbacks_done(callback_ids, now)

    def callback_failed(
        self, callback_id: int, error: str, retry_at: datetime | None, events: Sequence[NewEvent] = ()
    ) -> None:
        """Record a failed attempt (:meth:`Outbox.callback_failed`) and its ``events``, in one transaction."""
        with self.transaction() as tx:
            tx.events.record(events)
            tx.outbox.callback_failed(callback_id, error, retry_at)

    def next_callback_at(self, full_hosts: Collection[str] = ()) -> datetime | None:
        with self.transaction(Intent.READ_FIRST) as tx:
            return tx.outbox.next_callback_at(full_hosts)

    @abstractmethod
    def close(self) -> None: ...

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def retry_after_guess(error: BaseException | None) -> StoreConflict | None:
    """The conflict to raise when a transaction that answered a read from memory failed
    with ``error`` that is not the store's (an ask already open, say, or a stale guess):
    the state it acted on may have been stale, so the gateway retries with a real read,
    which raises the caller's error again if it stands. ``None``: let ``error`` through."""
    if isinstance(error, Exception) and not isinstance(error, StoreError):
        return StoreConflict(f"retrying with a real read after {type(error).__name__}: {error}")
    return None
