"""Fixtures for the client's tests: live servers on loopback (``app_from_env``'s app, the one
``parkgate serve`` serves, from a thread of the test process) on SQLite, called through
:class:`~parkgate.client.Client` and :class:`~parkgate.client.AsyncClient`.

- ``engine`` / ``database``: SQLite and a fresh database on it. The client's behaviour does
  not depend on the engine (the store conformance suite runs both); a test that does
  depend on it asks for ``pg_url`` itself.
- ``served``: one server per module and store, without tokens; its callbacks may reach
  loopback and are given up on after one failed attempt.
- ``guarded``: one server per module and store with the named tokens of :data:`TOKENS`
  (a tokens file of their hashes); ``guarded.tokens[name]`` is each token.
- ``launch(location, **options)``: a server of the test's own (stopped at the end).
- ``flavour`` / ``connect(server, token=None, **options)``: the sync client, then the
  async one driven from the test (each call run to its end on the client's own loop), so
  that one test body checks both.
- ``conv``: a conversation id of the test's own; ``receiver``: a callback receiver.
"""

from __future__ import annotations

import asyncio
import inspect
import itertools
import secrets
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import psycopg
import pytest
from psycopg import sql as pgsql

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "http"))

from live_server import Receiver, Server

from parkgate.client import AsyncClient, Client
from parkgate.http.tokens import digest

#: The client's tests run above the store: one engine (issue 39; the store suite runs both).
ENGINES = ["sqlite"]
#: The served server's callback settings: loopback receivers allowed, one attempt each.
CALLBACK_ENV = {"PARKGATE_CALLBACK_ALLOW": "127.0.0.1", "PARKGATE_CALLBACK_MAX_ATTEMPTS": "1"}
#: name -> (scopes, extra TOML lines) of the guarded server's tokens.
TOKENS: dict[str, tuple[list[str], str]] = {
    "everything": (["park", "answer", "read", "operate"], ""),
    "agent": (["park"], ""),
    "tenant": (["park", "read"], ""),  # reads its own asks only (no operate)
    "auditor": (["read"], ""),
    "capped": (["park", "read"], "max_open_asks = 1\n"),
    "slow": (["read"], "rate_per_second = 0.001\n"),  # one request, then none for 1,000 s
}


@dataclass
class Guarded:
    """A server that runs with named tokens, and those tokens by name."""

    server: Server
    tokens: dict[str, str] = field(default_factory=dict)

    @property
    def url(self) -> str:
        return self.server.url


class Launch(Protocol):
    def __call__(self, location: Any, **options: Any) -> Server: ...


@dataclass(frozen=True)
class Location:
    url: str
    schema: str | None = None


