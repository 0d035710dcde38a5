-- parkgate schema v21 (PostgreSQL): the event log, what happened to each ask.
--
-- ask_events: one append-only row per state change of an ask (parked, a message that
-- touched it, a refusal, a vote, a reminder, the escalation, the close, a callback or
-- event delivery, a channel post, a late answer), written in the transaction of the
-- change it records. id orders every event (the stream's Last-Event-ID); seq counts one
-- ask's events from 1 (unique per ask: a second writer of the same number fails and is
-- retried). owner is the ask's owner, kept so that a tenant's reads filter on the row.
-- data is the event's JSON object. No foreign key: pruning the log never touches asks.
-- No index on at: a read by time (an export, a prune) walks the log in id order, and
-- each index is one more page in the commit of every message.
CREATE TABLE IF NOT EXISTS ask_events (
    id     BIGSERIAL PRIMARY KEY,
    ask_id TEXT NOT NULL,
    seq    INTEGER NOT NULL,
    at     TIMESTAMPTZ NOT NULL,
    type   TEXT NOT NULL,
    sender TEXT,
    owner  TEXT,
    data   TEXT NOT NULL DEFAULT '{}'
);
CREATE UNIQUE INDEX IF NOT EXISTS ask_events_by_ask ON ask_events (ask_id, seq);
