"""The one small interface every store implements.

A store knows tables and rows, nothing of phrases or matching. The gateway opens one
:meth:`Store.transaction` per inbound message; inside it, reads of an open ask lock
that row (``FOR UPDATE`` on PostgreSQL, ``BEGIN IMMEDIATE`` on SQLite) so two workers
racing on one conversation serialise. A store may answer that read from its memory of
what this process last committed (:mod:`parkgate.store.recent`); its writes then check
that the row is still so, and a failed check is a :class:`StoreConflict` (retried).
"""

from __future__ import annotations

import enum
from abc import ABC, abstractmethod
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from parkgate.core.errors import ParkgateError
from parkgate.core.model import Ask, RunStatus
from parkgate.signal import CloseSignal, Watcher

if TYPE_CHECKING:
    from parkgate.store.writes import Writes


class StoreError(ParkgateError):
    """The store cannot be used as asked (not a parkgate database, read-only, ...).

    Over HTTP every store error is a 503 with ``Retry-After``: the request may succeed
    once the database is back or fixed.
    """


class StoreUnavailable(StoreError):
    """The database is out of reach for now (a restart, a network cut); try again."""


class StoreClosed(StoreError):
    """The store was closed (:meth:`Gateway.close`, or the end of its ``with`` block).

    A closed store stays closed: it does not quietly open new connections. Open a new
    ``Gateway`` (or store) to go on.
    """

    def __init__(self, where: str) -> None:
        super().__init__(
            f"{where}: this store is closed (Gateway.close() or the end of its with block closed it); "
            "open a new Gateway or store to go on"
        )


class SchemaMissing(StoreError):
    """The PostgreSQL schema a store was opened in does not exist (and it was not to create it)."""

    def __init__(self, schema: str) -> None:
        self.schema = schema
        super().__init__(
            f"the PostgreSQL schema {schema!r} does not exist in this database: create it with "
            f"`parkgate migrate` (PARKGATE_PG_SCHEMA={schema}) or by opening the store with "
            "migrate=True, or fix the name"
        )


class StoreConflict(StoreError):
    """A unique key said no (a racing worker parked or recorded first); retry the unit."""


@dataclass(frozen=True, slots=True)
class Run:
    """One run: the asks parked under one id, a workflow's answers, and how it ended."""

    id: str
    conversation_id: str
    workflow: str | None
    status: RunStatus
    outcome: str | None
    context: dict[str, Any]
    pending_ask_id: str | None
    created_at: datetime
    updated_at: datetime
    #: Who started it (the HTTP token's name; ``None`` for the library or a server
    #: without named tokens): only its owner parks in it.
    owner: str | None = None


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


class CallbackStatus(enum.Enum):
    """Where an ask's callback stands."""

    #: Not sent yet: the ask is open, or its callback waits for (another) attempt.
    PENDING = "pending"
    DELIVERED = "delivered"
    #: Given up on: attempts ran out, or the URL can never be sent to. An operator re-arms it.
    FAILED = "failed"


@dataclass(frozen=True, slots=True)
class CallbackState:
    """An ask's callback as the outbox has it (``attempts`` 0 and no times while unsent)."""

    status: CallbackStatus
    attempts: int = 0
    last_error: str | None = None
    next_attempt_at: datetime | None = None


