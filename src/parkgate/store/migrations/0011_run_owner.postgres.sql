-- parkgate schema v11 (PostgreSQL): who started a run, so that only its owner parks in it.
--
-- A run's owner is the name of the HTTP token whose ask started it (NULL for the library,
-- or a server without named tokens). A park naming another owner's run is refused like a
-- park in a complete run. Runs started before this version take the owner of their asks.
ALTER TABLE runs ADD COLUMN owner TEXT;
UPDATE runs SET owner = asks.owner FROM asks WHERE asks.run_id = runs.id AND asks.owner IS NOT NULL;
