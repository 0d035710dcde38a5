-- parkgate schema v2 (PostgreSQL). No query reads asks by run_id: the index only cost
-- a write on every parked ask and on every update of one that was not HOT.
DROP INDEX IF EXISTS asks_by_run;