class Transaction(ABC):
    """The reads and writes of one inbound message, committed together."""

    @abstractmethod
    def open_ask(self, conversation_id: str) -> Ask | None:
        """The conversation's open ask, locked for this transaction.

        A store may answer this (and :meth:`message_context`) from what its process last
        committed, checking the answer only at commit: then a wrong answer makes the
        commit raise :class:`StoreConflict` and nothing is written, so the caller's unit
        of work must be one that it retries (as the gateway's are).
        """

    def message_context(self, conversation_id: str, message_id: str | None) -> tuple[str | None, Ask | None]:
        """Both reads of an inbound message: ``(stored reply, None)`` for a ``message_id``
        seen before, else ``(None, the conversation's open ask, locked)``.

        SQL stores answer with one statement; this default makes the two calls.
        """
        if message_id is not None:
            earlier = self.reply_for(conversation_id, message_id)
            if earlier is not None:
                return earlier, None
        return None, self.open_ask(conversation_id)

    @abstractmethod
    def ask(self, ask_id: str) -> Ask | None:
        """Any ask by id (open or closed), locked for this transaction."""

    @abstractmethod
    def run(self, run_id: str) -> Run | None: ...

    @abstractmethod
    def write(self, writes: Writes) -> None:
        """Apply everything this unit of work writes, in the engine's fastest form.

        A store that answered a read from memory may hold the writes back until the
        commit, and then checks that memory with them (see :mod:`parkgate.store.recent`).
        """

    @abstractmethod
    def reply_for(self, conversation_id: str, message_id: str) -> str | None:
        """The stored reply (JSON) of a message seen before, else ``None``."""

    @abstractmethod
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

    @abstractmethod
    def count_pending_callbacks(self, owner: str) -> int:
        """How many of ``owner``'s callbacks are queued and neither delivered nor failed."""

    @abstractmethod
    def callback_done(self, callback_id: int, now: datetime) -> None: ...

    def callbacks_done(self, callback_ids: list[int], now: datetime) -> None:
        """:meth:`callback_done` for several rows (an engine may write them as one statement)."""
        for callback_id in callback_ids:
            self.callback_done(callback_id, now)

    @abstractmethod
    def callback_failed(self, callback_id: int, error: str, retry_at: datetime | None) -> None:
        """Record a failed attempt; ``retry_at`` ``None`` gives the callback up (``failed``)."""

    @abstractmethod
    def callback_states(self, ask_ids: list[str]) -> dict[str, CallbackState]:
        """The latest callback of each of these asks that has one queued."""

    @abstractmethod
    def failed_callback_asks(self, limit: int) -> list[str]:
        """The ids of asks whose callback failed, the latest failure first."""

    @abstractmethod
    def rearm_callback(self, ask_id: str, now: datetime) -> bool:
        """Make a failed callback of ``ask_id`` due now with its attempts reset; whether one was."""

    @abstractmethod
    def next_callback_at(self, full_hosts: Collection[str] = ()) -> datetime | None:
        """When the earliest callback still to send is due (``None``: none), leaving out
        the callbacks to ``full_hosts`` (hosts a deliverer sends no more to at present)."""

    @abstractmethod
    def callback_counts(self) -> dict[CallbackStatus, int]:
        """How many callbacks are pending and failed (delivered ones are not counted)."""

    @abstractmethod
    def open_asks(
        self, limit: int | None = None, *, after: tuple[datetime, str] | None = None, owner: str | None = None
    ) -> list[Ask]:
        """Open asks, oldest first (ordered by ``asked_at`` then id, on the partial index).

        ``after`` (an ask's ``(asked_at, id)``) starts the list after that ask: a page's
        last ask gives the next page. ``owner`` keeps only the asks parked by that owner.
        """

    @abstractmethod
    def count_open_asks(self, owner: str | None = None) -> int:
        """How many asks are open (no rows are loaded), or only ``owner``'s."""

    @abstractmethod
    def ask_gauges(self, now: datetime) -> AskGauges:
        """The open, overdue and unread-due figures as of ``now`` (the metrics gauges)."""

    @abstractmethod
    def due_asks(self, now: datetime, limit: int) -> list[Ask]:
        """Open asks something waits on whose due time is ``now`` or earlier, earliest
        first, locked for this transaction; rows another transaction holds are skipped."""

    @abstractmethod
    def next_due(self) -> datetime | None:
        """The earliest due time among open asks something waits on (``None``: none)."""

    @abstractmethod
    def closed_follow_ups(self, now: datetime, limit: int) -> list[Ask]:
        """Closed asks whose follow-up is neither done nor claimed past ``now``, earliest
        close first."""

    @abstractmethod
    def claim_follow_up(self, ask_id: str, now: datetime, until: datetime) -> bool:
        """Lease ``ask_id``'s follow-up until ``until`` if it is pending and unclaimed (or its
        claim ran out by ``now``); whether this call took it."""

    @abstractmethod
    def follow_up_done(self, ask_id: str, now: datetime) -> None:
        """Mark ``ask_id``'s follow-up done: it is never listed or claimed again."""

    @abstractmethod
    def beat(self, deliverer_id: str, now: datetime) -> None:
        """Stamp a running deliverer's heartbeat."""

    @abstractmethod
    def stop_beating(self, deliverer_id: str) -> None:
        """Remove a deliverer that stops cleanly."""

    @abstractmethod
    def last_beat(self) -> datetime | None:
        """The latest heartbeat of any deliverer on this database (``None``: never)."""


