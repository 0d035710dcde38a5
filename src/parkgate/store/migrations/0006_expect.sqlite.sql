-- parkgate schema v6 (SQLite): asks.expect, the form a text ask's answer must take
-- (parkgate.core.expect: JSON such as {"form":"integer","minimum":1}; NULL for any text).
-- Set when the ask is parked and never changed, so no UPDATE writes it.
ALTER TABLE asks ADD COLUMN expect TEXT;
