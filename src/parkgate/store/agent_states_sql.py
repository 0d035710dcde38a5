"""The agent SDKs' run states in SQL (``agent_states``), written once for both engines."""

from __future__ import annotations

from datetime import datetime

from parkgate.store.dialect import Runner


class SqlAgentStates:
    """:class:`~parkgate.store.base.AgentStates` on an engine's transaction."""

    __slots__ = ("_run",)

    def __init__(self, runner: Runner) -> None:
        self._run = runner

    def keep(self, run_id: str, state: str, now: datetime) -> None:
        self._run.send(
            "INSERT INTO agent_states (run_id, state, updated_at) VALUES (?, ?, ?) "
            "ON CONFLICT (run_id) DO UPDATE SET state = excluded.state, updated_at = excluded.updated_at",
            (run_id, state, self._run.dialect.encode_time(now)),
        )

    def kept(self, run_id: str) -> str | None:
        row = self._run.query("SELECT state FROM agent_states WHERE run_id = ?", (run_id,)).fetchone()
        return str(row[0]) if row is not None else None

    def forget(self, run_id: str) -> None:
        self._run.send("DELETE FROM agent_states WHERE run_id = ?", (run_id,))
