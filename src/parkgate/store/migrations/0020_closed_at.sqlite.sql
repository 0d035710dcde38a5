-- parkgate schema v20 (SQLite): when an ask closed, kept apart from when it was answered.
--
-- closed_at: the moment the ask closed (NULL while open). An answer's or a cancel's is
-- that moment; an expired ask's is its due time (last_touched + ttl_seconds), never the
-- moment of the read that found it lapsed. answered_at is now set only for answers
-- (status 'answered'), so answered_at - asked_at is a time to answer.
-- Back-fill: a closed row's closed_at is its answered_at (the close's time as recorded so
-- far), an expired row's no later than its due time; then answered_at is cleared on rows
-- that were not answered.
ALTER TABLE asks ADD COLUMN closed_at TEXT;
UPDATE asks SET closed_at = answered_at WHERE status IN ('answered', 'cancelled');
UPDATE asks SET closed_at = min(
        coalesce(answered_at, '9999'),
        strftime('%Y-%m-%dT%H:%M:%f', julianday(last_touched) + ttl_seconds / 86400.0) || '000+00:00'
    )
    WHERE status = 'expired';
UPDATE asks SET answered_at = NULL WHERE status IN ('cancelled', 'expired') AND answered_at IS NOT NULL;
-- History lists closed asks by their close, and any ask by when it was asked, newest first.
CREATE INDEX IF NOT EXISTS asks_by_closed ON asks (closed_at) WHERE closed_at IS NOT NULL;
CREATE INDEX IF NOT EXISTS asks_by_asked ON asks (asked_at);
-- A close's channel job is due at the close (v13's trigger took answered_at, which a
-- cancel or an expiry no longer sets).
DROP TRIGGER IF EXISTS channel_close_job;
CREATE TRIGGER channel_close_job AFTER UPDATE OF status ON asks
WHEN OLD.status = 'open' AND NEW.status <> 'open'
BEGIN
    INSERT INTO channel_outbox (ask_id, channel, job, payload, next_attempt_at, created_at)
    SELECT ask_id, channel, 'closed', '{}', NEW.closed_at, NEW.closed_at FROM channel_posts WHERE ask_id = NEW.id;
END;
