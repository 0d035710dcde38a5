-- parkgate schema v12 (SQLite): who may answer an ask, and who did.
--
-- responders: a JSON list of the senders who may answer (NULL: anyone); quorum: how many
-- of them must pick one option; both set when the ask is parked and never changed.
-- votes: a JSON list of each responder's current vote ({sender, option_index, answer, at};
-- NULL: none); answered_by: the sender whose message selected or answered the ask;
-- closed_by: the sender of a cancel word, or 'operator'. Nullable columns (and a constant
-- default) are added without rewriting the table.
ALTER TABLE asks ADD COLUMN responders TEXT;
ALTER TABLE asks ADD COLUMN quorum INTEGER NOT NULL DEFAULT 1;
ALTER TABLE asks ADD COLUMN votes TEXT;
ALTER TABLE asks ADD COLUMN answered_by TEXT;
ALTER TABLE asks ADD COLUMN closed_by TEXT;
