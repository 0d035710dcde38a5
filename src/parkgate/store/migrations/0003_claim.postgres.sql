-- parkgate schema v3 (PostgreSQL): parkgate_claim and parkgate_confirm_claim, the check
-- that lets a message be decided from what this process last committed, in one round trip.
--
-- Such a message's pipeline is: parkgate_claim, the writes, parkgate_confirm_claim,
-- Sync. The claim takes the conversation's lock (the same advisory lock and row lock a
-- reading transaction takes) and checks that the conversation is exactly as the caller
-- decided it was: the given open ask (id, last touch, miss count and TTL: the fields of
-- an open ask a step changes, and the one an operator may change by hand; the others
-- never change), or none open when expected_id is NULL, and the message
-- id not seen before. If not, it only notes so, in a setting local to the transaction;
-- the confirmation at the end then fails with serialization_failure (SQLSTATE 40001),
-- everything rolls back, and the store retries the message with a real read.
--
-- Why not fail at once: the server would skip every statement queued behind the claim,
-- and a skipped first PREPARE leaves the driver's prepared-statement cache naming a
-- statement the server never made. Failing last skips nothing.
--
-- Every statement of a VOLATILE function takes a new snapshot, so the SELECTs after the
-- lock see what the previous holder of the lock committed.
CREATE OR REPLACE FUNCTION parkgate_claim(
    conv TEXT, msg TEXT, expected_id TEXT, expected_touched TIMESTAMPTZ, expected_misses INTEGER,
    expected_ttl DOUBLE PRECISION
) RETURNS void LANGUAGE plpgsql VOLATILE AS $claim$
DECLARE
    found_id TEXT;
    found_touched TIMESTAMPTZ;
    found_misses INTEGER;
    found_ttl DOUBLE PRECISION;
BEGIN
    PERFORM pg_advisory_xact_lock(1885434467, hashtext(conv));  -- CONVERSATION_LOCK_CLASS
    SELECT id, last_touched, mismatches, ttl_seconds INTO found_id, found_touched, found_misses, found_ttl
        FROM asks WHERE conversation_id = conv AND status = 'open' FOR UPDATE;
    IF found_id IS DISTINCT FROM expected_id
        OR found_touched IS DISTINCT FROM expected_touched
        OR found_misses IS DISTINCT FROM expected_misses
        OR found_ttl IS DISTINCT FROM expected_ttl
        OR (msg IS NOT NULL AND EXISTS (
            SELECT 1 FROM inbound_messages WHERE conversation_id = conv AND message_id = msg
        )) THEN
        PERFORM set_config('parkgate.stale_claim', conv, true);
    END IF;
END
$claim$;

CREATE OR REPLACE FUNCTION parkgate_confirm_claim() RETURNS void LANGUAGE plpgsql VOLATILE AS $confirm$
DECLARE
    stale TEXT := coalesce(current_setting('parkgate.stale_claim', true), '');
BEGIN
    IF stale <> '' THEN
        RAISE EXCEPTION 'parkgate: conversation % changed since this process last saw it', stale
            USING ERRCODE = 'serialization_failure';
    END IF;
END
$confirm$;

-- The usual message in one statement: the ask's new state, its run's (when run is
-- given) and the stored reply (when reply is given), as the store would write them one
-- by one. No lock is taken first: the UPDATE is the check. It changes the ask only if
-- it is still open exactly as remembered; a concurrent writer holds the row until it
-- commits, and then the UPDATE re-checks that writer's version and finds no match. A
-- message seen before fails on the primary key of inbound_messages. Either way the
-- statement fails whole with nothing written; being the only statement, it can fail at
-- once, since nothing is queued behind it.
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
        WHERE id = expected_id AND status = 'open'
            AND last_touched = expected_touched AND mismatches = expected_misses
            AND ttl_seconds = expected_ttl;
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
