-- parkgate schema v12 (PostgreSQL): who may answer an ask, and who did.
--
-- responders: a JSON list of the senders who may answer (NULL: anyone); quorum: how many
-- of them must pick one option; both set when the ask is parked and never changed.
-- votes: a JSON list of each responder's current vote ({sender, option_index, answer, at};
-- NULL: none); answered_by: the sender whose message selected or answered the ask;
-- closed_by: the sender of a cancel word, or 'operator'. Nullable columns (and a constant
-- default) are added without rewriting the table.
ALTER TABLE asks ADD COLUMN responders TEXT;
ALTER TABLE asks ADD COLUMN quorum INTEGER NOT NULL DEFAULT 1;
ALTER TABLE asks ADD COLUMN votes TEXT;
ALTER TABLE asks ADD COLUMN answered_by TEXT;
ALTER TABLE asks ADD COLUMN closed_by TEXT;

-- parkgate_step writes the three that a message changes too: v4's function, with
-- new_votes, new_answered_by and new_closed_by after new_mismatches.
DROP FUNCTION parkgate_step(
    TEXT, TEXT, TEXT, TIMESTAMPTZ, INTEGER, DOUBLE PRECISION, TEXT, TEXT, TEXT, INTEGER,
    TIMESTAMPTZ, TIMESTAMPTZ, INTEGER, TEXT, TEXT, TEXT, TEXT, TIMESTAMPTZ, TEXT, TIMESTAMPTZ
);
CREATE FUNCTION parkgate_step(
    conv TEXT, msg TEXT, expected_id TEXT, expected_touched TIMESTAMPTZ, expected_misses INTEGER,
    expected_ttl DOUBLE PRECISION, new_status TEXT, new_outcome TEXT, new_answer TEXT, new_option_index INTEGER,
    new_last_touched TIMESTAMPTZ, new_answered_at TIMESTAMPTZ, new_mismatches INTEGER,
    new_votes TEXT, new_answered_by TEXT, new_closed_by TEXT,
    run TEXT, run_status TEXT, run_outcome TEXT, run_pending_ask_id TEXT, run_updated_at TIMESTAMPTZ,
    reply TEXT, received_at TIMESTAMPTZ
) RETURNS void LANGUAGE plpgsql VOLATILE AS $step$
BEGIN
    UPDATE asks SET status = new_status, outcome = new_outcome, answer = new_answer,
        option_index = new_option_index, last_touched = new_last_touched,
        answered_at = new_answered_at, mismatches = new_mismatches,
        votes = new_votes, answered_by = new_answered_by, closed_by = new_closed_by
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
