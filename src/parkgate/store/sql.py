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
from parkgate.core.model import MENUS_REMEMBERED, Ask, AskKind, AskStatus
from parkgate.store.base import (
    AskGauges,
    Callback,
    CallbackState,
    CallbackStatus,
    Run,
    StoreConflict,
    StoreError,
    Transaction,
)
from parkgate.store.recent import STALE, Marker, RecentOpenAsks

ASK_COLUMNS = (
    "id, conversation_id, run_id, kind, prompt, options, status, outcome, answer, "
    "option_index, asked_at, last_touched, answered_at, mismatches, ttl_seconds, phase, "
    "default_answer, callback_url, due_at, context, owner, expect"
)
#: What a step may change in an ask besides its status (``save_ask`` writes these).
MUTABLE_ASK_SET = "outcome = ?, answer = ?, option_index = ?, last_touched = ?, answered_at = ?, mismatches = ?"
#: Outbox rows marked delivered per statement (a power of two, below SQLite's parameter limit).
MARK_CHUNK = 512
RUN_COLUMNS = "id, conversation_id, workflow, status, outcome, context, pending_ask_id, created_at, updated_at"


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


class SqlTransaction(Transaction):
    def __init__(self, cursor: Any, dialect: Dialect) -> None:
        self._cur = cursor
        self._d = dialect

    def _exec(self, statement: str, params: Sequence[Any] = ()) -> Any:
        """Run a statement whose result the caller reads (on ``self._cur``)."""
        return self._cur.execute(self._d.sql(statement), params)

    def _write(self, statement: str, params: Sequence[Any] = ()) -> None:
        """Run a statement whose result nobody reads; an engine may defer it (see PostgreSQL)."""
        self._exec(statement, params)

    def _ask_from_row(self, row: Sequence[Any]) -> Ask:
        t = self._d.decode_time
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
            asked_at=t(row[10]),
            last_touched=t(row[11]),
            answered_at=t(row[12]) if row[12] is not None else None,
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
        self._exec(self._d.open_ask_sql, (conversation_id,))
        row = self._cur.fetchone()
        return self._ask_from_row(row) if row else None

    def message_context(self, conversation_id: str, message_id: str | None) -> tuple[str | None, Ask | None]:
        if message_id is None:
            return None, self._read_open_ask(conversation_id)
        self._exec(self._d.message_context_sql, (conversation_id, message_id, conversation_id))
        row = self._cur.fetchone()
        earlier = row[0]
        if earlier is not None:
            return str(earlier), None
        return None, (self._ask_from_row(row[1:]) if row[1] is not None else None)

    def ask(self, ask_id: str) -> Ask | None:
        self._exec(self._d.ask_by_id_sql, (ask_id,))
        row = self._cur.fetchone()
        return self._ask_from_row(row) if row else None

    def insert_ask(self, ask: Ask) -> None:
        t = self._d.encode_time
        self._write(
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
                t(ask.asked_at),
                t(ask.last_touched),
                t(ask.answered_at) if ask.answered_at else None,
                ask.mismatches,
                ask.ttl_seconds,
                ask.phase,
                ask.default,
                ask.callback_url,
                self._d.encode_due(ask.due_at) if ask.watched else None,
                json.dumps(ask.context, ensure_ascii=False) if ask.context is not None else None,
                ask.owner,
                expected_form.to_json(ask.expect) if ask.expect is not None else None,
            ),
        )

    def save_ask(self, ask: Ask) -> None:
        self._write(
            f"UPDATE asks SET status = ?, {MUTABLE_ASK_SET} WHERE id = ?",
            (ask.status.value, *self._mutable_fields(ask), ask.id),
        )

    def _mutable_fields(self, ask: Ask) -> tuple[Any, ...]:
        """The values of :data:`MUTABLE_ASK_SET`, in its order."""
        t = self._d.encode_time
        return (
            ask.outcome,
            ask.answer,
            ask.option_index,
            t(ask.last_touched),
            t(ask.answered_at) if ask.answered_at else None,
            ask.mismatches,
        )

    def run(self, run_id: str) -> Run | None:
        self._exec(f"SELECT {RUN_COLUMNS} FROM runs WHERE id = ?", (run_id,))
        row = self._cur.fetchone()
        if not row:
            return None
        t = self._d.decode_time
        return Run(row[0], row[1], row[2], row[3], row[4], json.loads(row[5]), row[6], t(row[7]), t(row[8]))

    def save_run(self, run: Run) -> None:
        t = self._d.encode_time
        self._write(
            f"INSERT INTO runs ({RUN_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) "
            "ON CONFLICT (id) DO UPDATE SET status = excluded.status, outcome = excluded.outcome, "
            "context = excluded.context, pending_ask_id = excluded.pending_ask_id, "
            "updated_at = excluded.updated_at",
            (
                run.id,
                run.conversation_id,
                run.workflow,
                run.status,
                run.outcome,
                json.dumps(run.context, ensure_ascii=False) if run.context else "{}",
                run.pending_ask_id,
                t(run.created_at),
                t(run.updated_at),
            ),
        )

    def set_run_state(
        self, run_id: str, status: str, outcome: str | None, pending_ask_id: str | None, now: datetime
    ) -> None:
        self._write(
            "UPDATE runs SET status = ?, outcome = ?, pending_ask_id = ?, updated_at = ? WHERE id = ?",
            (status, outcome, pending_ask_id, self._d.encode_time(now), run_id),
        )

    def reply_for(self, conversation_id: str, message_id: str) -> str | None:
        self._exec(
            "SELECT reply FROM inbound_messages WHERE conversation_id = ? AND message_id = ?",
            (conversation_id, message_id),
        )
        row = self._cur.fetchone()
        return str(row[0]) if row else None

    def remember_reply(self, conversation_id: str, message_id: str, reply: str, now: datetime) -> None:
        self._write(
            "INSERT INTO inbound_messages (conversation_id, message_id, reply, received_at) VALUES (?, ?, ?, ?)",
            (conversation_id, message_id, reply, self._d.encode_time(now)),
        )

    def enqueue_callback(self, ask_id: str, url: str, payload: str, now: datetime) -> None:
        t = self._d.encode_time(now)
        self._write(
            "INSERT INTO outbox (ask_id, url, payload, next_attempt_at, created_at) VALUES (?, ?, ?, ?, ?)",
            (ask_id, url, payload, t, t),
        )

    def claim_callbacks(self, now: datetime, lease_until: datetime, limit: int) -> list[Callback]:
        t = self._d.encode_time
        self._exec(
            "UPDATE outbox SET next_attempt_at = ? WHERE id IN (SELECT id FROM outbox WHERE delivered_at IS NULL "
            "AND failed_at IS NULL AND next_attempt_at <= ? ORDER BY next_attempt_at LIMIT ?"
            f"{self._d.skip_locked_suffix}) RETURNING id, ask_id, url, payload, attempts",
            (t(lease_until), t(now), limit),
        )
        return [Callback(*row) for row in self._cur.fetchall()]

    def callback_done(self, callback_id: int, now: datetime) -> None:
        self._write(
            "UPDATE outbox SET delivered_at = ?, attempts = attempts + 1 WHERE id = ?",
            (self._d.encode_time(now), callback_id),
        )

    def callbacks_done(self, callback_ids: list[int], now: datetime) -> None:
        for start in range(0, len(callback_ids), MARK_CHUNK):
            chunk = callback_ids[start : start + MARK_CHUNK]
            # Padded to a power of two with its last id: a few statement shapes, each prepared once.
            size = 1 << (len(chunk) - 1).bit_length()
            chunk += chunk[-1:] * (size - len(chunk))
            self._write(
                f"UPDATE outbox SET delivered_at = ?, attempts = attempts + 1 WHERE id IN ({', '.join('?' * size)})",
                (self._d.encode_time(now), *chunk),
            )

    def callback_failed(self, callback_id: int, error: str, retry_at: datetime | None) -> None:
        t = self._d.encode_time
        if retry_at is None:
            self._write(
                "UPDATE outbox SET attempts = attempts + 1, last_error = ?, failed_at = next_attempt_at WHERE id = ?",
                (error[:500], callback_id),
            )
        else:
            self._write(
                "UPDATE outbox SET attempts = attempts + 1, last_error = ?, next_attempt_at = ? WHERE id = ?",
                (error[:500], t(retry_at), callback_id),
            )

    def callback_states(self, ask_ids: list[str]) -> dict[str, CallbackState]:
        if not ask_ids:
            return {}
        marks = ", ".join("?" * len(ask_ids))
        self._exec(
            "SELECT ask_id, delivered_at, failed_at, attempts, last_error, next_attempt_at FROM outbox "
            f"WHERE ask_id IN ({marks}) ORDER BY id",
            tuple(ask_ids),
        )
        found: dict[str, CallbackState] = {}
        for ask_id, delivered, failed, attempts, error, next_at in self._cur.fetchall():
            status = (
                CallbackStatus.DELIVERED
                if delivered is not None
                else CallbackStatus.FAILED
                if failed is not None
                else CallbackStatus.PENDING
            )
            due = self._d.decode_time(next_at) if status is CallbackStatus.PENDING else None
            found[ask_id] = CallbackState(status, int(attempts), error, due)
        return found

    def failed_callback_asks(self, limit: int) -> list[str]:
        self._exec(
            "SELECT ask_id FROM outbox WHERE failed_at IS NOT NULL AND delivered_at IS NULL "
            "ORDER BY failed_at DESC, id DESC LIMIT ?",
            (limit,),
        )
        return [str(row[0]) for row in self._cur.fetchall()]

    def rearm_callback(self, ask_id: str, now: datetime) -> bool:
        self._exec(
            "UPDATE outbox SET failed_at = NULL, attempts = 0, next_attempt_at = ? "
            "WHERE ask_id = ? AND failed_at IS NOT NULL AND delivered_at IS NULL RETURNING id",
            (self._d.encode_time(now), ask_id),
        )
        return bool(self._cur.fetchall())

    def next_callback_at(self) -> datetime | None:
        self._exec("SELECT min(next_attempt_at) FROM outbox WHERE delivered_at IS NULL AND failed_at IS NULL")
        earliest = self._cur.fetchone()[0]
        return self._d.decode_time(earliest) if earliest is not None else None

    def callback_counts(self) -> dict[CallbackStatus, int]:
        self._exec(
            "SELECT count(*) FILTER (WHERE failed_at IS NULL), count(*) FILTER (WHERE failed_at IS NOT NULL) "
            "FROM outbox WHERE delivered_at IS NULL"
        )
        pending, failed = self._cur.fetchone()
        return {CallbackStatus.PENDING: int(pending), CallbackStatus.FAILED: int(failed)}

    def count_open_asks(self, owner: str | None = None) -> int:
        if owner is None:
            self._exec("SELECT count(*) FROM asks WHERE status = 'open'")
        else:
            self._exec("SELECT count(*) FROM asks WHERE status = 'open' AND owner = ?", (owner,))
        return int(self._cur.fetchone()[0])

    def ask_gauges(self, now: datetime) -> AskGauges:
        due_now = self._d.encode_due(now)
        self._exec(self._d.gauges_sql, (due_now, due_now, due_now))
        live, overdue, earliest = self._cur.fetchone()
        late = (now - self._d.decode_due(earliest)).total_seconds() if earliest is not None else 0.0
        callbacks = self.callback_counts()
        return AskGauges(
            open=int(live),
            overdue=int(overdue),
            oldest_unread_due_seconds=late,
            callbacks_pending=callbacks[CallbackStatus.PENDING],
            callbacks_failed=callbacks[CallbackStatus.FAILED],
        )

    def due_asks(self, now: datetime, limit: int) -> list[Ask]:
        self._exec(self._d.due_asks_sql, (self._d.encode_due(now), limit))
        return [self._ask_from_row(row) for row in self._cur.fetchall()]

    def next_due(self) -> datetime | None:
        self._exec("SELECT min(due_at) FROM asks WHERE status = 'open' AND due_at IS NOT NULL")
        earliest = self._cur.fetchone()[0]
        return self._d.decode_due(earliest) if earliest is not None else None

    def insert_follow_up(self, ask_id: str) -> None:
        self._write("INSERT INTO follow_ups (ask_id) VALUES (?)", (ask_id,))

    def closed_follow_ups(self, now: datetime, limit: int) -> list[Ask]:
        self._exec(
            f"SELECT {ASK_COLUMNS} FROM asks WHERE status <> 'open' AND id IN ("
            "SELECT ask_id FROM follow_ups WHERE done_at IS NULL AND (claimed_until IS NULL OR claimed_until < ?)"
            ") ORDER BY answered_at, id LIMIT ?",
            (self._d.encode_time(now), limit),
        )
        return [self._ask_from_row(row) for row in self._cur.fetchall()]

    def claim_follow_up(self, ask_id: str, now: datetime, until: datetime) -> bool:
        # One statement: on PostgreSQL a racing claimer waits for the row and re-checks the
        # condition after the first commits; on SQLite writers are one at a time.
        self._exec(
            "UPDATE follow_ups SET claimed_until = ? WHERE ask_id = ? AND done_at IS NULL "
            "AND (claimed_until IS NULL OR claimed_until < ?) RETURNING ask_id",
            (self._d.encode_time(until), ask_id, self._d.encode_time(now)),
        )
        return self._cur.fetchone() is not None

    def follow_up_done(self, ask_id: str, now: datetime) -> None:
        self._write("UPDATE follow_ups SET done_at = ? WHERE ask_id = ?", (self._d.encode_time(now), ask_id))

    def beat(self, deliverer_id: str, now: datetime) -> None:
        self._write(
            "INSERT INTO deliverers (id, beat_at) VALUES (?, ?) "
            "ON CONFLICT (id) DO UPDATE SET beat_at = excluded.beat_at",
            (deliverer_id, self._d.encode_time(now)),
        )

    def stop_beating(self, deliverer_id: str) -> None:
        self._write("DELETE FROM deliverers WHERE id = ?", (deliverer_id,))

    def last_beat(self) -> datetime | None:
        self._exec("SELECT max(beat_at) FROM deliverers")
        latest = self._cur.fetchone()[0]
        return self._d.decode_time(latest) if latest is not None else None

    def open_asks(
        self, limit: int | None = None, *, after: tuple[datetime, str] | None = None, owner: str | None = None
    ) -> list[Ask]:
        conditions = ["status = 'open'"]
        params: list[Any] = []
        if after is not None:
            conditions.append("(asked_at > ? OR (asked_at = ? AND id > ?))")
            stamp = self._d.encode_time(after[0])
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


