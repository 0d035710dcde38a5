"""The channel posts and the channel job queue in SQL (``channel_posts``, ``channel_outbox``),
written once for both engines: :class:`~parkgate.store.base.ChannelTables` on an engine's
transaction (a :class:`~parkgate.store.sql.Runner`)."""

from __future__ import annotations

from collections.abc import Collection
from datetime import datetime

from parkgate.store.channel_tables import ChannelJob, ChannelPost
from parkgate.store.dialect import Runner

_JOB_COLUMNS = "id, ask_id, channel, job, payload, attempts"
_POST_COLUMNS = "ask_id, channel, target, location, thread_key, sends"
_UNFINISHED = "done_at IS NULL AND failed_at IS NULL"
#: A job ``j`` of the channels ``{names}`` that a claim may take once due: unfinished, and
#: held by no earlier unfinished job of its ask, except that a close update is held by
#: no reply (it follows the post alone).
_CLAIMABLE = (
    f"j.{_UNFINISHED} AND j.channel {{names}} AND NOT EXISTS (SELECT 1 FROM channel_outbox AS e "
    f"WHERE e.ask_id = j.ask_id AND e.id < j.id AND e.{_UNFINISHED} AND NOT (j.job = 'closed' AND e.job = 'reply'))"
)
#: Close updates first, then posts, then replies: a flood of replies holds back neither.
_PRIORITY = "CASE j.job WHEN 'closed' THEN 0 WHEN 'post' THEN 1 ELSE 2 END"


def _in(values: Collection[str]) -> tuple[str, tuple[str, ...]]:
    """``IN (?, ...)`` for ``values`` (sorted) and its parameters; a list that matches nothing when empty."""
    names = tuple(sorted(values))
    if not names:
        return "IN (NULL)", ()
    return f"IN ({', '.join('?' * len(names))})", names


class SqlChannels:
    """:class:`~parkgate.store.base.ChannelTables` on an engine's transaction."""

    __slots__ = ("_run",)

    def __init__(self, runner: Runner) -> None:
        self._run = runner

    def post_of(self, ask_id: str) -> ChannelPost | None:
        row = self._run.query(f"SELECT {_POST_COLUMNS} FROM channel_posts WHERE ask_id = ?", (ask_id,)).fetchone()
        return ChannelPost(*row) if row else None

    def posts_of(self, ask_ids: Collection[str]) -> dict[str, ChannelPost]:
        ids, params = _in(ask_ids)
        cursor = self._run.query(f"SELECT {_POST_COLUMNS} FROM channel_posts WHERE ask_id {ids}", params)
        return {row[0]: ChannelPost(*row) for row in cursor.fetchall()}

    def ask_in_thread(self, channel: str, thread_key: str) -> tuple[str, str] | None:
        row = self._run.query(
            "SELECT a.id, a.conversation_id FROM channel_posts AS p JOIN asks AS a ON a.id = p.ask_id "
            "WHERE p.channel = ? AND p.thread_key = ? ORDER BY a.asked_at DESC, a.id DESC LIMIT 1",
            (channel, thread_key),
        ).fetchone()
        return (str(row[0]), str(row[1])) if row else None

    def open_asks_in(self, channel: str, thread_key: str, under: bool, limit: int) -> list[tuple[str, str]]:
        # substr, not LIKE: a key's characters are never read as wildcards.
        where = "substr(p.thread_key, 1, ?) = ?" if under else "p.thread_key = ?"
        params: tuple[object, ...] = (len(thread_key), thread_key) if under else (thread_key,)
        cursor = self._run.query(
            "SELECT a.id, a.conversation_id FROM channel_posts AS p JOIN asks AS a ON a.id = p.ask_id "
            f"WHERE p.channel = ? AND {where} AND a.status = 'open' ORDER BY a.asked_at DESC, a.id DESC LIMIT ?",
            (channel, *params, limit),
        )
        return [(str(row[0]), str(row[1])) for row in cursor.fetchall()]

    def sending(self, ask_id: str) -> int:
        row = self._run.query(
            "UPDATE channel_posts SET sends = sends + 1 WHERE ask_id = ? RETURNING sends", (ask_id,)
        ).fetchone()
        return int(row[0]) - 1 if row else 0

    def posted(self, ask_id: str, location: str, thread_key: str | None, now: datetime) -> bool:
        row = self._run.query(
            "UPDATE channel_posts SET location = ?, thread_key = ?, posted_at = ? "
            "WHERE ask_id = ? AND location IS NULL RETURNING ask_id",
            (location, thread_key, self._run.dialect.encode_time(now), ask_id),
        ).fetchone()
        return row is not None

    def claim_jobs(
        self, channels: Collection[str], now: datetime, lease_until: datetime, limit: int
    ) -> list[ChannelJob]:
        encode = self._run.dialect.encode_time
        names, params = _in(channels)
        cursor = self._run.query(
            f"UPDATE channel_outbox SET next_attempt_at = ? WHERE id IN (SELECT j.id FROM channel_outbox AS j "
            f"WHERE {_CLAIMABLE.format(names=names)} AND j.next_attempt_at <= ? "
            f"ORDER BY {_PRIORITY}, j.next_attempt_at, j.id LIMIT ?) "
            f"AND {_UNFINISHED} AND next_attempt_at <= ? RETURNING {_JOB_COLUMNS}",
            (encode(lease_until), *params, encode(now), limit, encode(now)),
        )
        rank = {"closed": 0, "post": 1}
        return sorted((ChannelJob(*row) for row in cursor.fetchall()), key=lambda job: (rank.get(job.job, 2), job.id))

    def job_done(self, job_id: int, now: datetime) -> None:
        self._run.send(
            "UPDATE channel_outbox SET done_at = ?, attempts = attempts + 1 WHERE id = ?",
            (self._run.dialect.encode_time(now), job_id),
        )

    def job_failed(self, job_id: int, error: str, retry_at: datetime | None, now: datetime) -> None:
        encode = self._run.dialect.encode_time
        if retry_at is None:
            self._run.send(
                "UPDATE channel_outbox SET attempts = attempts + 1, last_error = ?, failed_at = ? WHERE id = ?",
                (error[:500], encode(now), job_id),
            )
        else:
            self._run.send(
                "UPDATE channel_outbox SET attempts = attempts + 1, last_error = ?, next_attempt_at = ? WHERE id = ?",
                (error[:500], encode(retry_at), job_id),
            )

    def next_jobs_at(self, channels: Collection[str]) -> dict[str, datetime]:
        names, params = _in(channels)
        cursor = self._run.query(
            f"SELECT j.channel, min(j.next_attempt_at) FROM channel_outbox AS j "
            f"WHERE {_CLAIMABLE.format(names=names)} GROUP BY j.channel",
            params,
        )
        decode = self._run.dialect.decode_time
        return {str(channel): decode(earliest) for channel, earliest in cursor.fetchall() if earliest is not None}

    def failed_jobs(self, limit: int) -> list[tuple[ChannelJob, str | None]]:
        cursor = self._run.query(
            f"SELECT {_JOB_COLUMNS}, last_error FROM channel_outbox WHERE failed_at IS NOT NULL "
            "ORDER BY failed_at DESC, id DESC LIMIT ?",
            (limit,),
        )
        return [(ChannelJob(*row[:6]), row[6]) for row in cursor.fetchall()]