@pytest.fixture(params=ENGINES)
def engine(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def database(store_url_factory: Any, engine: str) -> Any:
    """A fresh database on ``engine`` (a StoreLocation: url, schema, path)."""
    return store_url_factory(engine)


@pytest.fixture
def launch(tmp_path: Path) -> Iterator[Launch]:
    """Start a server on a database, in a thread unless a process is asked for (``via_cli``,
    several ``workers``); every server started here stops at the end."""
    started: list[Server] = []
    numbers = itertools.count(1)

    def start(location: Any, **options: Any) -> Server:
        if not options.get("via_cli") and options.get("workers", 1) == 1:
            options.setdefault("in_thread", True)
        server = Server(location.url, tmp_path / f"serve-{next(numbers)}.log", schema=location.schema, **options)
        started.append(server)
        return server.start()

    yield start
    for server in reversed(started):
        server.stop()


def _module_location(request: pytest.FixtureRequest, engine: str, folder: Path) -> Iterator[Location]:
    """A database for a module's server: a SQLite file, or a PostgreSQL schema dropped afterwards."""
    if engine == "sqlite":
        yield Location(f"sqlite:///{folder / 'parkgate.db'}")
        return
    url = str(request.getfixturevalue("pg_url"))
    schema = f"pgc_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(pgsql.SQL("CREATE SCHEMA {}").format(pgsql.Identifier(schema)))
    try:
        yield Location(url, schema)
    finally:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(pgsql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(pgsql.Identifier(schema)))


@pytest.fixture(scope="module", params=ENGINES)
def served(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """A server without tokens (in a thread), shared by the module's tests, on SQLite."""
    folder = tmp_path_factory.mktemp("served")
    for location in _module_location(request, str(request.param), folder):
        server = Server(
            location.url, folder / "serve.log", schema=location.schema, in_thread=True, extra_env=CALLBACK_ENV
        )
        try:
            yield server.start()
        finally:
            server.stop()


@pytest.fixture(scope="module", params=ENGINES)
def guarded(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Guarded]:
    """A server (in a thread) with the named tokens of :data:`TOKENS`, shared by the module's tests."""
    folder = tmp_path_factory.mktemp("guarded")
    tokens = {name: secrets.token_urlsafe(24) for name in TOKENS}
    entries = []
    for name, (scopes, extra) in TOKENS.items():
        listed = ", ".join(f'"{scope}"' for scope in scopes)
        entries.append(f'[[token]]\nname = "{name}"\nsha256 = "{digest(tokens[name])}"\nscopes = [{listed}]\n{extra}')
    (folder / "tokens.toml").write_text("\n".join(entries), encoding="utf-8")
    env = {"PARKGATE_TOKENS_FILE": str(folder / "tokens.toml")}
    for location in _module_location(request, str(request.param), folder):
        server = Server(location.url, folder / "serve.log", schema=location.schema, in_thread=True, extra_env=env)
        try:
            yield Guarded(server.start(), tokens)
        finally:
            server.stop()


class Awaited:
    """An :class:`AsyncClient` called from synchronous test code: each call is awaited to
    its end on the client's own event loop, ``iter_open_asks`` is consumed with
    ``async for``, and another async iterator (``follow_events``) is pulled an item at a
    time. Only the calling is adapted; every request is the async client's."""

    def __init__(self, *args: Any, **options: Any) -> None:
        self._loop = asyncio.new_event_loop()
        self.client = AsyncClient(*args, **options)

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self.client, name)
        if name == "iter_open_asks":

            def walk(*args: Any, **options: Any) -> Iterator[Any]:
                async def collect() -> list[Any]:
                    return [ask async for ask in attribute(*args, **options)]

                return iter(self._loop.run_until_complete(collect()))

            return walk
        if inspect.isasyncgenfunction(attribute):  # follow_events: pulled one item at a time

            def pull(*args: Any, **options: Any) -> Iterator[Any]:
                items = attribute(*args, **options)
                try:
                    while True:
                        try:
                            yield self._loop.run_until_complete(anext(items))
                        except StopAsyncIteration:
                            return
                finally:
                    self._loop.run_until_complete(items.aclose())

            return pull
        if not callable(attribute):
            return attribute
        return lambda *args, **options: self._loop.run_until_complete(attribute(*args, **options))

    def close(self) -> None:
        self._loop.run_until_complete(self.client.aclose())
        self._loop.close()

    def __enter__(self) -> Awaited:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Connect(Protocol):
    def __call__(self, server: Any, token: str | None = None, **options: Any) -> Any: ...


@pytest.fixture(params=["sync", "async"])
def flavour(request: pytest.FixtureRequest) -> str:
    """Each client in turn: :class:`Client`, then :class:`AsyncClient`."""
    return str(request.param)


@pytest.fixture
def connect(flavour: str) -> Iterator[Connect]:
    """``connect(server, token=None, **options)``: a client of this flavour on ``server``
    (a Server, a Guarded or a URL); all are closed at the end."""
    made: list[Any] = []

    def make(server: Any, token: str | None = None, **options: Any) -> Any:
        url = server if isinstance(server, str) else server.url
        client = Client(url, token, **options) if flavour == "sync" else Awaited(url, token, **options)
        made.append(client)
        return client

    yield make
    for client in made:
        client.close()


@pytest.fixture
def conv() -> str:
    """A conversation id no other test uses (servers are shared within a module)."""
    return f"c-{uuid.uuid4().hex[:10]}"


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    hooks = Receiver().start()
    yield hooks
    hooks.stop()
