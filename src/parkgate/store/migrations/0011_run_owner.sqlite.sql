-- parkgate schema v11 (SQLite): who started a run, so that only its owner parks in it.
--
-- A run's owner is the name of the HTTP token whose ask started it (NULL for the library,
-- or a server without named tokens). A park naming another owner's run is refused like a
-- park in a complete run. Runs started before this version take the owner of their asks:
-- a passing index on the owned asks keeps that one UPDATE from reading every ask per run.
ALTER TABLE runs ADD COLUMN owner TEXT;
CREATE INDEX owned_asks_by_run ON asks (run_id) WHERE owner IS NOT NULL;
UPDATE runs SET owner = (
    SELECT asks.owner FROM asks WHERE asks.run_id = runs.id AND asks.owner IS NOT NULL LIMIT 1
) WHERE id IN (SELECT run_id FROM asks WHERE owner IS NOT NULL);
DROP INDEX owned_asks_by_run;
