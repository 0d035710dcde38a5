-- parkgate schema v4 (PostgreSQL): parkgate_step finds the ask by its primary key, always.
--
-- In v3 its UPDATE said `WHERE id = expected_id AND status = 'open' AND ...`. That
-- `status = 'open'` lets the planner serve the UPDATE from either partial index on open
-- asks, and on a table without statistics (a new deployment, until autovacuum first
-- analyses it; never, where autovacuum is off) it costed a full scan of
-- asks_open_by_age, filtering on id, the same as the primary key lookup, and often
-- chose it. PL/pgSQL keeps a statement's plan until something invalidates it, so every
-- message then read every open ask: the server's time grew with the number of parked
-- asks (measured with ~1,000 open: 2.5x the server CPU a message that v4 takes).
--
-- The same check, written with IS NOT DISTINCT FROM (the compared columns are all NOT
-- NULL, so it means `=` here): no partial index's predicate can be proved from it,
-- which leaves the primary key as the only index that fits, whatever the statistics.
CREATE OR REPLACE FUNCTION parkgate_step(
    conv TEXT, msg TEXT, expected_id TEXT, expected_touched TIMESTAMPTZ, expected_misses INTEGER,
    expected_ttl DOUBLE PRECISION, new_status TEXT, new_outcome TEXT, new_answer TEXT, new_option_index INTEGER,
    new_last_touched TIMESTAMPTZ, new_answered_at TIMESTAMPTZ, new_mismatches INTEGER,
    run TEXT, run_status TEXT, run_outcome TEXT, run_pending_ask_id TEXT, run_updated_at TIMESTAMPTZ,
    reply TEXT, received_at TIMESTAMPTZ
) RETURNS void LANGUAGE plpgsql VOLATILE AS $step$
BEGIN
    UPDATE asks SET status = new_status, outcome = new_outcome, answer = new_answer,
        option_index = new_option_index, last_touched = new_last_touched,
        answered_at = new_answered_at, mismatches = new_mismatches
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
