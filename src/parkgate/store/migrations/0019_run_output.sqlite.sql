-- parkgate schema v19 (SQLite): what a run gave when it finished.
--
-- runs.output holds, as JSON text, what the run's caller recorded with finish_run: the
-- OpenAI Agents and Pydantic AI adapters record an agent's final output there when a
-- resumed run finishes, whichever process resumed it. NULL: nothing recorded (every run
-- before this version, and runs whose caller gives nothing).
ALTER TABLE runs ADD COLUMN output TEXT;
