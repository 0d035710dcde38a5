"""The SQL both engines share. Each engine supplies a :class:`Dialect`.

Statements are written once with ``?`` placeholders; the dialect rewrites them for
its driver. Every value travels as a parameter, never spliced into the text.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import cached_property, lru_cache
from typing import Any

from parkgate.core import expect as expected_form
from parkgate.core.model import MENUS_REMEMBERED, Ask, AskKind, AskStatus, RunStatus
from parkgate.store.base import (
    AskGauges,
    CallbackStatus,
    Run,
    Transaction,
)
from parkgate.store.outbox_sql import OutboxSql
from parkgate.store.writes import NewAsk, QueuedCallback, RunChange, StoredReply, Writes

ASK_COLUMNS = (
    "id, conversation_id, run_id, kind, prompt, options, status, outcome, answer, "
    "option_index, asked_at, last_touched, answered_at, mismatches, ttl_seconds, phase, "
    "default_answer, callback_url, due_at, context, owner, expect"
)
#: What a step may change in an ask besides its status (``save_ask`` writes these).
MUTABLE_ASK_SET = "outcome = ?, answer = ?, option_index = ?, last_touched = ?, answered_at = ?, mismatches = ?"
RUN_COLUMNS = "id, conversation_id, workflow, status, outcome, context, pending_ask_id, created_at, updated_at, owner"


@dataclass(frozen=True)
class Dialect:
    placeholder: str  # "?" or "%s"
    lock_suffix: str  # "" or " FOR UPDATE"
    encode_time: Callable[[datetime], Any]
    decode_time: Callable[[Any], datetime]
    #: ``due_at`` as stored (Unix seconds on SQLite, a timestamp on PostgreSQL), both ways.
    encode_due: Callable[[datetime], Any]
    decode_due: Callable[[Any], datetime]
    #: An ask row's due time computed from its columns, in ``due_at``'s form.
    due_expression: str
    #: The lock of the due read: rows another worker is reading are skipped, not waited for.
    skip_locked_suffix: str

    # The locked reads, built once per dialect: they run on every message, and an f-string
    # rebuilt per call is a new string each time (hashed again by the statement cache).
    @cached_property
    def open_ask_sql(self) -> str:
        return f"SELECT {ASK_COLUMNS} FROM asks WHERE conversation_id = ? AND status = 'open'" + self.lock_suffix

    @cached_property
    def message_context_sql(self) -> str:
        # One statement for both reads of a message: its stored reply (a redelivery) and
        # the conversation's open ask, locked. The LEFT JOIN keeps the row when no ask is open.
        return (
            "SELECT (SELECT reply FROM inbound_messages WHERE conversation_id = ? AND message_id = ?), a.* "
            f"FROM (SELECT 1) AS one LEFT JOIN ({self.open_ask_sql}) AS a ON 1 = 1"
        )

    @cached_property
    def ask_by_id_sql(self) -> str:
        return f"SELECT {ASK_COLUMNS} FROM asks WHERE id = ?" + self.lock_suffix

    @cached_property
    def due_asks_sql(self) -> str:
        return (
            f"SELECT {ASK_COLUMNS} FROM asks WHERE status = 'open' AND due_at IS NOT NULL AND due_at <= ? "
            "ORDER BY due_at LIMIT ?" + self.skip_locked_suffix
        )

    @cached_property
    def gauges_sql(self) -> str:
        # Open asks not past their TTL, open asks past it, and the earliest due time that
        # has passed among the asks something waits on (a due read should have closed it).
        overdue = f"{self.due_expression} < ?"
        return (
            f"SELECT count(*) FILTER (WHERE NOT ({overdue})), count(*) FILTER (WHERE {overdue}), "
            "min(due_at) FILTER (WHERE due_at IS NOT NULL AND due_at < ?) FROM asks WHERE status = 'open'"
        )

    def sql(self, statement: str) -> str:
        if self.placeholder == "?":
            return statement
        rewritten = _rewritten.get(statement)
        if rewritten is None:
            rewritten = _rewritten[statement] = statement.replace("?", self.placeholder)
        return rewritten


#: Statements are a fixed set of literals, so their rewrite for "%s" drivers is cached.
_rewritten: dict[str, str] = {}


#: Stored value -> enum member, by dict lookup (an Enum call costs more, on every row read).
_KINDS: dict[str, AskKind] = {member.value: member for member in AskKind}
_STATUSES: dict[str, AskStatus] = {member.value: member for member in AskStatus}
_RUN_STATUSES: dict[str, RunStatus] = {member.value: member for member in RunStatus}


# Options never change after an ask is parked, and the same few menus are parked over
# and over: each distinct list is encoded and decoded once.
@lru_cache(maxsize=MENUS_REMEMBERED)
def _encode_options(options: tuple[str, ...]) -> str:
    return json.dumps(list(options), ensure_ascii=False)


@lru_cache(maxsize=MENUS_REMEMBERED)
def _decode_options(raw: str) -> tuple[str, ...]:
    return tuple(json.loads(raw))


def _decode_context(raw: str) -> dict[str, Any]:
    value = json.loads(raw)
    return value if isinstance(value, dict) else {"value": value}


#: A statement and its parameters.
Statement = tuple[str, tuple[Any, ...]]


def mutable_fields(ask: Ask, dialect: Dialect) -> tuple[Any, ...]:
    """The values of :data:`MUTABLE_ASK_SET` for ``ask``, in its order."""
    encode = dialect.encode_time
    return (
        ask.outcome,
        ask.answer,
        ask.option_index,
        encode(ask.last_touched),
        encode(ask.answered_at) if ask.answered_at else None,
        ask.mismatches,
    )


def _ask_insert(ask: Ask, dialect: Dialect) -> Statement:
    encode = dialect.encode_time
    return (
        f"INSERT INTO asks ({ASK_COLUMNS}) VALUES ({', '.join('?' * 22)})",
        (
            ask.id,
            ask.conversation_id,
            ask.run_id,
            ask.kind.value,
            ask.prompt,
            _encode_options(tuple(ask.options)),  # an Ask built by hand may hold a list
            ask.status.value,
            ask.outcome,
            ask.answer,
            ask.option_index,
            encode(ask.asked_at),
            encode(ask.last_touched),
            encode(ask.answered_at) if ask.answered_at else None,
            ask.mismatches,
            ask.ttl_seconds,
            ask.phase,
            ask.default,
            ask.callback_url,
            dialect.encode_due(ask.due_at) if ask.watched else None,
            json.dumps(ask.context, ensure_ascii=False) if ask.context is not None else None,
            ask.owner,
            expected_form.to_json(ask.expect) if ask.expect is not None else None,
        ),
    )


def _run_upsert(run: Run, dialect: Dialect) -> Statement:
    encode = dialect.encode_time
    return (
        f"INSERT INTO runs ({RUN_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
        "ON CONFLICT (id) DO UPDATE SET status = excluded.status, outcome = excluded.outcome, "
        "context = excluded.context, pending_ask_id = excluded.pending_ask_id, "
        "updated_at = excluded.updated_at",
        (
            run.id,
            run.conversation_id,
            run.workflow,
            _stored_status(run.status),
            run.outcome,
            json.dumps(run.context, ensure_ascii=False) if run.context else "{}",
            run.pending_ask_id,
            encode(run.created_at),
            encode(run.updated_at),
            run.owner,
        ),
    )


def _stored_status(status: object) -> object:
    """A run status as the driver binds it fastest: the enum's plain string value."""
    return status.value if isinstance(status, RunStatus) else status


