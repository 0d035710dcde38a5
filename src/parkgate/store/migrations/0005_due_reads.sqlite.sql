-- parkgate schema v5 (SQLite): due reads, an ask's context, and the deliverers' heartbeat.
--
-- due_at is when an open ask falls due (last touched + TTL, in Unix seconds), kept only
-- for asks that something waits on (a callback, an adapter's watcher); NULL otherwise.
-- The deliverer reads the asks whose due_at has passed through the ordinary read, which
-- closes them as expired: the lifetime is still decided by that read, never by the index.
ALTER TABLE asks ADD COLUMN due_at REAL;
-- Whatever else the caller parked with the ask (JSON object), shown with it; NULL: none.
ALTER TABLE asks ADD COLUMN context TEXT;
-- Unix seconds of an ISO time as parkgate writes it (YYYY-MM-DDTHH:MM:SS.ffffff+00:00):
-- whole seconds through julianday, rounded, then the microseconds from the text, so the
-- value is as exact as Python's datetime.timestamp().
UPDATE asks SET due_at = round((julianday(substr(last_touched, 1, 19)) - 2440587.5) * 86400.0)
        + CAST(substr(last_touched, 21, 6) AS INTEGER) / 1000000.0 + ttl_seconds
    WHERE status = 'open' AND callback_url IS NOT NULL;
CREATE INDEX asks_due ON asks (due_at) WHERE status = 'open' AND due_at IS NOT NULL;
-- A touch (a miss, a re-show) or a changed TTL moves the due time in the same statement.
CREATE TRIGGER asks_due_moves AFTER UPDATE OF last_touched, ttl_seconds ON asks
    WHEN NEW.due_at IS NOT NULL AND NEW.status = 'open'
BEGIN
    UPDATE asks SET due_at = round((julianday(substr(NEW.last_touched, 1, 19)) - 2440587.5) * 86400.0)
            + CAST(substr(NEW.last_touched, 21, 6) AS INTEGER) / 1000000.0 + NEW.ttl_seconds
        WHERE id = NEW.id;
END;
-- A callback given up on (its attempts ran out, or its URL can never be sent to): kept
-- with its last error until an operator re-arms it.
ALTER TABLE outbox ADD COLUMN failed_at TEXT;

-- One row per running deliverer, stamped while it runs: a gateway that writes callbacks
-- warns when no deliverer has stamped lately.
CREATE TABLE deliverers (
    id      TEXT PRIMARY KEY,
    beat_at TEXT NOT NULL
);
