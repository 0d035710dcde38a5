"""The shared SQL off a message's usual path: a park's INSERT of its ask, a callback's and
a follow-up's, and the reads of a run and of a stored reply. :mod:`parkgate.store.sql`
holds what a message runs; this module what a park or another call adds to it.
"""

from __future__ import annotations

from parkgate.core.model import Ask, Run
from parkgate.store.ask_rows import ASK_ROWS, RUN_ROWS, SCHEDULE_SET, ask_values, schedule_values
from parkgate.store.dialect import Dialect, Runner, Statement
from parkgate.store.writes import QueuedCallback, QueuedChannelJob


def ask_insert(ask: Ask, dialect: Dialect) -> Statement:
    """The INSERT of a new ask: every column (:data:`~parkgate.store.ask_rows.ASK_COLUMNS`)."""
    return _ASK_INSERT, ask_values(ask, dialect.encode_time, dialect.encode_due)


_ASK_INSERT = f"INSERT INTO asks ({ASK_ROWS.columns}) VALUES ({ASK_ROWS.placeholders()})"


def schedule_update(ask: Ask, dialect: Dialect) -> Statement:
    """An open ask's fired reminders or escalation: its count, escalation time, responders
    and next due time (never ``last_touched``: firing is no touch)."""
    values = schedule_values(ask, dialect.encode_time, dialect.encode_due)
    return f"UPDATE asks SET {SCHEDULE_SET} WHERE id = ? AND status = 'open'", (*values, ask.id)


def callback_insert(callback: QueuedCallback, dialect: Dialect) -> Statement:
    queued_at = dialect.encode_time(callback.at)
    return (
        "INSERT INTO outbox (ask_id, url, payload, next_attempt_at, created_at, host, owner, event_id) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        (
            callback.ask_id,
            callback.url,
            callback.payload,
            queued_at,
            queued_at,
            callback.host,
            callback.owner,
            callback.event_id,
        ),
    )


def channel_job_inserts(job: QueuedChannelJob, dialect: Dialect) -> list[Statement]:
    """A channel job's statements: with a target, the ask's post row and the job; without,
    the job for the channel the ask was posted to (nothing when it was never posted)."""
    queued_at = dialect.encode_time(job.at)
    if job.channel is not None and job.target is not None:
        return [
            (
                "INSERT INTO channel_posts (ask_id, channel, target) VALUES (?, ?, ?)",
                (job.ask_id, job.channel, job.target),
            ),
            (
                "INSERT INTO channel_outbox (ask_id, channel, job, payload, next_attempt_at, created_at) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                (job.ask_id, job.channel, job.job, job.payload, queued_at, queued_at),
            ),
        ]
    return [
        (
            "INSERT INTO channel_outbox (ask_id, channel, job, payload, next_attempt_at, created_at) "
            "SELECT ask_id, channel, ?, ?, ?, ? FROM channel_posts WHERE ask_id = ?",
            (job.job, job.payload, queued_at, queued_at, job.ask_id),
        )
    ]


def follow_up_insert(ask_id: str, watcher: str | None = None) -> Statement:
    return "INSERT INTO follow_ups (ask_id, watcher) VALUES (?, ?)", (ask_id, watcher)


def read_run(runner: Runner, run_id: str) -> Run | None:
    """A run by id, or ``None``."""
    row = runner.query(f"SELECT {RUN_ROWS.columns} FROM runs WHERE id = ?", (run_id,)).fetchone()
    return RUN_ROWS.read(row, runner.dialect.decode_time) if row else None


def read_reply(runner: Runner, conversation_id: str, message_id: str) -> str | None:
    """The stored reply of a message seen before, else ``None``."""
    row = runner.query(
        "SELECT reply FROM inbound_messages WHERE conversation_id = ? AND message_id = ?",
        (conversation_id, message_id),
    ).fetchone()
    return str(row[0]) if row else None