def run_change_values(change: RunChange, dialect: Dialect) -> tuple[Any, ...]:
    """A run change's values: id, status, outcome, pending ask, time (``parkgate_step``'s order)."""
    status = _stored_status(change.status)
    return (change.run_id, status, change.outcome, change.pending_ask_id, dialect.encode_time(change.at))


def _run_change(change: RunChange, dialect: Dialect) -> Statement:
    status = _stored_status(change.status)
    return (
        "UPDATE runs SET status = ?, outcome = ?, pending_ask_id = ?, updated_at = ? WHERE id = ?",
        (status, change.outcome, change.pending_ask_id, dialect.encode_time(change.at), change.run_id),
    )


def _reply_insert(reply: StoredReply, dialect: Dialect) -> Statement:
    return (
        "INSERT INTO inbound_messages (conversation_id, message_id, reply, received_at) VALUES (?, ?, ?, ?)",
        (reply.conversation_id, reply.message_id, reply.reply, dialect.encode_time(reply.at)),
    )


def _callback_insert(callback: QueuedCallback, dialect: Dialect) -> Statement:
    queued_at = dialect.encode_time(callback.at)
    return (
        "INSERT INTO outbox (ask_id, url, payload, next_attempt_at, created_at, host, owner) "
        "VALUES (?, ?, ?, ?, ?, ?, ?)",
        (callback.ask_id, callback.url, callback.payload, queued_at, queued_at, callback.host, callback.owner),
    )


