"""The reads of every ask, open or closed, in SQL (:class:`~parkgate.store.tables.History`),
written once for both engines: a history page, the asks an id starts with, the open asks
past their TTL, and the rows the figures are computed from.

Every filter is in the statement, so a page holds only what was asked for, and a page's
``LIMIT`` is the bound of the rows read. A closed status is read by ``closed_at`` (its
index ``asks_by_closed``), ``open`` and ``all`` by ``asked_at`` (``asks_by_asked``).
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from parkgate.core.history import HistoryQuery, HistoryStatus, listing_of
from parkgate.core.model import Ask
from parkgate.store.ask_rows import ASK_COLUMNS
from parkgate.store.sql import Runner, ask_from_row


class SqlHistory:
    """:class:`~parkgate.store.tables.History` on an engine's transaction."""

    __slots__ = ("_run",)

    def __init__(self, runner: Runner) -> None:
        self._run = runner

    def history(self, query: HistoryQuery, limit: int, target_key: str | None = None) -> list[Ask]:
        dialect = self._run.dialect
        time = "closed_at" if listing_of(query).by_close else "asked_at"
        conditions: list[str] = []
        params: list[Any] = []
        if listing_of(query) is not HistoryStatus.ALL:
            statuses = listing_of(query).statuses
            conditions.append(f"status IN ({', '.join('?' * len(statuses))})")
            params += [status.value for status in statuses]
        if query.since is not None:
            conditions.append(f"{time} >= ?")
            params.append(dialect.encode_time(query.since))
        if query.until is not None:
            conditions.append(f"{time} < ?")
            params.append(dialect.encode_time(query.until))
        for column in ("conversation_id", "owner", "outcome"):
            value = getattr(query, column)
            if value is not None:
                conditions.append(f"{column} = ?")
                params.append(value)
        position = dialect.position
        if query.q is not None:
            conditions.append(f"{position}(lower(prompt), ?) > 0")
            params.append(query.q.lower())
        if query.responder is not None:
            name = json.dumps(query.responder, ensure_ascii=False)
            conditions.append(
                f"(answered_by = ? OR {position}(responders, ?) > 0 OR {position}(escalate_to, ?) > 0 "
                f"OR {position}(votes, ?) > 0)"
            )
            params += [query.responder, name, name, f'"sender": {name}']
        if query.channel_name is not None:
            posted = "SELECT ask_id FROM channel_posts WHERE channel = ?"
            params.append(query.channel_name)
            target = query.channel_target
            if target is not None and target_key is not None:
                value = dialect.json_text.format(column="target", key="?")
                posted += f" AND ({value} = ? OR {position}({value}, ?) > 0)"
                params += [target_key, target, target_key, json.dumps(target, ensure_ascii=False)]
            conditions.append(f"id IN ({posted})")
        after = query.after
        if after is not None:
            beyond = "<" if listing_of(query).newest_first else ">"
            conditions.append(f"({time} {beyond} ? OR ({time} = ? AND id {beyond} ?))")
            stamp = dialect.encode_time(after[0])
            params += [stamp, stamp, after[1]]
        order = "DESC" if listing_of(query).newest_first else "ASC"
        where = f" WHERE {' AND '.join(conditions)}" if conditions else ""
        statement = f"SELECT {ASK_COLUMNS} FROM asks{where} ORDER BY {time} {order}, id {order} LIMIT ?"
        params.append(limit)
        return self._asks(statement, params)

    def asks_starting(self, prefix: str, limit: int) -> list[Ask]:
        if not prefix:
            return []
        # A range on the primary key (the ids' own order), then the exact start.
        upper = prefix[:-1] + chr(ord(prefix[-1]) + 1)
        return self._asks(
            f"SELECT {ASK_COLUMNS} FROM asks WHERE id >= ? AND id < ? AND substr(id, 1, ?) = ? ORDER BY id LIMIT ?",
            (prefix, upper, len(prefix), prefix, limit),
        )

    def lapsed(
        self, now: datetime, limit: int, owner: str | None = None, conversation_id: str | None = None
    ) -> list[Ask]:
        dialect = self._run.dialect
        conditions, params = [f"status = 'open' AND {dialect.due_expression} < ?"], [dialect.encode_due(now)]
        if owner is not None:
            conditions.append("owner = ?")
            params.append(owner)
        if conversation_id is not None:
            conditions.append("conversation_id = ?")
            params.append(conversation_id)
        return self._asks(
            f"SELECT {ASK_COLUMNS} FROM asks WHERE {' AND '.join(conditions)} ORDER BY asked_at, id LIMIT ?",
            (*params, limit),
        )

    def figure_rows(
        self, since: datetime | None, until: datetime | None, limit: int, owner: str | None = None
    ) -> list[Ask]:
        dialect = self._run.dialect
        window: list[str] = []
        params: list[Any] = []
        for column in ("asked_at", "closed_at"):
            bounds = []
            if since is not None:
                bounds.append(f"{column} >= ?")
                params.append(dialect.encode_time(since))
            if until is not None:
                bounds.append(f"{column} < ?")
                params.append(dialect.encode_time(until))
            window.append(" AND ".join(bounds) if bounds else f"{column} IS NOT NULL")
        condition = f"({window[0]} OR {window[1]} OR status = 'open')"
        if owner is not None:
            condition += " AND owner = ?"
            params.append(owner)
        return self._asks(
            f"SELECT {ASK_COLUMNS} FROM asks WHERE {condition} ORDER BY asked_at DESC, id DESC LIMIT ?",
            (*params, limit),
        )

    def _asks(self, statement: str, params: Any) -> list[Ask]:
        cursor = self._run.query(statement, params)
        return [ask_from_row(row, self._run.dialect.decode_time) for row in cursor.fetchall()]
