"""Shared fixtures: a fresh store on SQLite and on PostgreSQL, a manual clock, a gateway.

PostgreSQL comes from ``PARKGATE_TEST_POSTGRES_URL`` (default
``postgresql://postgres@127.0.0.1:5432/test``). Every test that uses it gets a schema
of its own (uniquely named per process and test) that is dropped afterwards, so
concurrent runs on one server never collide. When the server is unreachable the tests
fail, naming the URL and the error: nothing is skipped, because a skipped test proves
nothing (``./dev test`` starts the local server first, and installs it when run as root).

Fixtures:

- ``clock``: a :class:`~parkgate.clock.ManualClock`; tests move time, never sleep.
- ``pg_url`` / ``pg_schema``: the reachable server URL; a fresh schema on it.
- ``store_url_factory(engine)``: a new, empty :class:`StoreLocation` ("sqlite" or
  "postgres"); ``make_store(location)``: an open :class:`~parkgate.store.Store` on it.
- ``store`` (parametrised over ``sqlite`` and ``postgres``) with ``store_location``.
- ``gateway``: a :class:`~parkgate.Gateway` on ``store`` with the demo workflow;
  ``reopen()``: a second Gateway on the same location (a restart).

Markers: every test in ``tests/reliability``, ``tests/bench`` and ``tests/browser``
carries that folder's marker (``reliability``, ``bench``, ``browser``), and every test
that reaches PostgreSQL or Chromium through a fixture or a ``"postgres"`` parameter
carries ``postgres`` or ``browser``, so ``-m "not postgres and not browser"`` (the
quick run, ``./dev quick``) selects exactly what runs without them.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

import psycopg
import pytest
from psycopg import sql as pgsql

from engine_params import STORE_PARAMS
from parkgate import Gateway, ManualClock
from parkgate.demo import UML
from parkgate.store import Store
from parkgate.store.postgres import create_schema as _create_schema
from parkgate.store.postgres import drop_schema

PG_URL_ENV = "PARKGATE_TEST_POSTGRES_URL"
DEFAULT_PG_URL = "postgresql://postgres@127.0.0.1:5432/test"
#: The fixed start of every test's manual clock.
T0 = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)


def postgres_url() -> str:
    """The PostgreSQL URL the tests use (env ``PARKGATE_TEST_POSTGRES_URL`` or the default)."""
    return os.environ.get(PG_URL_ENV) or DEFAULT_PG_URL


_reachability: dict[str, str | None] = {}


def postgres_problem(url: str) -> str | None:
    """``None`` when PostgreSQL at ``url`` answers, else why not (checked once per run)."""
    if url not in _reachability:
        try:
            psycopg.connect(url, connect_timeout=3).close()
            _reachability[url] = None
        except psycopg.Error as error:
            _reachability[url] = " ".join(str(error).split()) or type(error).__name__
    return _reachability[url]


def require_postgres(url: str | None = None) -> str:
    """The URL if PostgreSQL answers; otherwise the test fails, saying why and what to do."""
    url = url or postgres_url()
    problem = postgres_problem(url)
    if problem is not None:
        pytest.fail(
            f"PostgreSQL unreachable at {url} ({problem}). Run the suite with ./dev test, which starts "
            f"the local server (and installs it as root), or set {PG_URL_ENV} to a reachable server.",
            pytrace=False,
        )
    return url


def create_schema(url: str) -> str:
    """Create a uniquely named, empty schema and return its name."""
    return _create_schema(url, "pgt")


@dataclass(frozen=True)
class StoreLocation:
    """Where one test database lives: a SQLite file, or a schema on a PostgreSQL server."""

    engine: str  # "sqlite" | "postgres"
    url: str
    schema: str | None = None
    path: Path | None = None

    def open(self, **options: Any) -> Store:
        """A new store object (its own connections or pool) on this database."""
        if self.engine == "postgres":
            from parkgate.store.postgres import PostgresStore

            return PostgresStore(self.url, schema=self.schema, **options)
        from parkgate.store.sqlite import SQLiteStore

        return SQLiteStore(self.url, **options)

    def raw_query(self, statement: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        """Run ``statement`` (``?`` placeholders) on a fresh raw connection, outside parkgate."""
        if self.engine == "postgres":
            assert self.schema is not None
            with psycopg.connect(self.url, autocommit=True) as conn:
                conn.execute(pgsql.SQL("SET search_path TO {}").format(pgsql.Identifier(self.schema)))
                cur = conn.execute(statement.replace("?", "%s").encode(), params)
                return list(cur.fetchall()) if cur.description else []
        import sqlite3

        assert self.path is not None
        conn = sqlite3.connect(self.path, isolation_level=None)
        try:
            return list(conn.execute(statement, params).fetchall())
        finally:
            conn.close()


class StoreUrlFactory(Protocol):
    """``store_url_factory(engine)``: a new, empty database location."""

    def __call__(self, engine: str) -> StoreLocation: ...


class MakeStore(Protocol):
    """``make_store(location, **options)``: an open store, closed when the test ends."""

    def __call__(self, location: StoreLocation, **options: Any) -> Store: ...


class MakeGateway(Protocol):
    """``make_gateway(location, clock, **options)``: a Gateway on a new store on ``location``."""

    def __call__(self, location: StoreLocation, clock: ManualClock, **options: Any) -> Gateway: ...


class Reopen(Protocol):
    """``reopen(clock=None, **options)``: a new Gateway on the same store location."""

    def __call__(self, clock: ManualClock | None = None, **options: Any) -> Gateway: ...


# -- markers --------------------------------------------------------------------------

#: Each folder whose tests all carry one marker.
FOLDER_MARKERS = {"reliability": "reliability", "bench": "bench", "browser": "browser"}
#: Fixtures that open a PostgreSQL connection, and those that start Chromium.
POSTGRES_FIXTURES = frozenset({"pg_url", "pg_schema", "postgres_spec", "pg_location", "pg_processes"})
BROWSER_FIXTURES = frozenset({"browser", "page", "chromium", "browser_page"})
TESTS = Path(__file__).resolve().parent


#: Tests that run one at a time on one xdist worker (``./dev test`` runs ``--dist loadgroup``):
#: the benchmarks' smoke runs load the machine on purpose, and the tests of the throwaway
#: PostgreSQL cluster take turns on it (they lock it across processes; one worker holding
#: them all keeps the others from blocking on that lock).
XDIST_GROUPS = {"bench": "bench", "faults_lock": "faults cluster", "faults_spec": "faults cluster"}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark each test by its folder and by what it reaches (PostgreSQL, Chromium), and put
    those of :data:`XDIST_GROUPS` in their xdist group."""
    for item in items:
        for name in sorted(markers_for(item)):
            if item.get_closest_marker(name) is None:
                item.add_marker(getattr(pytest.mark, name))
        group = next((XDIST_GROUPS[key] for key in xdist_keys(item) if key in XDIST_GROUPS), None)
        if group is not None and item.get_closest_marker("xdist_group") is None:
            item.add_marker(pytest.mark.xdist_group(group))


