-- parkgate schema v5 (PostgreSQL): due reads, close notifications, an ask's context, and
-- the deliverers' heartbeat.
--
-- due_at is when an open ask falls due (last touched + TTL), kept only for asks that
-- something waits on (a callback, an adapter's watcher); NULL otherwise, so a touch of
-- any other ask leaves every index alone (and stays a HOT update). The deliverer reads
-- the asks whose due_at has passed through the ordinary read, which closes them as
-- expired: the lifetime is still decided by that read, never by the index.
ALTER TABLE asks ADD COLUMN due_at TIMESTAMPTZ;
-- Whatever else the caller parked with the ask (JSON object), shown with it; NULL: none.
ALTER TABLE asks ADD COLUMN context TEXT;
UPDATE asks SET due_at = last_touched + ttl_seconds * interval '1 second'
    WHERE status = 'open' AND callback_url IS NOT NULL;
CREATE INDEX asks_due ON asks (due_at) WHERE status = 'open' AND due_at IS NOT NULL;

-- A touch (a miss, a re-show) or a changed TTL moves the due time in the same statement.
CREATE OR REPLACE FUNCTION parkgate_due_moves() RETURNS trigger LANGUAGE plpgsql AS $due$
BEGIN
    NEW.due_at := NEW.last_touched + NEW.ttl_seconds * interval '1 second';
    RETURN NEW;
END
$due$;
CREATE TRIGGER asks_due_moves BEFORE UPDATE OF last_touched, ttl_seconds ON asks
    FOR EACH ROW WHEN (OLD.due_at IS NOT NULL AND NEW.status = 'open')
    EXECUTE FUNCTION parkgate_due_moves();

-- Every process LISTENs on channel "parkgate"; a payload is "<schema> <event> <id>".
-- The transaction that closes an ask, parks one with a due time, or queues a callback
-- sends one (delivered at its commit, whichever statement or process wrote it).
CREATE OR REPLACE FUNCTION parkgate_notify() RETURNS trigger LANGUAGE plpgsql AS $notify$
BEGIN
    PERFORM pg_notify('parkgate', TG_TABLE_SCHEMA || ' ' || TG_ARGV[0] || ' ' || NEW.id::text);
    RETURN NULL;
END
$notify$;
CREATE TRIGGER asks_closed AFTER UPDATE OF status ON asks
    FOR EACH ROW WHEN (OLD.status = 'open' AND NEW.status <> 'open')
    EXECUTE FUNCTION parkgate_notify('closed');
CREATE TRIGGER asks_due_parked AFTER INSERT ON asks
    FOR EACH ROW WHEN (NEW.due_at IS NOT NULL)
    EXECUTE FUNCTION parkgate_notify('due');
CREATE TRIGGER outbox_queued AFTER INSERT ON outbox
    FOR EACH ROW EXECUTE FUNCTION parkgate_notify('outbox');

-- A callback given up on (its attempts ran out, or its URL can never be sent to): kept
-- with its last error until an operator re-arms it.
ALTER TABLE outbox ADD COLUMN failed_at TIMESTAMPTZ;

-- One row per running deliverer, stamped while it runs: a gateway that writes callbacks
-- warns when no deliverer has stamped lately.
CREATE TABLE deliverers (
    id      TEXT PRIMARY KEY,
    beat_at TIMESTAMPTZ NOT NULL
);
