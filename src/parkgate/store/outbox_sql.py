"""The SQL of the outbox, the follow-ups and the deliverers' heartbeats, written once for
both engines (each supplies its :class:`~parkgate.store.sql.Dialect`)."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from parkgate.store.base import Callback, CallbackState, CallbackStatus

if TYPE_CHECKING:
    from parkgate.store.sql import Dialect

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


class OutboxSql:
    """The outbox, follow-up and heartbeat statements of :class:`~parkgate.store.sql.SqlTransaction`."""

    _cur: Any
    _dialect: Dialect

    def _exec(self, statement: str, params: Sequence[Any] = ()) -> Any:
        raise NotImplementedError

    def _write(self, statement: str, params: Sequence[Any] = ()) -> None:
        raise NotImplementedError

    def claim_callbacks(
        self,
        now: datetime,
        lease_until: datetime,
        limit: int,
        per_host: int | None = None,
        in_flight: Mapping[str, int] | None = None,
    ) -> list[Callback]:
        encode = self._dialect.encode_time
        room, room_params = _host_room(per_host, in_flight or {})
        # Turns between hosts: each due row is numbered within its host, oldest first, and
        # rows are taken turn by turn (every host's first, then every host's second, ...),
        # never past a host's room. No SKIP LOCKED (PostgreSQL refuses it beside a window):
        # a row another deliverer claims meanwhile fails the outer re-check of its due time
        # once that claim commits, and is left to it.
        self._exec(
            "UPDATE outbox SET next_attempt_at = ? WHERE id IN (SELECT id FROM (SELECT id, host, next_attempt_at, "
            "row_number() OVER (PARTITION BY host ORDER BY next_attempt_at, id) AS turn FROM outbox "
            "WHERE delivered_at IS NULL AND failed_at IS NULL AND next_attempt_at <= ?) AS due "
            f"WHERE {room} ORDER BY turn, next_attempt_at, id LIMIT ?) "
            "AND delivered_at IS NULL AND failed_at IS NULL AND next_attempt_at <= ? "
            "RETURNING id, ask_id, url, payload, attempts, host",
            (encode(lease_until), encode(now), *room_params, limit, encode(now)),
        )
        return sorted((Callback(*row) for row in self._cur.fetchall()), key=lambda row: row.id)

    def count_pending_callbacks(self, owner: str) -> int:
        self._exec(
            "SELECT count(*) FROM outbox WHERE owner = ? AND delivered_at IS NULL AND failed_at IS NULL", (owner,)
        )
        return int(self._cur.fetchone()[0])

    def callback_done(self, callback_id: int, now: datetime) -> None:
        self._write(
            "UPDATE outbox SET delivered_at = ?, attempts = attempts + 1 WHERE id = ?",
            (self._dialect.encode_time(now), callback_id),
        )

    def callbacks_done(self, callback_ids: list[int], now: datetime) -> None:
        for start in range(0, len(callback_ids), MARK_CHUNK):
            chunk = callback_ids[start : start + MARK_CHUNK]
            # Padded to a power of two with its last id: a few statement shapes, each prepared once.
            size = 1 << (len(chunk) - 1).bit_length()
            chunk += chunk[-1:] * (size - len(chunk))
            self._write(
                f"UPDATE outbox SET delivered_at = ?, attempts = attempts + 1 WHERE id IN ({', '.join('?' * size)})",
                (self._dialect.encode_time(now), *chunk),
            )

    def callback_failed(self, callback_id: int, error: str, retry_at: datetime | None) -> None:
        if retry_at is None:
            self._write(
                "UPDATE outbox SET attempts = attempts + 1, last_error = ?, failed_at = next_attempt_at WHERE id = ?",
                (error[:500], callback_id),
            )
        else:
            self._write(
                "UPDATE outbox SET attempts = attempts + 1, last_error = ?, next_attempt_at = ? WHERE id = ?",
                (error[:500], self._dialect.encode_time(retry_at), callback_id),
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
            due = self._dialect.decode_time(next_at) if status is CallbackStatus.PENDING else None
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
            (self._dialect.encode_time(now), ask_id),
        )
        return bool(self._cur.fetchall())

    def next_callback_at(self, full_hosts: Collection[str] = ()) -> datetime | None:
        hosts = sorted(full_hosts)
        left_out = f" AND (host IS NULL OR host NOT IN ({', '.join('?' * len(hosts))}))" if hosts else ""
        self._exec(
            f"SELECT min(next_attempt_at) FROM outbox WHERE delivered_at IS NULL AND failed_at IS NULL{left_out}",
            tuple(hosts),
        )
        earliest = self._cur.fetchone()[0]
        return self._dialect.decode_time(earliest) if earliest is not None else None

    def callback_counts(self) -> dict[CallbackStatus, int]:
        self._exec(
            "SELECT count(*) FILTER (WHERE failed_at IS NULL), count(*) FILTER (WHERE failed_at IS NOT NULL) "
            "FROM outbox WHERE delivered_at IS NULL"
        )
        pending, failed = self._cur.fetchone()
        return {CallbackStatus.PENDING: int(pending), CallbackStatus.FAILED: int(failed)}

    def claim_follow_up(self, ask_id: str, now: datetime, until: datetime) -> bool:
        # One statement: on PostgreSQL a racing claimer waits for the row and re-checks the
        # condition after the first commits; on SQLite writers are one at a time.
        self._exec(
            "UPDATE follow_ups SET claimed_until = ? WHERE ask_id = ? AND done_at IS NULL "
            "AND (claimed_until IS NULL OR claimed_until < ?) RETURNING ask_id",
            (self._dialect.encode_time(until), ask_id, self._dialect.encode_time(now)),
        )
        return self._cur.fetchone() is not None

    def follow_up_done(self, ask_id: str, now: datetime) -> None:
        self._write("UPDATE follow_ups SET done_at = ? WHERE ask_id = ?", (self._dialect.encode_time(now), ask_id))

    def beat(self, deliverer_id: str, now: datetime) -> None:
        self._write(
            "INSERT INTO deliverers (id, beat_at) VALUES (?, ?) "
            "ON CONFLICT (id) DO UPDATE SET beat_at = excluded.beat_at",
            (deliverer_id, self._dialect.encode_time(now)),
        )

    def stop_beating(self, deliverer_id: str) -> None:
        self._write("DELETE FROM deliverers WHERE id = ?", (deliverer_id,))

    def last_beat(self) -> datetime | None:
        self._exec("SELECT max(beat_at) FROM deliverers")
        latest = self._cur.fetchone()[0]
        return self._dialect.decode_time(latest) if latest is not None else None
