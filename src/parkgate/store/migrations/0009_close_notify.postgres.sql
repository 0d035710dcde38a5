-- parkgate schema v9 (PostgreSQL): a close sends NOTIFY only when something can hear it.
--
-- PostgreSQL serialises the commits of transactions that NOTIFY (they queue on one lock
-- to append to the notification queue), so a NOTIFY on every close costs plain asks,
-- which nobody in another process waits on, their parallelism. A close needs one only
-- when something may wait on the ask elsewhere:
-- - an ask with a due time (a callback, or watched: the deliverers and the adapters'
--   watchers wait on those), and
-- - an ask a waiter has said it waits on (Gateway.wait, the HTTP long-poll): the waiter's
--   process sets `waited` before it sleeps.
-- Setting `waited` is an UPDATE of the row, so it is ordered with a close by the row
-- lock: either the flag commits first and the close sees it and notifies, or the close
-- commits first and the flag's `WHERE status = 'open'` finds the ask closed, which tells
-- the waiter at once. No close a waiter needs goes unheard.
-- `waited` is in no index: setting it, like a touch, stays a HOT update.
ALTER TABLE asks ADD COLUMN IF NOT EXISTS waited BOOLEAN NOT NULL DEFAULT false;
DROP TRIGGER IF EXISTS asks_closed ON asks;
CREATE TRIGGER asks_closed AFTER UPDATE OF status ON asks
    FOR EACH ROW WHEN (OLD.status = 'open' AND NEW.status <> 'open' AND (OLD.due_at IS NOT NULL OR NEW.waited))
    EXECUTE FUNCTION parkgate_notify('closed');
