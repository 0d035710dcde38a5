-- parkgate schema v8 (SQLite): follow-ups, what a waiter does once an ask it waits on closed.
--
-- A row is written with the ask when the caller asks for one (an adapter that resumes a
-- graph on the close). It stays pending (done_at NULL) until the waiter says its follow-up
-- is done, so a waiter that was not running when the ask closed finds it on its next look.
-- claimed_until leases the follow-up to one waiter at a time, across processes.
CREATE TABLE follow_ups (
    ask_id        TEXT PRIMARY KEY,
    claimed_until TEXT,
    done_at       TEXT
);
CREATE INDEX follow_ups_pending ON follow_ups (ask_id) WHERE done_at IS NULL;