def _follow_up_insert(ask_id: str) -> Statement:
    return "INSERT INTO follow_ups (ask_id) VALUES (?)", (ask_id,)


class SqlTransaction(OutboxSql, Transaction):
    def __init__(self, cursor: Any, dialect: Dialect) -> None:
        self._cur = cursor
        self._dialect = dialect

    def _exec(self, statement: str, params: Sequence[Any] = ()) -> Any:
        """Run a statement whose result the caller reads (on ``self._cur``)."""
        return self._cur.execute(self._dialect.sql(statement), params)

    def _write(self, statement: str, params: Sequence[Any] = ()) -> None:
        """Run a statement whose result nobody reads; an engine may defer it (see PostgreSQL)."""
        self._exec(statement, params)

    def _ask_from_row(self, row: Sequence[Any]) -> Ask:
        decode = self._dialect.decode_time
        return Ask(
            id=row[0],
            conversation_id=row[1],
            run_id=row[2],
            kind=_KINDS[row[3]],
            prompt=row[4],
            options=_decode_options(row[5]),
            status=_STATUSES[row[6]],
            outcome=row[7],
            answer=row[8],
            option_index=row[9],
            asked_at=decode(row[10]),
            last_touched=decode(row[11]),
            answered_at=decode(row[12]) if row[12] is not None else None,
            mismatches=row[13],
            ttl_seconds=float(row[14]),
            phase=row[15],
            default=row[16],
            callback_url=row[17],
            watched=row[18] is not None,
            context=_decode_context(row[19]) if row[19] is not None else None,
            owner=row[20],
            expect=expected_form.from_json(row[21]) if row[21] is not None else None,
        )

    def open_ask(self, conversation_id: str) -> Ask | None:
        return self._read_open_ask(conversation_id)

    def _read_open_ask(self, conversation_id: str) -> Ask | None:
        """The open ask as the database has it (never answered from a store's memory)."""
        self._exec(self._dialect.open_ask_sql, (conversation_id,))
        row = self._cur.fetchone()
        return self._ask_from_row(row) if row else None

    def message_context(self, conversation_id: str, message_id: str | None) -> tuple[str | None, Ask | None]:
        if message_id is None:
            return None, self._read_open_ask(conversation_id)
        self._exec(self._dialect.message_context_sql, (conversation_id, message_id, conversation_id))
        row = self._cur.fetchone()
        earlier = row[0]
        if earlier is not None:
            return str(earlier), None
        return None, (self._ask_from_row(row[1:]) if row[1] is not None else None)

    def ask(self, ask_id: str) -> Ask | None:
        self._exec(self._dialect.ask_by_id_sql, (ask_id,))
        row = self._cur.fetchone()
        return self._ask_from_row(row) if row else None

    # -- writes -----------------------------------------------------------------------
    def write(self, writes: Writes) -> None:
        """Apply ``writes`` statement by statement, in the order :class:`Writes` gives."""
        for step in writes.steps:
            self.save_ask(step.ask)
            if step.run is not None:
                self._write(*_run_change(step.run, self._dialect))
        for run in writes.runs:
            self.save_run(run)
        if writes.park is not None:
            self.save_run(writes.park.run)
            self.insert_ask(writes.park.ask)
            if writes.park.follow_up:
                self.insert_follow_up(writes.park.ask.id)
        if writes.reply is not None:
            self._write(*_reply_insert(writes.reply, self._dialect))
        for callback in writes.callbacks:
            self._write(*_callback_insert(callback, self._dialect))

    def _park_statements(self, park: NewAsk) -> list[Statement]:
        """The statements of a new ask: its run (inserted or updated), the ask, its follow-up."""
        statements = [_run_upsert(park.run, self._dialect), _ask_insert(park.ask, self._dialect)]
        if park.follow_up:
            statements.append(_follow_up_insert(park.ask.id))
        return statements

    # The single writes below serve :meth:`write` and a caller loading rows in bulk.
    def insert_ask(self, ask: Ask) -> None:
        self._write(*_ask_insert(ask, self._dialect))

    def save_ask(self, ask: Ask) -> None:
        """Write the mutable fields of ``ask`` (status, answer, counters, stamps)."""
        self._write(
            f"UPDATE asks SET status = ?, {MUTABLE_ASK_SET} WHERE id = ?",
            (ask.status.value, *mutable_fields(ask, self._dialect), ask.id),
        )

    def run(self, run_id: str) -> Run | None:
        self._exec(f"SELECT {RUN_COLUMNS} FROM runs WHERE id = ?", (run_id,))
        row = self._cur.fetchone()
        if not row:
            return None
        decode = self._dialect.decode_time
        status = _RUN_STATUSES[row[3]]
        context = json.loads(row[5])
        return Run(row[0], row[1], row[2], status, row[4], context, row[6], decode(row[7]), decode(row[8]), row[9])

    def save_run(self, run: Run) -> None:
        """Insert ``run``, or update its status, outcome, answers and pending ask."""
        self._write(*_run_upsert(run, self._dialect))

    def reply_for(self, conversation_id: str, message_id: str) -> str | None:
        self._exec(
            "SELECT reply FROM inbound_messages WHERE conversation_id = ? AND message_id = ?",
            (conversation_id, message_id),
        )
        row = self._cur.fetchone()
        return str(row[0]) if row else None

    def insert_follow_up(self, ask_id: str) -> None:
        self._write(*_follow_up_insert(ask_id))

    def count_open_asks(self, owner: str | None = None) -> int:
        if owner is None:
            self._exec("SELECT count(*) FROM asks WHERE status = 'open'")
        else:
            self._exec("SELECT count(*) FROM asks WHERE status = 'open' AND owner = ?", (owner,))
        return int(self._cur.fetchone()[0])

    def ask_gauges(self, now: datetime) -> AskGauges:
        due_now = self._dialect.encode_due(now)
        self._exec(self._dialect.gauges_sql, (due_now, due_now, due_now))
        live, overdue, earliest = self._cur.fetchone()
        late = (now - self._dialect.decode_due(earliest)).total_seconds() if earliest is not None else 0.0
        callbacks = self.callback_counts()
        return AskGauges(
            open=int(live),
            overdue=int(overdue),
            oldest_unread_due_seconds=late,
            callbacks_pending=callbacks[CallbackStatus.PENDING],
            callbacks_failed=callbacks[CallbackStatus.FAILED],
        )

    def due_asks(self, now: datetime, limit: int) -> list[Ask]:
        self._exec(self._dialect.due_asks_sql, (self._dialect.encode_due(now), limit))
        return [self._ask_from_row(row) for row in self._cur.fetchall()]

    def next_due(self) -> datetime | None:
        self._exec("SELECT min(due_at) FROM asks WHERE status = 'open' AND due_at IS NOT NULL")
        earliest = self._cur.fetchone()[0]
        return self._dialect.decode_due(earliest) if earliest is not None else None

    def closed_follow_ups(self, now: datetime, limit: int) -> list[Ask]:
        self._exec(
            f"SELECT {ASK_COLUMNS} FROM asks WHERE status <> 'open' AND id IN ("
            "SELECT ask_id FROM follow_ups WHERE done_at IS NULL AND (claimed_until IS NULL OR claimed_until < ?)"
            ") ORDER BY answered_at, id LIMIT ?",
            (self._dialect.encode_time(now), limit),
        )
        return [self._ask_from_row(row) for row in self._cur.fetchall()]

    def open_asks(
        self, limit: int | None = None, *, after: tuple[datetime, str] | None = None, owner: str | None = None
    ) -> list[Ask]:
        conditions = ["status = 'open'"]
        params: list[Any] = []
        if after is not None:
            conditions.append("(asked_at > ? OR (asked_at = ? AND id > ?))")
            stamp = self._dialect.encode_time(after[0])
            params += [stamp, stamp, after[1]]
        if owner is not None:
            conditions.append("owner = ?")
            params.append(owner)
        statement = f"SELECT {ASK_COLUMNS} FROM asks WHERE {' AND '.join(conditions)} ORDER BY asked_at, id"
        if limit is not None:
            statement += " LIMIT ?"
            params.append(limit)
        self._exec(statement, params)
        return [self._ask_from_row(row) for row in self._cur.fetchall()]
