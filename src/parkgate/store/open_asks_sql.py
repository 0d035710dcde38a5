"""The reads of the open asks as a whole in SQL (the audit, the gauges, the due reads),
written once for both engines: a small class an engine's transaction holds."""

from __future__ import annotations

from datetime import datetime
from functools import cache
from typing import Any

from parkgate.core.model import Ask, CallbackStatus, Run
from parkgate.store.agent_states_sql import SqlAgentStates
from parkgate.store.ask_rows import ASK_COLUMNS
from parkgate.store.base import AskGauges
from parkgate.store.channels_sql import SqlChannels
from parkgate.store.dialect import Dialect
from parkgate.store.events_sql import SqlEventLog
from parkgate.store.history_sql import SqlHistory
from parkgate.store.outbox_sql import SqlFollowUps, SqlHeartbeats, SqlOutbox
from parkgate.store.sql import Runner, ask_from_row, read_ask, store_pass
from parkgate.store.sql_inserts import read_reply, read_run


@cache
def _due_asks_sql(dialect: Dialect) -> str:
    return (
        f"SELECT {ASK_COLUMNS} FROM asks WHERE status = 'open' AND due_at IS NOT NULL AND due_at <= ? "
        "ORDER BY due_at LIMIT ?" + dialect.skip_locked_suffix
    )


@cache
def _due_event_asks_sql(dialect: Dialect) -> str:
    return (
        f"SELECT {ASK_COLUMNS} FROM asks WHERE status = 'open' AND event_at IS NOT NULL AND event_at <= ? "
        "ORDER BY event_at LIMIT ?" + dialect.skip_locked_suffix
    )


#: The earliest of the due times (the TTLs' and the reminders' and escalations').
_NEXT_DUE_SQL = (
    "SELECT min(due) FROM (SELECT min(due_at) AS due FROM asks WHERE status = 'open' AND due_at IS NOT NULL "
    "UNION ALL SELECT min(event_at) FROM asks WHERE status = 'open' AND event_at IS NOT NULL) AS times"
)


@cache
def _gauges_sql(dialect: Dialect) -> str:
    # Open asks not past their TTL, open asks past it, and the earliest due time that
    # has passed among the asks something waits on (a due read should have closed it).
    overdue = f"{dialect.due_expression} < ?"
    return (
        f"SELECT count(*) FILTER (WHERE NOT ({overdue})), count(*) FILTER (WHERE {overdue}), "
        "min(due_at) FILTER (WHERE due_at IS NOT NULL AND due_at < ?) FROM asks WHERE status = 'open'"
    )


