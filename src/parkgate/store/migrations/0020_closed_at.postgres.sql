-- parkgate schema v20 (PostgreSQL): when an ask closed, kept apart from when it was answered.
--
-- closed_at: the moment the ask closed (NULL while open). An answer's or a cancel's is
-- that moment; an expired ask's is its due time (last_touched + ttl_seconds), never the
-- moment of the read that found it lapsed. answered_at is now set only for answers
-- (status 'answered'), so answered_at - asked_at is a time to answer.
-- Back-fill: a closed row's closed_at is its answered_at (the close's time as recorded so
-- far), an expired row's no later than its due time; then answered_at is cleared on rows
-- that were not answered.
ALTER TABLE asks ADD COLUMN closed_at TIMESTAMPTZ;
UPDATE asks SET closed_at = answered_at WHERE status IN ('answered', 'cancelled');
UPDATE asks SET closed_at = LEAST(answered_at, last_touched + ttl_seconds * interval '1 second')
    WHERE status = 'expired';
UPDATE asks SET answered_at = NULL WHERE status IN ('cancelled', 'expired') AND answered_at IS NOT NULL;
-- History lists closed asks by their close, and any ask by when it was asked, newest first.
CREATE INDEX IF NOT EXISTS asks_by_closed ON asks (closed_at) WHERE closed_at IS NOT NULL;
CREATE INDEX IF NOT EXISTS asks_by_asked ON asks (asked_at);

-- A close's channel job is due at the close (v13's function took answered_at, which a
-- cancel or an expiry no longer sets).
CREATE OR REPLACE FUNCTION parkgate_channel_close_job() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO channel_outbox (ask_id, channel, job, payload, next_attempt_at, created_at)
    SELECT ask_id, channel, 'closed', '{}', NEW.closed_at, NEW.closed_at FROM channel_posts WHERE ask_id = NEW.id;
    RETURN NULL;
END
$$;

-- parkgate_step writes closed_at too: v12's function, with new_closed_at after new_closed_by.
DROP FUNCTION IF EXISTS parkgate_step(
    TEXT, TEXT, TEXT, TIMESTAMPTZ, INTEGER, DOUBLE PRECISION, TEXT, TEXT, TEXT, INTEGER,
    TIMESTAMPTZ, TIMESTAMPTZ, INTEGER, TEXT, TEXT, TEXT, TEXT, TEXT, TEXT, TEXT, TIMESTAMPTZ, TEXT, TIMESTAMPTZ
);
CREATE FUNCTION parkgate_step(
    conv TEXT, msg TEXT, expected_id TEXT, expected_touched TIMESTAMPTZ, expected_misses INTEGER,
    expected_ttl DOUBLE PRECISION, new_status TEXT, new_outcome TEXT, new_answer TEXT, new_option_index INTEGER,
    new_last_touched TIMESTAMPTZ, new_answered_at TIMESTAMPTZ, new_mismatches INTEGER,
    new_votes TEXT, new_answered_by TEXT, new_closed_by TEXT, new_closed_at TIMESTAMPTZ,
    run TEXT, run_status TEXT, run_outcome TEXT, run_pending_ask_id TEXT, run_updated_at TIMESTAMPTZ,
    reply TEXT, received_at TIMESTAMPTZ
) RETURNS void LANGUAGE plpgsql VOLATILE AS $step$
BEGIN
    UPDATE asks SET status = new_status, outcome = new_outcome, answer = new_answer,
        option_index = new_option_index, last_touched = new_last_touched,
        answered_at = new_answered_at, mismatches = new_mismatches,
        votes = new_votes, answered_by = new_answered_by, closed_by = new_closed_by,
        closed_at = new_closed_at
        WHERE id = expected_id
            AND (status, last_touched, mismatches, ttl_seconds)
                IS NOT DISTINCT FROM ('open', expected_touched, expected_misses, expected_ttl);
    IF NOT FOUND THEN
        RAISE EXCEPTION 'parkgate: conversation % changed since this process last saw it', conv
            USING ERRCODE = 'serialization_failure';
    END IF;
    IF run IS NOT NULL THEN
        UPDATE runs SET status = run_status, outcome = run_outcome, pending_ask_id = run_pending_ask_id,
            updated_at = run_updated_at
            WHERE id = run;
    END IF;
    IF reply IS NOT NULL THEN
        INSERT INTO inbound_messages (conversation_id, message_id, reply, received_at)
            VALUES (conv, msg, reply, received_at);
    END IF;
END
$step$;
