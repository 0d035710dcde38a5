"""The adapter examples (examples/, shown in docs/adapters/) run as written, on a SQLite file and on PostgreSQL."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from conftest import StoreLocation

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def run_example(name: str, location: StoreLocation) -> list[str]:
    env = {**os.environ, "PARKGATE_DB": location.url}
    env.pop("PARKGATE_PG_SCHEMA", None)
    if location.schema is not None:
        env["PARKGATE_PG_SCHEMA"] = location.schema
    done = subprocess.run([sys.executable, str(EXAMPLES / name)], capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


def test_the_langgraph_approval_example(store_location: StoreLocation) -> None:
    lines = run_example("langgraph_approval.py", store_location)
    assert "1. Deploy" in lines and "Selected 1. Deploy" in lines
    assert lines[-4:] == [
        "api: deployed",
        "Dropped the menu, nothing ran.",
        "web: not deployed (cancelled)",
        "db: not deployed (cancelled)",
    ]
    # Every ask it parked is closed: nothing is left open for a thread that moved on.
    assert store_location.raw_query("SELECT count(*) FROM asks WHERE status = 'open'") == [(0,)]
    assert store_location.raw_query("SELECT count(*) FROM runs WHERE status = 'running'") == [(0,)]


def test_the_langchain_review_example(store_location: StoreLocation) -> None:
    lines = run_example("langchain_hitl.py", store_location)
    assert lines[0] == "Run send_email (1 of 2)?"
    assert "Selected 2. Reject" in lines
    assert "send_email: sent to ops@example.com" in lines
    assert "Why not run delete_file? The agent is told your reason; type - to give none." in lines
    assert (
        "delete_file: User rejected the tool call for `delete_file` with reason: "
        "The auditors still need it. (rejected by U_ALICE)"
    ) in lines
    assert lines[-1] == "agent: All done."
    assert store_location.raw_query("SELECT count(*) FROM asks WHERE status = 'open'") == [(0,)]


def test_the_openai_agents_approval_example(store_location: StoreLocation) -> None:
    lines = run_example("openai_agents_approval.py", store_location)
    assert lines[:2] == ["Run deploy?", 'Arguments: {"service": "api"}']
    assert "Selected 1. Approve" in lines and "Dropped the menu, nothing ran." in lines
    cancelled = "agent: Deploy result: No decision: the question was cancelled; the tool did not run"
    assert [line for line in lines if line.startswith("agent:")] == [
        "agent: Deploy result: api is live",
        cancelled,
        "agent: Deploy result: db is live",  # resumed by the second process
        cancelled,  # the operator's cancel, resumed by the watcher's pass
    ]
    assert "followed up: 1" in lines
    assert store_location.raw_query("SELECT count(*) FROM asks WHERE status = 'open'") == [(0,)]
    assert store_location.raw_query("SELECT count(*) FROM runs WHERE status = 'running'") == [(0,)]
    assert store_location.raw_query("SELECT count(*) FROM agent_states") == [(0,)]


def test_the_pydantic_ai_approval_example(store_location: StoreLocation) -> None:
    lines = run_example("pydantic_ai_approval.py", store_location)
    assert lines[:2] == ["Run deploy?", 'Arguments: {"service": "api"}']
    assert "Why not run deploy? The agent is told your reason; type - to give none." in lines
    assert [line for line in lines if line.startswith("agent:")] == [
        "agent: Deploy result: api is live",
        "agent: Deploy result: Rejected: the freeze starts at noon",
        "agent: Deploy result: db is live",
        "agent: Deploy result: No decision: the question expired after 1 s; the tool did not run",
    ]  # the last from the result hook of the watcher that resumed the run, which keeps it too:
    assert "kept on the run: Deploy result: No decision: the question expired after 1 s; the tool did not run" in lines
    assert store_location.raw_query("SELECT count(*) FROM asks WHERE status = 'open'") == [(0,)]
    assert store_location.raw_query("SELECT count(*) FROM runs WHERE status = 'running'") == [(0,)]
    assert store_location.raw_query("SELECT count(*) FROM agent_states") == [(0,)]
