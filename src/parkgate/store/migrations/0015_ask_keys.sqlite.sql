-- parkgate schema v15: idempotency keys, in a table of their own.
--
-- A park with a key records (owner, key, ask_id) in the same transaction as the ask; a
-- later park with the same owner and key finds the ask here and returns it instead of
-- parking again. owner is '' for asks parked without one. The primary key is the lookup
-- and the guard: two parks racing on one key cannot both record it.
CREATE TABLE ask_keys (
    owner TEXT NOT NULL,
    key TEXT NOT NULL,
    ask_id TEXT NOT NULL,
    PRIMARY KEY (owner, key)
);
