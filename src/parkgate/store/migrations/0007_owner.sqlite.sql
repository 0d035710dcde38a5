-- parkgate schema v5 (SQLite). Who parked an ask: the name of the HTTP token that parked
-- it (NULL for the library, or a server without named tokens). A token reads the asks it
-- parked, and its open asks are counted against its cap, on the partial index.
ALTER TABLE asks ADD COLUMN owner TEXT;
CREATE INDEX asks_open_by_owner ON asks (owner) WHERE status = 'open' AND owner IS NOT NULL;
