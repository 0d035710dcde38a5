"""Version 12 of the schema taken out again, for the tests that make an older store from a
new one (shared by the migration tests; a module, not a conftest)."""

from __future__ import annotations

from parkgate.store.migrations import iter_migrations

#: The asks' columns version 12 added.
V12_COLUMNS = ("responders", "quorum", "votes", "answered_by", "closed_by")
#: What the versions after 12 added as tables, taken out again (their records go with version 12's).
AFTER_V12 = ("DROP TABLE agent_states", "DROP TABLE ask_keys")
#: The asks' columns version 14 added (reminders and escalation).
V14_COLUMNS = (
    "remind_after",
    "escalate_after",
    "escalate_to",
    "reminders_sent",
    "escalated_at",
    "event_offset",
    "event_at",
)
#: SQLite: version 14's trigger, and version 20's remake of version 13's, dropped before
#: their columns (version 13 makes its trigger again; on PostgreSQL version 14's goes with
#: its function, in :data:`V12_STEP_BACK_TO_V4`).
SQLITE_BEFORE_V14 = ("DROP TRIGGER channel_close_job", "DROP TRIGGER asks_event_moves")
#: What version 20 added (when an ask closed, and the history's indexes), taken out again.
BEFORE_V20 = ("DROP INDEX asks_by_closed", "DROP INDEX asks_by_asked", "ALTER TABLE asks DROP COLUMN closed_at")
#: What version 19 added (a run's output), taken out again.
BEFORE_V19 = ("ALTER TABLE runs DROP COLUMN output",)
#: What version 17 changed (the follow-ups' watcher), put back as version 8 made it.
BEFORE_V17 = (
    "DROP INDEX follow_ups_pending",
    "ALTER TABLE follow_ups DROP COLUMN watcher",
    "CREATE INDEX follow_ups_pending ON follow_ups (ask_id) WHERE done_at IS NULL",
)
#: What version 12 and every later version added to both stores' tables, taken out
#: again, and their records (version 13's channel tables stay: it is made again as it is;
#: version 18's column of them goes).
BEFORE_V12 = (
    *BEFORE_V20,
    *BEFORE_V19,
    *BEFORE_V17,
    *AFTER_V12,
    "ALTER TABLE channel_posts DROP COLUMN sends",
    "DROP INDEX asks_event_due",
    *(f"ALTER TABLE asks DROP COLUMN {column}" for column in V14_COLUMNS),
    "ALTER TABLE outbox DROP COLUMN event_id",
    *(f"ALTER TABLE asks DROP COLUMN {column}" for column in V12_COLUMNS),
    "DELETE FROM schema_migrations WHERE version >= 12",
)
#: PostgreSQL: the latest parkgate_step (version 20's) dropped, and version 4's made again.
V12_STEP_BACK_TO_V4 = (
    "DROP FUNCTION parkgate_event_moves() CASCADE",  # version 14's trigger goes with it
    "DROP FUNCTION parkgate_step(TEXT, TEXT, TEXT, TIMESTAMPTZ, INTEGER, DOUBLE PRECISION, TEXT, TEXT, TEXT, "
    "INTEGER, TIMESTAMPTZ, TIMESTAMPTZ, INTEGER, TEXT, TEXT, TEXT, TIMESTAMPTZ, TEXT, TEXT, TEXT, TEXT, "
    "TIMESTAMPTZ, TEXT, TIMESTAMPTZ)",
    dict(iter_migrations("postgres"))[4],
)
