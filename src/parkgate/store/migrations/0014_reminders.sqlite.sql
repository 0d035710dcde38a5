-- parkgate schema v14 (SQLite): reminders and escalation as due times kept with the ask,
-- and an id for each callback event.
--
-- remind_after: a JSON list of offsets in seconds from the last touch, one per reminder
-- (NULL: none); escalate_after: seconds from the last touch to the escalation (NULL: none);
-- escalate_to: a JSON list of the responders the escalation adds. reminders_sent counts the
-- reminders fired, escalated_at records when the escalation fired. event_offset is the
-- seconds from the last touch to the next reminder or escalation, and event_at that due
-- time (Unix seconds), both NULL once none remains: the deliverer reads the asks whose
-- event_at has passed, as it reads due_at. A touch moves event_at as it moves due_at; a
-- reminder or an escalation is no touch (it never writes last_touched).
ALTER TABLE asks ADD COLUMN remind_after TEXT;
ALTER TABLE asks ADD COLUMN escalate_after REAL;
ALTER TABLE asks ADD COLUMN escalate_to TEXT;
ALTER TABLE asks ADD COLUMN reminders_sent INTEGER NOT NULL DEFAULT 0;
ALTER TABLE asks ADD COLUMN escalated_at TEXT;
ALTER TABLE asks ADD COLUMN event_offset REAL;
ALTER TABLE asks ADD COLUMN event_at REAL;
CREATE INDEX asks_event_due ON asks (event_at) WHERE status = 'open' AND event_at IS NOT NULL;
CREATE TRIGGER asks_event_moves AFTER UPDATE OF last_touched ON asks
    WHEN NEW.event_at IS NOT NULL AND NEW.status = 'open'
BEGIN
    UPDATE asks SET event_at = round((julianday(substr(NEW.last_touched, 1, 19)) - 2440587.5) * 86400.0)
            + CAST(substr(NEW.last_touched, 21, 6) AS INTEGER) / 1000000.0 + NEW.event_offset
        WHERE id = NEW.id;
END;
-- The event a callback carries (ask.closed, ask.reminder, ...): its webhook-id, the same on
-- every attempt. NULL on rows queued before this version (their ask id is used).
ALTER TABLE outbox ADD COLUMN event_id TEXT;