class Store(ABC):
    """A durable home for asks. Implementations: SQLite and PostgreSQL."""

    url: str
    #: The migrations this store object applied (on opening, or by :meth:`migrate`).
    applied: list[int]

    @abstractmethod
    def transaction(self) -> AbstractContextManager[Transaction]:
        """One unit of work; commits on success, rolls back on any exception."""

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

    def watch(self, signal: CloseSignal) -> Watcher | None:
        """Start feeding ``signal`` with other processes' commits; ``None``: this store cannot."""
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
        """:meth:`Transaction.claim_callbacks` in a transaction of its own."""
        with self.transaction() as tx:
            return tx.claim_callbacks(now, lease_until, limit, per_host, in_flight)

    def callback_done(self, callback_id: int, now: datetime) -> None:
        with self.transaction() as tx:
            tx.callback_done(callback_id, now)

    def callbacks_done(self, callback_ids: list[int], now: datetime) -> None:
        """Mark delivered rows in one transaction: a deliverer's batch, one commit."""
        with self.transaction() as tx:
            tx.callbacks_done(callback_ids, now)

    def callback_failed(self, callback_id: int, error: str, retry_at: datetime | None) -> None:
        with self.transaction() as tx:
            tx.callback_failed(callback_id, error, retry_at)

    def next_callback_at(self, full_hosts: Collection[str] = ()) -> datetime | None:
        with self.transaction() as tx:
            return tx.next_callback_at(full_hosts)

    @abstractmethod
    def close(self) -> None: ...

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def iter_migrations(engine: str) -> Iterator[tuple[int, str]]:
    """(version, sql) for ``engine`` ('sqlite' or 'postgres'), in order."""
    from importlib.resources import files

    folder = files("parkgate.store.migrations")
    found: list[tuple[int, str]] = []
    for entry in folder.iterdir():
        name = entry.name
        if name.endswith(f".{engine}.sql"):
            found.append((int(name.split("_", 1)[0]), entry.read_text(encoding="utf-8")))
    yield from sorted(found)


@dataclass(frozen=True, slots=True)
class MigrationTable:
    """How an engine keeps the versions applied: its table, and the statement that records one."""

    engine: str
    create: str
    record: str


def apply_migrations(
    query: Callable[[str, tuple[Any, ...]], Iterable[Sequence[Any]]],
    run_script: Callable[[str], object],
    table: MigrationTable,
) -> list[int]:
    """Apply the migrations not recorded yet, in order; return their versions.

    The caller holds the engine's migration lock and transaction: ``query`` runs one
    statement, ``run_script`` one migration file.
    """
    query(table.create, ())
    done = {row[0] for row in query("SELECT version FROM schema_migrations", ())}
    applied: list[int] = []
    for version, script in iter_migrations(table.engine):
        if version in done:
            continue
        run_script(script)
        query(table.record, (version,))
        applied.append(version)
    return applied
