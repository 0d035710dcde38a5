"""The outbox, the follow-ups and the deliverers' heartbeats in SQL, written once for both
engines: each a small class an engine's transaction holds, running its statements on that
transaction (a :class:`~parkgate.store.sql.Runner`)."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from datetime import datetime
from typing import Any

from parkgate.core.model import CALLBACK_URL_COLUMN, Ask, CallbackState, CallbackStatus
from parkgate.store.ask_rows import ASK_COLUMNS
from parkgate.store.base import Callback
from parkgate.store.sql import Runner, ask_from_row

#: Outbox rows marked delivered per statement (a power of two, below SQLite's parameter limit).
MARK_CHUNK = 512


def _host_room(per_host: int | None, in_flight: Mapping[str, int]) -> tuple[str, tuple[Any, ...]]:
    """The claim's condition on a row's turn within its host, and its parameters: with
    ``per_host``, a host's turns stop at its room (``per_host`` less its deliveries in
    flight); rows of no known host (queued before version 10) are not capped."""
    if per_host is None:
        return "1 = 1", ()
    busy = [(host, count) for host, count in in_flight.items() if count > 0]
    if not busy:
        return "(host IS NULL OR turn <= ?)", (per_host,)
    cases = " ".join("WHEN ? THEN ?" for _ in busy)
    params = [value for pair in busy for value in pair]
    return f"(host IS NULL OR turn + CASE host {cases} ELSE 0 END <= ?)", (*params, per_host)


class SqlOutbox:
    """:class:`~parkgate.store.base.Outbox` on an engine's transaction."""

    __slots__ = ("_run",)

    def __init__(self, runner: Runner) -> None:
        self._run = runner

    def claim_callbacks(
        self,
        now: datetime,
        lease_until: datetime,
        limit: int,
        per_host: int | None = None,
        in_flight: Mapping[str, int] | None = None,
    ) -> list[Callback]:
        encode = self._run.dialect.encode_time
        room, room_params = _host_room(per_host, in_flight or {})
        # Turns between hosts: each due row is numbered within its host, oldest first, and
        # rows are taken turn by turn (every host's first, then every host's second, ...),
        # never past a host's room. No SKIP LOCKED (PostgreSQL refuses it beside a window):
        # a row another deliverer claims meanwhile fails the outer re-check of its due time
        # once that claim commits, and is left to it.
        cursor = self._run.query(
            "UPDATE outbox SET next_attempt_at = ? WHERE id IN (SELECT id FROM (SELECT id, host, next_attempt_at, "
            "row_number() OVER (PARTITION BY host ORDER BY next_attempt_at, id) AS turn FROM outbox "
            "WHERE delivered_at IS NULL AND failed_at IS NULL AND next_attempt_at <= ?) AS due "
            f"WHERE {room} ORDER BY turn, next_attempt_at, id LIMIT ?) "
            "AND delivered_at IS NULL AND failed_at IS NULL AND next_attempt_at <= ? "
            "RETURNING id, ask_id, url, payload, attempts, host, event_id, "
            f"CASE WHEN url = (SELECT {CALLBACK_URL_COLUMN} FROM asks WHERE asks.id = outbox.ask_id) "
            "THEN 'callback' ELSE 'events' END",
            (encode(lease_until), encode(now), *room_params, limit, encode(now)),
        )
        return sorted((Callback(*row) for row in cursor.fetchall()), key=lambda row: row.id)

    def count_pending_callbacks(self, owner: str) -> int:
        cursor = self._run.query(
            "SELECT count(*) FROM outbox WHERE owner = ? AND delivered_at IS NULL AND failed_at IS NULL", (owner,)
        )
        return int(cursor.fetchone()[0])

    def callback_done(self, callback_id: int, now: datetime) -> None:
        self._run.send(
            "UPDATE outbox SET delivered_at = ?, attempts = attempts + 1 WHERE id = ?",
            (self._run.dialect.encode_time(now), callback_id),
        )

    def callbacks_done(self, callback_ids: list[int], now: datetime) -> None:
        for start in range(0, len(callback_ids), MARK_CHUNK):
            chunk = callback_ids[start : start + MARK_CHUNK]
            # Padded to a power of two with its last id: a few statement shapes, each prepared once.
            size = 1 << (len(chunk) - 1).bit_length()
            chunk += chunk[-1:] * (size - len(chunk))
            self._run.send(
                f"UPDATE outbox SET delivered_at = ?, attempts = attempts + 1 WHERE id IN ({', '.join('?' * size)})",
                (self._run.dialect.encode_time(now), *chunk),
            )

    def callback_failed(self, callback_id: int, error: str, retry_at: datetime | None) -> None:
        if retry_at is None:
            self._run.send(
                "UPDATE outbox SET attempts = attempts + 1, last_error = ?, failed_at = next_attempt_at WHERE id = ?",
                (error[:500], callback_id),
            )
        else:
            self._run.send(
                "UPDATE outbox SET attempts = attempts + 1, last_error = ?, next_attempt_at = ? WHERE id = ?",
                (error[:500], self._run.dialect.encode_time(retry_at), callback_id),
            )

    def callback_states(self, ask_ids: list[str]) -> dict[str, CallbackState]:
        if not ask_ids:
            return {}
        marks = ", ".join("?" * len(ask_ids))
        cursor = self._run.query(
            "SELECT ask_id, delivered_at, failed_at, attempts, last_error, next_attempt_at FROM outbox "
            f"WHERE ask_id IN ({marks}) ORDER BY id",
            tuple(ask_ids),
        )
        found: dict[str, CallbackState] = {}
        for ask_id, delivered, failed, attempts, error, next_at in cursor.fetchall():
            status = (
                CallbackStatus.DELIVERED
                if delivered is not None
                else CallbackStatus.FAILED
                if failed is not None
                else CallbackStatus.PENDING
            )
            due = self._run.dialect.decode_time(next_at) if status is CallbackStatus.PENDING else None
            found[ask_id] = CallbackState(status, int(attempts), error, due)
        return found

    def failed_callback_asks(self, limit: int) -> list[str]:
        cursor = self._run.query(
            "SELECT ask_id FROM outbox WHERE failed_at IS NOT NULL AND delivered_at IS NULL "
            "ORDER BY failed_at DESC, id DESC LIMIT ?",
            (limit,),
        )
        return [str(row[0]) for row in cursor.fetchall()]

    def rearm_callback(self, ask_id: str, now: datetime) -> bool:
        cursor = self._run.query(
            "UPDATE outbox SET failed_at = NULL, attempts = 0, next_attempt_at = ? "
            "WHERE ask_id = ? AND failed_at IS NOT NULL AND delivered_at IS NULL RETURNING id",
            (self._run.dialect.encode_time(now), ask_id),
        )
        return bool(cursor.fetchall())

    def next_callback_at(self, full_hosts: Collection[str] = ()) -> datetime | None:
        hosts = sorted(full_hosts)
        left_out = f" AND (host IS NULL OR host NOT IN ({', '.join('?' * len(hosts))}))" if hosts else ""
        cursor = self._run.query(
            f"SELECT min(next_attempt_at) FROM outbox WHERE delivered_at IS NULL AND failed_at IS NULL{left_out}",
            tuple(hosts),
        )
        earliest = cursor.fetchone()[0]
        return self._run.dialect.decode_time(earliest) if earliest is not None else None

    def callback_counts(self) -> dict[CallbackStatus, int]:
        cursor = self._run.query(
            "SELECT count(*) FILTER (WHERE failed_at IS NULL), count(*) FILTER (WHERE failed_at IS NOT NULL) "
            "FROM outbox WHERE delivered_at IS NULL"
        )
        pending, failed = cursor.fetchone()
        return {CallbackStatus.PENDING: int(pending), CallbackStatus.FAILED: int(failed)}


