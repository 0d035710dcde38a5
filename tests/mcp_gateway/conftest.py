"""The MCP gateway tests' fixtures: a database (SQLite; PostgreSQL where a test asks for
it), and a live parkgate HTTP server on it (see ``harness.py``)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from harness import TOKEN, Setup
from live_server import Server

from parkgate import ManualClock


@pytest.fixture(params=["sqlite"])
def setup(request: pytest.FixtureRequest, store_url_factory: Any, tmp_path: Path) -> Setup:
    location = store_url_factory(request.param, migrated=True)
    return Setup(location.url, location.schema, tmp_path)


@pytest.fixture
def http_server(setup: Setup) -> Iterator[Server]:
    """A parkgate HTTP server on the gateway's database (in a thread, the real clock)."""
    server = Server(
        setup.db_url,
        setup.folder / "server.log",
        token=TOKEN,
        schema=setup.schema,
        extra_env=dict(setup.env),
        in_thread=True,
    ).start()
    yield server
    server.stop()


@pytest.fixture
def clocked_http_server(setup: Setup, clock: ManualClock) -> Iterator[Server]:
    """A parkgate HTTP server on the gateway's database, reading ``clock`` (in a thread)."""
    server = Server(
        setup.db_url,
        setup.folder / "server.log",
        token=TOKEN,
        schema=setup.schema,
        extra_env=dict(setup.env),
        in_thread=True,
        clock=clock,
    ).start()
    yield server
    server.stop()