def xdist_keys(item: pytest.Item) -> list[str]:
    """What may put ``item`` in a group: its markers' names, then its fixtures."""
    return [mark.name for mark in item.iter_markers()] + list(getattr(item, "fixturenames", ()))


def markers_for(item: pytest.Item) -> set[str]:
    """The markers ``item`` needs: its folder's, ``postgres`` and ``browser`` by what it uses."""
    found: set[str] = set()
    path = item.path.resolve()
    folder = path.relative_to(TESTS).parts[0] if path.is_relative_to(TESTS) else None
    if folder in FOLDER_MARKERS:
        found.add(FOLDER_MARKERS[folder])
    fixtures = set(getattr(item, "fixturenames", ()))
    callspec = getattr(item, "callspec", None)
    parameters = set(map(str, callspec.params.values())) if callspec is not None else set()
    if fixtures & POSTGRES_FIXTURES or "postgres" in parameters:
        found.add("postgres")
    if fixtures & BROWSER_FIXTURES:
        found.add("browser")
    return found


# -- fixtures -------------------------------------------------------------------------


@pytest.fixture
def clock() -> ManualClock:
    """A clock that moves only when the test moves it."""
    return ManualClock(T0)


@pytest.fixture(scope="session")
def pg_url() -> Iterator[str]:
    """The URL of a reachable PostgreSQL server (the test fails without one).

    At the end of the run it checks that no test left tables in the database's default
    schema (``public``): that schema is shared with whatever else uses the server, and
    every test has ``pg_schema`` (or ``PARKGATE_PG_SCHEMA``) for a place of its own.
    """
    url = require_postgres()
    before = _default_schema_tables(url)
    yield url
    left = _default_schema_tables(url) - before
    assert not left, f"tests left tables {sorted(left)} in the shared default schema of {url}; use pg_schema"


