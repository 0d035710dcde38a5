-- parkgate schema v13 (PostgreSQL): asks posted to a channel (Slack, Telegram, ...), and the
-- channel jobs queued for them.
--
-- channel_posts: one row per ask posted to a channel. target is the JSON the caller gave
-- (where to post); location the JSON the platform answered (where it was posted), NULL
-- until the post job succeeds; thread_key the platform thread whose replies and buttons
-- go to the ask (set by the post job), looked up by (channel, thread_key).
-- channel_outbox: the durable queue of channel jobs (post, closed, reply), written in the
-- same transaction as the ask's park, close or message (a close's by the trigger below, so
-- that every close queues it, the one-statement step of a message included); claimed with a lease
-- (next_attempt_at), retried with backoff, done_at or failed_at (with last_error) once
-- finished. A job waits for its ask's earlier jobs: a close never overtakes the post.
-- (IF NOT EXISTS: a test steps a store back to an older version by its records alone.)
CREATE TABLE IF NOT EXISTS channel_posts (
    ask_id     TEXT PRIMARY KEY,
    channel    TEXT NOT NULL,
    target     TEXT NOT NULL,
    location   TEXT,
    thread_key TEXT,
    posted_at  TIMESTAMPTZ
);
CREATE INDEX IF NOT EXISTS channel_posts_thread ON channel_posts (channel, thread_key) WHERE thread_key IS NOT NULL;
CREATE TABLE IF NOT EXISTS channel_outbox (
    id              BIGSERIAL PRIMARY KEY,
    ask_id          TEXT NOT NULL,
    channel         TEXT NOT NULL,
    job             TEXT NOT NULL,
    payload         TEXT NOT NULL,
    attempts        INTEGER NOT NULL DEFAULT 0,
    next_attempt_at TIMESTAMPTZ NOT NULL,
    done_at         TIMESTAMPTZ,
    failed_at       TIMESTAMPTZ,
    last_error      TEXT,
    created_at      TIMESTAMPTZ NOT NULL
);
CREATE INDEX IF NOT EXISTS channel_outbox_due ON channel_outbox (next_attempt_at) WHERE done_at IS NULL AND failed_at IS NULL;
CREATE INDEX IF NOT EXISTS channel_outbox_ask ON channel_outbox (ask_id, id) WHERE done_at IS NULL AND failed_at IS NULL;
-- Every close of a posted ask (status leaves 'open', by any statement, parkgate_step's
-- included) queues its update, due at the close (answered_at is the close's time).
CREATE OR REPLACE FUNCTION parkgate_channel_close_job() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO channel_outbox (ask_id, channel, job, payload, next_attempt_at, created_at)
    SELECT ask_id, channel, 'closed', '{}', NEW.answered_at, NEW.answered_at FROM channel_posts WHERE ask_id = NEW.id;
    RETURN NULL;
END
$$;
CREATE OR REPLACE TRIGGER channel_close_job AFTER UPDATE OF status ON asks FOR EACH ROW
WHEN (OLD.status = 'open' AND NEW.status <> 'open') EXECUTE FUNCTION parkgate_channel_close_job();