class SqlFollowUps:
    """:class:`~parkgate.store.base.FollowUps` on an engine's transaction."""

    __slots__ = ("_run",)

    def __init__(self, runner: Runner) -> None:
        self._run = runner

    def closed_follow_ups(
        self,
        now: datetime,
        limit: int,
        owner: str | None = None,
        watcher: str | None = None,
        after: str | None = None,
    ) -> list[Ask]:
        dialect = self._run.dialect
        # Every filter is in the statement, so a page holds only the caller's own asks: a
        # watcher's are read on the partial index follow_ups_pending (watcher, ask_id).
        asks, pending, params = ["status <> 'open'"], ["done_at IS NULL"], list[str]()
        if owner is not None:
            asks.append("owner = ?")
            params.append(owner)
        if after is not None:  # the next page: what closed after that ask, in the listing's order
            asks.append("(closed_at, id) > (SELECT closed_at, id FROM asks WHERE id = ?)")
            params.append(after)
        if watcher is not None:  # '' marks those pending from before watchers were named: anyone's
            pending.append("watcher IN (?, '')")
            params.append(watcher)
        pending.append("(claimed_until IS NULL OR claimed_until < ?)")
        cursor = self._run.query(
            f"SELECT {ASK_COLUMNS} FROM asks WHERE {' AND '.join(asks)} AND id IN ("
            f"SELECT ask_id FROM follow_ups WHERE {' AND '.join(pending)}) ORDER BY closed_at, id LIMIT ?",
            (*params, dialect.encode_time(now), limit),
        )
        return [ask_from_row(row, dialect.decode_time) for row in cursor.fetchall()]

    def claim_follow_up(self, ask_id: str, now: datetime, until: datetime) -> bool:
        # One statement: on PostgreSQL a racing claimer waits for the row and re-checks the
        # condition after the first commits; on SQLite writers are one at a time.
        cursor = self._run.query(
            "UPDATE follow_ups SET claimed_until = ? WHERE ask_id = ? AND done_at IS NULL "
            "AND (claimed_until IS NULL OR claimed_until < ?) RETURNING ask_id",
            (self._run.dialect.encode_time(until), ask_id, self._run.dialect.encode_time(now)),
        )
        return cursor.fetchone() is not None

    def follow_up_done(self, ask_id: str, now: datetime) -> None:
        self._run.send(
            "UPDATE follow_ups SET done_at = ? WHERE ask_id = ?", (self._run.dialect.encode_time(now), ask_id)
        )


class SqlHeartbeats:
    """:class:`~parkgate.store.base.Heartbeats` on an engine's transaction."""

    __slots__ = ("_run",)

    def __init__(self, runner: Runner) -> None:
        self._run = runner

    def beat(self, deliverer_id: str, now: datetime) -> None:
        self._run.send(
            "INSERT INTO deliverers (id, beat_at) VALUES (?, ?) "
            "ON CONFLICT (id) DO UPDATE SET beat_at = excluded.beat_at",
            (deliverer_id, self._run.dialect.encode_time(now)),
        )

    def stop_beating(self, deliverer_id: str) -> None:
        self._run.send("DELETE FROM deliverers WHERE id = ?", (deliverer_id,))

    def last_beat(self) -> datetime | None:
        cursor = self._run.query("SELECT max(beat_at) FROM deliverers")
        latest = cursor.fetchone()[0]
        return self._run.dialect.decode_time(latest) if latest is not None else None
