-- parkgate schema v1 (SQLite). Timestamps are ISO 8601 UTC text.
CREATE TABLE runs (
    id             TEXT PRIMARY KEY,
    conversation_id TEXT NOT NULL,
    workflow       TEXT,
    status         TEXT NOT NULL CHECK (status IN ('running', 'complete')),
    outcome        TEXT,
    context        TEXT NOT NULL DEFAULT '{}',
    pending_ask_id TEXT,
    created_at     TEXT NOT NULL,
    updated_at     TEXT NOT NULL
);
CREATE TABLE asks (
    id              TEXT PRIMARY KEY,
    conversation_id TEXT NOT NULL,
    run_id          TEXT NOT NULL REFERENCES runs(id),
    kind            TEXT NOT NULL CHECK (kind IN ('choice', 'text')),
    prompt          TEXT NOT NULL,
    options         TEXT NOT NULL DEFAULT '[]',
    status          TEXT NOT NULL CHECK (status IN ('open', 'answered', 'cancelled', 'expired')),
    outcome         TEXT,
    answer          TEXT,
    option_index    INTEGER,
    asked_at        TEXT NOT NULL,
    last_touched    TEXT NOT NULL,
    answered_at     TEXT,
    mismatches      INTEGER NOT NULL DEFAULT 0,
    ttl_seconds     REAL NOT NULL,
    phase           TEXT,
    default_answer  TEXT,
    callback_url    TEXT
);
-- At most one open ask per conversation, and the index every per-message read uses.
CREATE UNIQUE INDEX asks_open_by_conversation ON asks (conversation_id) WHERE status = 'open';
-- The audit: open asks oldest first.
CREATE INDEX asks_open_by_age ON asks (asked_at) WHERE status = 'open';
CREATE INDEX asks_by_run ON asks (run_id);
CREATE TABLE inbound_messages (
    conversation_id TEXT NOT NULL,
    message_id      TEXT NOT NULL,
    reply           TEXT NOT NULL,
    received_at     TEXT NOT NULL,
    PRIMARY KEY (conversation_id, message_id)
);
CREATE TABLE outbox (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    ask_id          TEXT NOT NULL,
    url             TEXT NOT NULL,
    payload         TEXT NOT NULL,
    attempts        INTEGER NOT NULL DEFAULT 0,
    next_attempt_at TEXT NOT NULL,
    delivered_at    TEXT,
    last_error      TEXT,
    created_at      TEXT NOT NULL
);
CREATE INDEX outbox_due ON outbox (next_attempt_at) WHERE delivered_at IS NULL;
