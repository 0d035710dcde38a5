"""Every expiry logs one JSON line on the server's stderr, under ``parkgate serve`` itself.

The server is the command an operator runs (``python -m parkgate serve``), with one
worker and with several. Asks are parked with a TTL of a fraction of a second, so they
expire for real (a process reads the real clock); each is read, over a fresh connection
each time (so the workers share the load), until a read closes it, and its line must be
on stderr: plain JSON, once, with the idle minutes.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from live_server import Server, running, wait_until

TTL_SECONDS = 0.3


def expiry_lines(server: Server) -> list[dict[str, Any]]:
    """The ``ask_expired`` lines on stderr; every one must be a whole JSON object."""
    found = []
    for line in server.stderr_text().splitlines():
        if "ask_expired" in line:
            record = json.loads(line)  # no prefix: the line is the JSON object
            assert isinstance(record, dict), line
            if record.get("event") == "ask_expired":
                found.append(record)
    return found


def status(server: Server, ask_id: str) -> str:
    """The ask's status, read over a fresh connection (a read past the TTL closes it)."""
    return str(httpx.get(f"{server.url}/v1/asks/{ask_id}", timeout=30).json()["status"])


@pytest.mark.parametrize("workers", [1, 2])
def test_serve_logs_one_json_line_on_stderr_for_every_expiry(tmp_path: Path, workers: int) -> None:
    server = Server(
        f"sqlite:///{tmp_path / 'parkgate.db'}",
        tmp_path / "stdout.log",
        workers=workers,
        via_cli=True,
        stderr_path=tmp_path / "stderr.log",
    )
    count = 6 * workers
    with running(server.start()):
        ask_ids = []
        for n in range(count):
            created = httpx.post(
                server.url + "/v1/asks",
                json={"conversation_id": f"exp-{n}", "prompt": "Deploy?", "options": ["Yes", "No"],
                      "ttl_seconds": TTL_SECONDS},
                timeout=30,
            )  # fmt: skip
            assert created.status_code == 201, created.text
            ask_ids.append(created.json()["ask_id"])
        for ask_id in ask_ids:  # a fresh connection each read: any worker may serve it
            wait_until(lambda ask_id=ask_id: status(server, ask_id) == "expired", 20, f"a read to expire {ask_id}")
        wait_until(
            lambda: len(expiry_lines(server)) >= count,
            20,
            f"{count} ask_expired lines on stderr:\n{server.log_tail()}",
        )
        for ask_id in ask_ids:  # reading an expired ask again logs nothing more
            assert httpx.get(f"{server.url}/v1/asks/{ask_id}", timeout=30).json()["status"] == "expired"
        lines = expiry_lines(server)
    assert sorted(line["ask_id"] for line in lines) == sorted(ask_ids)
    for line in lines:
        assert line["conversation_id"].startswith("exp-")
        assert isinstance(line["idle_minutes"], (int, float)) and line["idle_minutes"] >= 0
        assert line["ttl_seconds"] == TTL_SECONDS
    assert "ask_expired" not in server.log_text()  # stderr, not stdout