class RememberingTransaction(SqlTransaction):
    """A transaction whose reads of a conversation's open ask may be answered from what
    this process last committed (:mod:`parkgate.store.recent`).

    The engine's :meth:`_guess` decides when to answer from memory, and its writes check
    the guess (each engine its own way). This class records what the transaction leaves
    each conversation in, ``states``, for the store to remember once the transaction
    commits, or to mark stale if it fails.
    """

    def __init__(self, cursor: Any, dialect: Dialect, recent: RecentOpenAsks | None) -> None:
        super().__init__(cursor, dialect)
        self._recent = recent if recent is not None and recent.size else None
        #: conversation -> its open ask (None: none) as this transaction leaves it.
        self.states: dict[str, Ask | None] = {}

    def _guess(self, conversation_id: str, message_id: str | None, *, parking: bool) -> Ask | Marker | None:
        """The state to answer a read from (an ask, or None: none open), or a marker: read
        for real. This base never guesses."""
        return STALE

    def _before_read(self, conversation_id: str) -> None:
        """Runs before a real read of the conversation's open ask (PostgreSQL locks it)."""

    def open_ask(self, conversation_id: str) -> Ask | None:
        known = self._guess(conversation_id, None, parking=True)
        if not isinstance(known, Marker):
            return known
        self._before_read(conversation_id)
        found = self._read_open_ask(conversation_id)
        self.states[conversation_id] = found
        return found

    def message_context(self, conversation_id: str, message_id: str | None) -> tuple[str | None, Ask | None]:
        known = self._guess(conversation_id, message_id, parking=False)
        if not isinstance(known, Marker):
            return None, known
        self._before_read(conversation_id)
        earlier, found = super().message_context(conversation_id, message_id)
        if earlier is None:
            self.states[conversation_id] = found
        return earlier, found

    def insert_ask(self, ask: Ask) -> None:
        super().insert_ask(ask)
        self.states[ask.conversation_id] = ask

    def save_ask(self, ask: Ask) -> None:
        self.states[ask.conversation_id] = ask if ask.is_open else None
        self._save_ask(ask)

    def _save_ask(self, ask: Ask) -> None:
        """Write the ask's new state; an engine may write it more cheaply, or checked."""
        super().save_ask(ask)


def retry_after_guess(error: BaseException | None) -> StoreConflict | None:
    """The conflict to raise when a transaction that answered a read from memory failed
    with ``error`` that is not the store's (an ask already open, say, or a stale guess):
    the state it acted on may have been stale, so the gateway retries with a real read,
    which raises the caller's error again if it stands. ``None``: let ``error`` through."""
    if isinstance(error, Exception) and not isinstance(error, StoreError):
        return StoreConflict(f"retrying with a real read after {type(error).__name__}: {error}")
    return None
