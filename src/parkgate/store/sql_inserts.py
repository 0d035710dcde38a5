"""The shared SQL off a message's usual path: a park's INSERT of its ask, a callback's and
a follow-up's, and the reads of a run and of a stored reply. :mod:`parkgate.store.sql`
holds what a message runs; this module what a park or another call adds to it.
"""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any

from parkgate.core import expect as expected_form
from parkgate.core.model import MENUS_REMEMBERED, Ask, Run, RunStatus, encode_votes
from parkgate.store.dialect import ASK_COLUMNS, RUN_COLUMNS, Dialect, Runner, Statement
from parkgate.store.writes import QueuedCallback, QueuedChannelJob

_RUN_STATUSES: dict[str, RunStatus] = {member.value: member for member in RunStatus}


# Options never change after an ask is parked, and the same few menus are parked over
# and over: each distinct list is encoded and decoded once.
@lru_cache(maxsize=MENUS_REMEMBERED)
def _encode_options(options: tuple[str, ...]) -> str:
    return json.dumps(list(options), ensure_ascii=False)


def ask_insert(ask: Ask, dialect: Dialect) -> Statement:
    encode = dialect.encode_time
    return (
        f"INSERT INTO asks ({ASK_COLUMNS}) VALUES ({', '.join('?' * 34)})",
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
            json.dumps(list(ask.responders), ensure_ascii=False) if ask.responders else None,
            ask.quorum,
            encode_votes(ask.votes),
            ask.answered_by,
            ask.closed_by,
            *schedule_values(ask, dialect),
        ),
    )


def schedule_values(ask: Ask, dialect: Dialect) -> tuple[Any, ...]:
    """An ask's reminder and escalation columns, in :data:`ASK_COLUMNS`' order."""
    due = ask.next_event_at
    return (
        json.dumps(list(ask.remind_after)) if ask.remind_after else None,
        ask.escalate_after,
        json.dumps(list(ask.escalate_to), ensure_ascii=False) if ask.escalate_to else None,
        ask.reminders_sent,
        dialect.encode_time(ask.escalated_at) if ask.escalated_at is not None else None,
        ask.event_offset,
        dialect.encode_due(due) if due is not None else None,
    )


def schedule_update(ask: Ask, dialect: Dialect) -> Statement:
    """An open ask's fired reminders or escalation: its count, escalation time, responders
    and next due time (never ``last_touched``: firing is no touch)."""
    due = ask.next_event_at
    return (
        "UPDATE asks SET reminders_sent = ?, escalated_at = ?, responders = ?, event_offset = ?, event_at = ? "
        "WHERE id = ? AND status = 'open'",
        (
            ask.reminders_sent,
            dialect.encode_time(ask.escalated_at) if ask.escalated_at is not None else None,
            json.dumps(list(ask.responders), ensure_ascii=False) if ask.responders else None,
            ask.event_offset,
            dialect.encode_due(due) if due is not None else None,
            ask.id,
        ),
    )


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
    row = runner.query(f"SELECT {RUN_COLUMNS} FROM runs WHERE id = ?", (run_id,)).fetchone()
    if not row:
        return None
    decode, context = runner.dialect.decode_time, json.loads(row[5])
    output = None if row[10] is None else json.loads(row[10])
    return Run(
        row[0],
        row[1],
        row[2],
        _RUN_STATUSES[row[3]],
        row[4],
        context,
        row[6],
        decode(row[7]),
        decode(row[8]),
        row[9],
        output,
    )


def read_reply(runner: Runner, conversation_id: str, message_id: str) -> str | None:
    """The stored reply of a message seen before, else ``None``."""
    row = runner.query(
        "SELECT reply FROM inbound_messages WHERE conversation_id = ? AND message_id = ?",
        (conversation_id, message_id),
    ).fetchone()
    return str(row[0]) if row else None
