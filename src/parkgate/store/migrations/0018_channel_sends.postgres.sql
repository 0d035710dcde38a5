-- parkgate schema v18 (PostgreSQL): how many times an ask's post was sent to its platform,
-- and a NOTIFY when a channel job is queued.
--
-- channel_posts.sends counts the post job's platform calls begun: the deliverer adds one
-- before each call and records the post's location after it. More sends than the one
-- recorded means an earlier call may have posted a message whose result was never
-- recorded (a process killed mid-call, a lost answer): a press on such a message, in the
-- chat the ask was posted to, is taken as the ask's own.
-- A channel job queued (by a park, a message's reply, the close trigger of version 13)
-- sends "<schema> outbox channel" on channel "parkgate", delivered at the commit: the
-- deliverers of other processes wake for it as for a callback, and sleep otherwise. The
-- payload is the same for every row, so a transaction that queues several sends one.
ALTER TABLE channel_posts ADD COLUMN IF NOT EXISTS sends INTEGER NOT NULL DEFAULT 0;
CREATE OR REPLACE FUNCTION parkgate_channel_job_queued() RETURNS trigger LANGUAGE plpgsql AS $queued$
BEGIN
    PERFORM pg_notify('parkgate', TG_TABLE_SCHEMA || ' outbox channel');
    RETURN NULL;
END
$queued$;
CREATE OR REPLACE TRIGGER channel_outbox_queued AFTER INSERT ON channel_outbox
    FOR EACH ROW EXECUTE FUNCTION parkgate_channel_job_queued();
