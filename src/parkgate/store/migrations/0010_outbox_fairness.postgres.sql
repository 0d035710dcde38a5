-- parkgate schema v10 (PostgreSQL): the receiver's host and the ask's owner on each outbox row.
--
-- host (the callback URL's host, lower case) lets a deliverer claim due rows in turns
-- between hosts and keep a cap on the deliveries in flight to one host, so one slow
-- receiver cannot hold every delivery slot. owner (the token that parked the ask) lets a
-- token's undelivered callbacks count against its max_open_asks, on the partial index.
-- Rows queued before this version keep a NULL host and owner: they are claimed as one
-- group of their own and counted against nobody.
ALTER TABLE outbox ADD COLUMN host TEXT;
ALTER TABLE outbox ADD COLUMN owner TEXT;
CREATE INDEX outbox_pending_by_owner ON outbox (owner)
    WHERE delivered_at IS NULL AND failed_at IS NULL AND owner IS NOT NULL;
