"""Fixtures for the HTTP tests: real servers on loopback, served from a thread of the test
process unless the process is the point (kill -9, a restart, several workers, the CLI).

Tests above the store run on SQLite: ``engine`` is ``sqlite`` unless a test whose
behaviour depends on the engine parametrises it itself
(``@pytest.mark.parametrize("engine", STORE_PARAMS)``, with a comment saying why).

- ``served``: one in-thread SQLite server per test module, shared by that module's tests;
  each test uses its own conversations. ``served_sqlite`` is the same server.
- ``database(engine)`` / ``sqlite_database``: a fresh database location for a test
  that needs servers of its own (a StoreLocation from the shared ``store_url_factory``).
- ``start_server(location, token=None, workers=1, in_thread=None, **options)``: a started
  :class:`Server` (``options`` are the Server's own, ``extra_env`` or ``clock`` say); in a
  thread unless ``in_thread=False``, several workers or ``via_cli``; every server started
  here is stopped before the database is dropped.
- ``conv``: a conversation id no other test uses.
- ``receiver``: a started callback :class:`Receiver` on loopback, stopped afterwards.
"""

from __future__ import annotations

import itertools
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Protocol

import pytest
from live_server import Receiver, Server


class StartServer(Protocol):
    """``start_server(location, token=None, workers=1, in_thread=None, **options)``: a running server."""

    def __call__(
        self, location: Any, token: str | None = None, workers: int = 1, in_thread: bool | None = None, **options: Any
    ) -> Server: ...


@pytest.fixture
def engine() -> str:
    """SQLite: a test above the store runs on one engine (one that depends on the engine
    parametrises ``engine`` over ``engine_params.STORE_PARAMS`` itself)."""
    return "sqlite"


@pytest.fixture
def database(store_url_factory: Any, engine: str) -> Any:
    """A fresh, empty database on ``engine`` (a StoreLocation: url, schema, path)."""
    return store_url_factory(engine)


@pytest.fixture
def sqlite_database(store_url_factory: Any) -> Any:
    """A fresh SQLite database file."""
    return store_url_factory("sqlite")


@pytest.fixture
def conv() -> str:
    """A conversation id of this test's own (servers are shared within a module)."""
    return f"c-{uuid.uuid4().hex[:10]}"


@pytest.fixture
def start_server(store_url_factory: Any, tmp_path: Path) -> Iterator[StartServer]:
    """Start servers; all are stopped at the end (before their databases are dropped).

    A server runs in a thread of the test process (``in_thread=None``) unless it has
    several workers or runs ``parkgate serve`` (``via_cli``); ``in_thread=False`` asks for
    a process where the process is the point (kill -9, a restart of a process).
    """
    started: list[Server] = []
    numbers = itertools.count(1)

    def start(
        location: Any, token: str | None = None, workers: int = 1, in_thread: bool | None = None, **options: Any
    ) -> Server:
        log = tmp_path / f"server-{next(numbers)}.log"
        if in_thread is None:
            in_thread = workers == 1 and not options.get("via_cli", False)
        server = Server(
            location.url, log, token=token, schema=location.schema, workers=workers, in_thread=in_thread, **options
        )
        started.append(server)
        return server.start()

    yield start
    for server in reversed(started):
        server.stop()


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """An in-thread SQLite server shared by the module's tests (no token)."""
    folder = tmp_path_factory.mktemp("served")
    server = Server(f"sqlite:///{folder / 'parkgate.db'}", folder / "server.log", in_thread=True)
    try:
        yield server.start()
    finally:
        server.stop()


@pytest.fixture(scope="module")
def served_sqlite(served: Server) -> Server:
    """The module's server (SQLite, like ``served``), for tests that name the engine."""
    return served


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    """A callback receiver on loopback that records every POST."""
    hooks = Receiver().start()
    yield hooks
    hooks.stop()