class SqlOpenAsks:
    """:class:`~parkgate.store.base.OpenAsks` on an engine's transaction."""

    __slots__ = ("_run",)

    def __init__(self, runner: Runner) -> None:
        self._run = runner

    def open_asks(
        self,
        limit: int | None = None,
        *,
        after: tuple[datetime, str] | None = None,
        owner: str | None = None,
        conversation_id: str | None = None,
    ) -> list[Ask]:
        dialect = self._run.dialect
        conditions = ["status = 'open'"]
        params: list[Any] = []
        if conversation_id is not None:
            conditions.append("conversation_id = ?")
            params.append(conversation_id)
        if after is not None:
            conditions.append("(asked_at > ? OR (asked_at = ? AND id > ?))")
            stamp = dialect.encode_time(after[0])
            params += [stamp, stamp, after[1]]
        if owner is not None:
            conditions.append("owner = ?")
            params.append(owner)
        statement = f"SELECT {ASK_COLUMNS} FROM asks WHERE {' AND '.join(conditions)} ORDER BY asked_at, id"
        if limit is not None:
            statement += " LIMIT ?"
            params.append(limit)
        cursor = self._run.query(statement, params)
        return [ask_from_row(row, dialect.decode_time) for row in cursor.fetchall()]

    def count_open_asks(self, owner: str | None = None) -> int:
        if owner is None:
            cursor = self._run.query("SELECT count(*) FROM asks WHERE status = 'open'")
        else:
            cursor = self._run.query("SELECT count(*) FROM asks WHERE status = 'open' AND owner = ?", (owner,))
        return int(cursor.fetchone()[0])

    def ask_gauges(self, now: datetime) -> AskGauges:
        dialect = self._run.dialect
        due_now = dialect.encode_due(now)
        live, overdue, earliest = self._run.query(_gauges_sql(dialect), (due_now, due_now, due_now)).fetchone()
        late = (now - dialect.decode_due(earliest)).total_seconds() if earliest is not None else 0.0
        callbacks = SqlOutbox(self._run).callback_counts()
        return AskGauges(
            open=int(live),
            overdue=int(overdue),
            oldest_unread_due_seconds=late,
            callbacks_pending=callbacks[CallbackStatus.PENDING],
            callbacks_failed=callbacks[CallbackStatus.FAILED],
        )

    def due_asks(self, now: datetime, limit: int) -> list[Ask]:
        dialect = self._run.dialect
        cursor = self._run.query(_due_asks_sql(dialect), (dialect.encode_due(now), limit))
        return [ask_from_row(row, dialect.decode_time) for row in cursor.fetchall()]

    def next_due(self) -> datetime | None:
        earliest = self._run.query(_NEXT_DUE_SQL).fetchone()[0]
        return self._run.dialect.decode_due(earliest) if earliest is not None else None

    def due_event_asks(self, now: datetime, limit: int) -> list[Ask]:
        dialect = self._run.dialect
        cursor = self._run.query(_due_event_asks_sql(dialect), (dialect.encode_due(now), limit))
        return [ask_from_row(row, dialect.decode_time) for row in cursor.fetchall()]


class SqlAskKeys:
    """:class:`~parkgate.store.base.AskKeys` on an engine's transaction (``owner`` ``None`` stored as ``''``)."""

    __slots__ = ("_run",)

    def __init__(self, runner: Runner) -> None:
        self._run = runner

    def ask_for_key(self, owner: str | None, key: str) -> str | None:
        row = self._run.query("SELECT ask_id FROM ask_keys WHERE owner = ? AND key = ?", (owner or "", key)).fetchone()
        return str(row[0]) if row else None

    def record_key(self, owner: str | None, key: str, ask_id: str) -> None:
        self._run.send("INSERT INTO ask_keys (owner, key, ask_id) VALUES (?, ?, ?)", (owner or "", key, ask_id))


class SqlTables:
    """What an engine's SQL transaction (:class:`~parkgate.store.base.Transaction`) shares
    with the other engine: the reads by id, and the tables beside a message's, each an
    interface made on use over the transaction, which runs its SQL."""

    def ask(self: Runner, ask_id: str) -> Ask | None:
        return read_ask(self, ask_id)

    def run(self: Runner, run_id: str) -> Run | None:
        return read_run(self, run_id)

    def reply_for(self: Runner, conversation_id: str, message_id: str) -> str | None:
        return read_reply(self, conversation_id, message_id)

    #: The shared statement itself (a message's path stays in the engine's module and ``sql``).
    store_pass = store_pass

    @property
    def asks(self: Runner) -> SqlOpenAsks:
        return SqlOpenAsks(self)

    @property
    def outbox(self: Runner) -> SqlOutbox:
        return SqlOutbox(self)

    @property
    def follow_ups(self: Runner) -> SqlFollowUps:
        return SqlFollowUps(self)

    @property
    def heartbeats(self: Runner) -> SqlHeartbeats:
        return SqlHeartbeats(self)

    @property
    def agent_states(self: Runner) -> SqlAgentStates:
        return SqlAgentStates(self)

    @property
    def keys(self: Runner) -> SqlAskKeys:
        return SqlAskKeys(self)

    @property
    def channels(self: Runner) -> SqlChannels:
        return SqlChannels(self)

    @property
    def events(self: Runner) -> SqlEventLog:
        return SqlEventLog(self)

    @property
    def history(self: Runner) -> SqlHistory:
        return SqlHistory(self)
