"""The event log in SQL (``ask_events``), written once for both engines: the inserts a
unit of work sends with its change, and :class:`~parkgate.store.base.EventLog` on an
engine's transaction.

An event's ``seq`` is one more than its ask's last, read in the statement that inserts
it; ``(ask_id, seq)`` is unique, so two transactions that number the same event fail one
of them (a conflict, retried) rather than log two events with one number. Writers of one
ask's events hold its row: a message, a close or a fired schedule update the row first,
and a write outside such a unit (a delivery, a channel post) locks it before it numbers
(:meth:`SqlEventLog.record`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

from parkgate.core.events import EventKind, LoggedEvent, NewEvent
from parkgate.core.kinds import ReplyKind
from parkgate.store.dialect import Dialect, Runner, Statement
from parkgate.store.sql import encoded_data, event_insert

_COLUMNS = "id, ask_id, seq, at, type, sender, owner, data"
#: A miss's whole ``data``, as :func:`~parkgate.store.sql.encoded_data` writes it (a miss keeps its kind alone).
_MISS_DATA = ", ".join(f"'{encoded_data({'kind': kind})}'" for kind in (ReplyKind.RETRY, ReplyKind.ESCALATED))
#: Ask ids per statement of :meth:`SqlEventLog.misses_of`.
_BATCH = 500
#: Events inserted per statement by :meth:`SqlEventLog.record` on PostgreSQL (8 parameters
#: each, well under its 65,535).
RECORD_CHUNK = 1024


def events_insert_in_one_snapshot(events: Sequence[NewEvent], dialect: Dialect) -> Statement:
    """One INSERT of all ``events`` (PostgreSQL), to ride in a statement with the change
    they record: its rows share one snapshot, so each ask's are numbered one after
    another from its last, and are inserted in the order given (their ``id`` order)."""
    written: dict[str, int] = {}
    rows, params = [], []
    for position, event in enumerate(events):
        offset = written[event.ask_id] = written.get(event.ask_id, 0) + 1
        rows.append("(?::int, ?, ?::int, ?::timestamptz, ?, ?::text, ?::text, ?)")
        params += [
            position,
            event.ask_id,
            offset,
            dialect.encode_time(event.at),
            event.type.value,
            event.sender,
            event.owner,
            encoded_data(event.data),
        ]
    statement = (
        "INSERT INTO ask_events (ask_id, seq, at, type, sender, owner, data) "
        "SELECT v.a, COALESCE((SELECT MAX(e.seq) FROM ask_events AS e WHERE e.ask_id = v.a), 0) + v.n, "
        f"v.t, v.k, v.s, v.o, v.d FROM (VALUES {', '.join(rows)}) AS v(p, a, n, t, k, s, o, d) ORDER BY v.p"
    )
    return statement, tuple(params)


def _event_from_row(row: Sequence[Any], dialect: Dialect) -> LoggedEvent:
    ident, ask_id, seq, at, kind, sender, owner, data = row
    return LoggedEvent(
        seq=int(seq),
        at=dialect.decode_time(at),
        type=EventKind(kind),
        ask_id=ask_id,
        sender=sender,
        data=json.loads(data) if data else {},
        id=int(ident),
        owner=owner,
    )


class SqlEventLog:
    """:class:`~parkgate.store.base.EventLog` on an engine's transaction."""

    __slots__ = ("_run",)

    def __init__(self, runner: Runner) -> None:
        self._run = runner

    def record(self, events: Iterable[NewEvent]) -> None:
        """Write ``events`` of asks this transaction has not changed (a delivery, a post):
        their asks' rows are read in one statement, locked on an engine that locks rows,
        so each ask's events are numbered one writer at a time; an event whose ``owner``
        is ``None`` is given its ask's (a deliverer knows an ask by its id only)."""
        run, dialect = self._run, self._run.dialect
        events = list(events)
        if not events:
            return
        ask_ids = sorted({event.ask_id for event in events})
        marks = ", ".join("?" * len(ask_ids))
        # Locked in id order (two writers of the same asks wait for each other, never
        # deadlock), and not against a key's readers (a row inserted that refers to the ask).
        lock = " FOR NO KEY UPDATE" if dialect.lock_suffix else ""  # SQLite's one writer needs no row lock
        rows = run.query(
            f"SELECT id, owner FROM asks WHERE id IN ({marks}) ORDER BY id{lock}", tuple(ask_ids)
        ).fetchall()
        owners = {ask_id: owner for ask_id, owner in rows}
        events = [
            event._replace(owner=owners[event.ask_id]) if event.owner is None and owners.get(event.ask_id) else event
            for event in events
        ]
        if not lock:  # SQLite: in process, an insert each costs next to nothing
            for event in events:
                run.send(*event_insert(event, dialect))
            return
        # PostgreSQL: a statement per chunk of events (a batch of marks, one round trip).
        for start in range(0, len(events), RECORD_CHUNK):
            run.send(*events_insert_in_one_snapshot(events[start : start + RECORD_CHUNK], dialect))

    def of_ask(self, ask_id: str) -> list[LoggedEvent]:
        """``ask_id``'s events in order (its timeline)."""
        run = self._run
        rows = run.query(f"SELECT {_COLUMNS} FROM ask_events WHERE ask_id = ? ORDER BY seq", (ask_id,)).fetchall()
        return [_event_from_row(row, run.dialect) for row in rows]

    def between(
        self, since: datetime | None, until: datetime | None, limit: int, after_id: int = 0, owner: str | None = None
    ) -> list[LoggedEvent]:
        """Events with ``since <= at < until`` (either open-ended) after ``after_id``, in
        order of ``id``, at most ``limit`` (a follower's or an export's page; with
        ``owner``, only the events of that owner's asks)."""
        run, dialect = self._run, self._run.dialect
        where, params = ["id > ?"], list[Any]([after_id])
        if since is not None:
            where.append("at >= ?")
            params.append(dialect.encode_time(since))
        if until is not None:
            where.append("at < ?")
            params.append(dialect.encode_time(until))
        if owner is not None:
            where.append("owner = ?")
            params.append(owner)
        statement = f"SELECT {_COLUMNS} FROM ask_events WHERE {' AND '.join(where)} ORDER BY id LIMIT ?"
        rows = run.query(statement, (*params, limit)).fetchall()
        return [_event_from_row(row, dialect) for row in rows]

    def misses_of(self, ask_ids: Sequence[str]) -> dict[str, int]:
        """How many messages each of ``ask_ids`` took that were no answer (``touched``
        events of kind ``retry`` or ``escalated``), by ask id; an ask with none is left out."""
        run, counts = self._run, dict[str, int]()
        for start in range(0, len(ask_ids), _BATCH):
            batch = ask_ids[start : start + _BATCH]
            rows = run.query(
                f"SELECT ask_id, COUNT(*) FROM ask_events WHERE ask_id IN ({', '.join('?' * len(batch))}) "
                f"AND type = 'touched' AND data IN ({_MISS_DATA}) GROUP BY ask_id",
                tuple(batch),
            ).fetchall()
            counts.update({str(ask_id): int(count) for ask_id, count in rows})
        return counts

    def last_id(self) -> int:
        """The id of the latest event (0: none)."""
        row = self._run.query("SELECT MAX(id) FROM ask_events").fetchone()
        return int(row[0]) if row and row[0] is not None else 0

    def prune(self, before: datetime) -> int:
        """Delete the events older than ``before`` of asks that are closed (an open ask's
        events are never pruned); how many were deleted. The newest event stays: the log's
        ids count on from it (SQLite hands out one more than the largest id left)."""
        run = self._run
        delete = (
            "DELETE FROM ask_events WHERE at < ? AND id < (SELECT MAX(id) FROM ask_events) AND NOT EXISTS "
            "(SELECT 1 FROM asks WHERE asks.id = ask_events.ask_id AND asks.status = 'open')"
        )
        moment = (run.dialect.encode_time(before),)
        if not run.dialect.lock_suffix:  # SQLite: no DELETE in a WITH; its cursor counts the rows
            return int(run.query(delete, moment).rowcount)
        # PostgreSQL's pipelined cursor has no row count: the rows deleted are counted instead.
        found = run.query(f"WITH gone AS ({delete} RETURNING 1) SELECT COUNT(*) FROM gone", moment).fetchone()
        return int(found[0])