def _default_schema_tables(url: str) -> set[str]:
    with psycopg.connect(url) as conn:
        rows = conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = current_schema()").fetchall()
    return {row[0] for row in rows}


@pytest.fixture
def pg_schema(pg_url: str) -> Iterator[str]:
    """A fresh, uniquely named schema on ``pg_url``, dropped after the test."""
    name = create_schema(pg_url)
    try:
        yield name
    finally:
        drop_schema(pg_url, name)


@pytest.fixture
def store_url_factory(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[StoreUrlFactory]:
    """Make fresh database locations; PostgreSQL schemas made here are dropped afterwards.

    A test that makes a PostgreSQL location must carry the ``postgres`` marker (a
    ``"postgres"`` parameter gives it one), so that the quick run leaves it out.
    """
    schemas: list[tuple[str, str]] = []

    def factory(engine: str) -> StoreLocation:
        if engine == "sqlite":
            folder = tmp_path_factory.mktemp("store")
            path = folder / "parkgate.db"
            return StoreLocation("sqlite", f"sqlite:///{path}", path=path)
        if engine == "postgres":
            if request.node.get_closest_marker("postgres") is None:
                pytest.fail(f"{request.node.nodeid} reaches PostgreSQL without the postgres marker", pytrace=False)
            url = require_postgres()
            name = create_schema(url)
            schemas.append((url, name))
            return StoreLocation("postgres", url, schema=name)
        raise ValueError(f"unknown engine {engine!r}")

    yield factory
    for url, name in schemas:
        drop_schema(url, name)


@pytest.fixture
def make_store() -> Iterator[MakeStore]:
    """Open stores on a location; every store opened here is closed after the test."""
    opened: list[Store] = []

    def make(location: StoreLocation, **options: Any) -> Store:
        store = location.open(**options)
        opened.append(store)
        return store

    yield make
    for store in reversed(opened):
        store.close()


@pytest.fixture(params=STORE_PARAMS)
def store_location(request: pytest.FixtureRequest, store_url_factory: StoreUrlFactory) -> StoreLocation:
    """A fresh database on each store in turn: a SQLite file, then a PostgreSQL schema."""
    return store_url_factory(str(request.param))


@pytest.fixture
def store(store_location: StoreLocation, make_store: MakeStore) -> Store:
    """A fresh, migrated parkgate store (SQLiteStore on a file, PostgresStore on a new schema)."""
    return make_store(store_location)


@pytest.fixture
def make_gateway(make_store: MakeStore) -> MakeGateway:
    """``make_gateway(location, clock, **options)``: a Gateway on its own store, with the demo."""

    def make(location: StoreLocation, clock: ManualClock, **options: Any) -> Gateway:
        options.setdefault("workflows", [UML])
        return Gateway(store=make_store(location), clock=clock, **options)

    return make


@pytest.fixture
def gateway(store: Store, clock: ManualClock) -> Gateway:
    """A Gateway on ``store`` with the demo UML workflow registered."""
    return Gateway(store=store, clock=clock, workflows=[UML])


@pytest.fixture
def reopen(store_location: StoreLocation, clock: ManualClock, make_gateway: MakeGateway) -> Reopen:
    """A restart: a second Gateway with a new store object on the same file or schema.

    It shares the test's ``clock`` unless given another one.
    """
    shared = clock

    def again(clock: ManualClock | None = None, **options: Any) -> Gateway:
        return make_gateway(store_location, clock or shared, **options)

    return again
