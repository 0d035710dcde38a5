-- parkgate schema v17 (SQLite): whose watcher follows an ask up.
--
-- watcher names the watcher that acts on the ask's close (an adapter's agent or graph,
-- given at park as follow_up="<name>"; NULL for follow_up=true). A named watcher lists
-- only its own follow-ups, so nobody else's closed asks (another tenant's, another
-- agent's whose watcher is down) fill its page. The follow-ups pending before this
-- version get '' (no park writes it: a name is never empty): every named watcher lists
-- those, as all of them did before, so an upgrade strands none. The partial index leads
-- with watcher for that lookup and still covers the listing without one.
ALTER TABLE follow_ups ADD COLUMN watcher TEXT;
UPDATE follow_ups SET watcher = '' WHERE done_at IS NULL;
DROP INDEX follow_ups_pending;
CREATE INDEX follow_ups_pending ON follow_ups (watcher, ask_id) WHERE done_at IS NULL;
