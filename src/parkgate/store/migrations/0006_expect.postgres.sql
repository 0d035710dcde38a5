-- parkgate schema v6 (PostgreSQL): asks.expect, the form a text ask's answer must take
-- (parkgate.core.expect: JSON such as {"form":"integer","minimum":1}; NULL for any text).
-- Set when the ask is parked and never changed, so parkgate_step and the other UPDATEs
-- leave it alone. A nullable column without a default is added without rewriting the table.
ALTER TABLE asks ADD COLUMN expect TEXT;
