"""A LangGraph node that asks with a ``key``, in a real process killed and run again before
and after the answer: the person is asked once and the graph ends with their answer, on
SQLite and on PostgreSQL."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from parkgate import AskStatus, Gateway
from parkgate.core.kinds import ReplyKind
from polling import until

if TYPE_CHECKING:
    from conftest import StoreLocation

AGENT = Path(__file__).resolve().parent / "keyed_node_agent.py"


def _launch(location: StoreLocation, checkpoints: Path, conversation: str) -> subprocess.Popen[str]:
    env = {key: value for key, value in os.environ.items() if not key.startswith("PARKGATE_")}
    env["PARKGATE_DB"] = location.url
    if location.schema is not None:
        env["PARKGATE_PG_SCHEMA"] = location.schema
    command = [sys.executable, str(AGENT), str(checkpoints), conversation, "thread-1"]
    return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)


def _killed(process: subprocess.Popen[str]) -> None:
    process.kill()
    process.communicate(timeout=30)


def test_a_keyed_node_killed_before_and_after_the_answer_asks_once_and_gets_it(
    store_location: StoreLocation, tmp_path: Path
) -> None:
    checkpoints, conversation = tmp_path / "checkpoints.db", "c-keyed"
    with Gateway(store=store_location.open()) as gateway:
        first = _launch(store_location, checkpoints, conversation)
        until(lambda: gateway.parked(conversation) is not None, 60, "the first run's ask")
        parked = gateway.parked(conversation)
        assert parked is not None
        _killed(first)  # killed while the person has not answered

        second = _launch(store_location, checkpoints, conversation)
        assert second.stdout is not None
        assert second.stdout.readline().strip() == f"asked {parked.id} parked=True"  # the same ask, still open
        _killed(second)

        assert gateway.handle(conversation, "1").kind is ReplyKind.SELECTED  # answered while nothing runs

        third = _launch(store_location, checkpoints, conversation)
        out, err = third.communicate(timeout=120)
        assert third.returncode == 0, err
        assert out.splitlines() == [f"asked {parked.id} parked=False", "decision=Deploy"]
        assert gateway.get(parked.id).status is AskStatus.ANSWERED
        with gateway.store.transaction() as tx:
            asked = tx.query("SELECT count(*) FROM asks WHERE conversation_id = ?", (conversation,)).fetchone()[0]  # type: ignore[attr-defined]
        assert asked == 1  # one question, however often the node ran
