-- parkgate schema v16 (SQLite): an agent SDK's serialised run state, kept with its run.
--
-- The OpenAI Agents and Pydantic AI adapters park a tool approval as an ask in a run and
-- keep what resumes the agent here (RunState's JSON, or the message history with the
-- decisions so far), so any process on the database can resume the run. One row a run;
-- the row is removed when the agent's run finishes.
CREATE TABLE agent_states (
    run_id     TEXT PRIMARY KEY,
    state      TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
