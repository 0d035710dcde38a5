"""Fixtures for the HTTP tests: real server processes on loopback, on SQLite and PostgreSQL.

- ``served``: one server per test module and store (parametrised ``sqlite`` /
  ``postgres``), shared by that module's tests; each test uses its own conversations.
- ``served_sqlite``: the same, SQLite only.
- ``database(engine)`` / ``sqlite_database``: a fresh database location for a test
  that needs servers of its own (a StoreLocation from the shared ``store_url_factory``).
- ``start_server(location, token=None, workers=1, **options)``: a started :class:`Server`
  (``options`` are the Server's own, ``extra_env`` say); every server started here is
  stopped before the database is dropped.
- ``conv``: a conversation id no other test uses.
- ``receiver``: a started callback :class:`Receiver` on loopback, stopped afterwards.
"""

from __future__ import annotations

import itertools
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import psycopg
import pytest
from live_server import Receiver, Server
from psycopg import sql as pgsql

ENGINES = ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]


class StartServer(Protocol):
    """``start_server(location, token=None, workers=1, **options)``: a running server on ``location``."""

    def __call__(self, location: Any, token: str | None = None, workers: int = 1, **options: Any) -> Server: ...


@dataclass(frozen=True)
class Location:
    """A database for a module-scoped server: a SQLite file or a PostgreSQL schema."""

    url: str
    schema: str | None = None


@pytest.fixture(params=ENGINES)
def engine(request: pytest.FixtureRequest) -> str:
    """Each store in turn: ``sqlite`` then ``postgres``."""
    return str(request.param)


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
    """Start real servers; all are stopped at the end (before their databases are dropped)."""
    started: list[Server] = []
    numbers = itertools.count(1)

    def start(location: Any, token: str | None = None, workers: int = 1, **options: Any) -> Server:
        log = tmp_path / f"server-{next(numbers)}.log"
        server = Server(location.url, log, token=token, schema=location.schema, workers=workers, **options)
        started.append(server)
        return server.start()

    yield start
    for server in reversed(started):
        server.stop()


def _module_server(request: pytest.FixtureRequest, engine: str, tmp: Path) -> Iterator[Server]:
    if engine == "postgres":
        url = str(request.getfixturevalue("pg_url"))
        schema = f"pgh_{uuid.uuid4().hex[:12]}"
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(pgsql.SQL("CREATE SCHEMA {}").format(pgsql.Identifier(schema)))
        location = Location(url, schema)
    else:
        location = Location(f"sqlite:///{tmp / 'parkgate.db'}")
    server = Server(location.url, tmp / "server.log", schema=location.schema)
    try:
        yield server.start()
    finally:
        server.stop()
        if location.schema:
            with psycopg.connect(location.url, autocommit=True) as conn:
                conn.execute(pgsql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(pgsql.Identifier(location.schema)))


@pytest.fixture(scope="module", params=ENGINES)
def served(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """A server shared by the module's tests, on SQLite and then on PostgreSQL (no token)."""
    yield from _module_server(request, str(request.param), tmp_path_factory.mktemp("served"))


@pytest.fixture(scope="module")
def served_sqlite(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """A SQLite server shared by the module's tests (no token)."""
    yield from _module_server(request, "sqlite", tmp_path_factory.mktemp("served"))


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    """A callback receiver on loopback that records every POST."""
    hooks = Receiver().start()
    yield hooks
    hooks.stop()
