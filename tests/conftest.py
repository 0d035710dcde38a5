"""Shared fixtures: a clean store on SQLite (and on PostgreSQL where it matters), a manual clock, a gateway.

PostgreSQL comes from ``PARKGATE_TEST_POSTGRES_URL`` (default
``postgresql://postgres@127.0.0.1:5432/test``). Every test that uses it gets a schema
of its own (named for this process), emptied or dropped afterwards, so concurrent runs
and pytest-xdist workers on one server never collide. When the server is unreachable
the tests fail, naming the URL and the error: nothing is skipped, because a skipped test
proves nothing (``./dev test`` starts the local server first, and installs it when run
as root).

Set-up is paid once per test process (:class:`Databases`): a migrated SQLite template
file that each test copies, and a pool of migrated PostgreSQL schemas that a test's end
empties (``TRUNCATE ... RESTART IDENTITY CASCADE``) for the next, or drops if the test
changed the schema's make-up.

Engines (``tests/engine_params.py``): the store conformance suite (``tests/store``) runs
on both; a test above the store runs on SQLite unless it is marked
``@pytest.mark.engines("why")`` because what it checks depends on the engine.

Fixtures:

- ``clock``: a :class:`~parkgate.clock.ManualClock`; tests move time, never sleep.
- ``pg_url`` / ``pg_schema``: the reachable server URL; a fresh, empty schema on it.
- ``store_url_factory(engine, migrated=False, url=None)``: a new :class:`StoreLocation`
  ("sqlite" or "postgres"), empty unless ``migrated``; the one maker of database
  locations (the reliability and security fixtures build on it).
  ``make_store(location)``: an open :class:`~parkgate.store.Store` on it.
- ``store`` with ``store_location``: a clean, migrated database (see Engines above).
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
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

import psycopg
import pytest

from engine_params import BOTH_ENGINE_FOLDERS, ENGINES_MARKER, SQLITE_ONLY, STORE_PARAMS
from parkgate import Gateway, ManualClock
from parkgate.cli.demo import UML
from parkgate.store import Store
from parkgate.store.postgres import drop_schema
from store_locations import Databases, StoreLocation, create_schema

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


class StoreUrlFactory(Protocol):
    """``store_url_factory(engine, migrated=False)``: a new database location, empty or migrated."""

    def __call__(self, engine: str, *, migrated: bool = False, url: str | None = None) -> StoreLocation: ...


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
POSTGRES_FIXTURES = frozenset(
    {"pg_url", "pg_schema", "postgres_spec", "pg_location", "pg_processes", "faults_cluster", "faults_spec"}
)
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


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Run ``store_location`` (and what builds on it) on the engines the test is for.

    Both engines in the store conformance suite and for a test marked ``engines("why")``;
    SQLite elsewhere. The parameter stays in the test's id (``[sqlite]``/``[postgres]``).
    """
    if "store_location" not in metafunc.fixturenames or _parametrizes_itself(metafunc):
        return
    marker = metafunc.definition.get_closest_marker(ENGINES_MARKER)
    if marker is not None and not (marker.args and str(marker.args[0]).strip()):
        raise pytest.UsageError(f"{metafunc.definition.nodeid}: @pytest.mark.engines needs the reason as its argument")
    path = Path(str(metafunc.definition.path)).resolve()
    folder = path.relative_to(TESTS).parts[0] if path.is_relative_to(TESTS) else None
    both = marker is not None or folder in BOTH_ENGINE_FOLDERS
    metafunc.parametrize("store_location", STORE_PARAMS if both else SQLITE_ONLY, indirect=True)


def _parametrizes_itself(metafunc: pytest.Metafunc) -> bool:
    """Whether the test names its own ``store_location`` engines (``parametrize(..., indirect=True)``)."""
    for marker in metafunc.definition.iter_markers("parametrize"):
        names = marker.args[0] if marker.args else marker.kwargs.get("argnames", "")
        if "store_location" in ([n.strip() for n in names.split(",")] if isinstance(names, str) else list(names)):
            return True
    return False


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


@pytest.fixture(scope="session")
def databases(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Databases]:
    """This process's :class:`Databases` (templates and the schema pool)."""
    pool = Databases(tmp_path_factory.mktemp("databases"))
    yield pool
    pool.close()


@pytest.fixture
def store_url_factory(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, databases: Databases
) -> Iterator[StoreUrlFactory]:
    """Make database locations: ``factory(engine)`` an empty one, ``migrated=True`` a migrated one.

    ``url`` names another PostgreSQL server than the test one (the fault tests' cluster).

    The one place the suite makes database locations (the reliability and security
    suites' fixtures build on it). An empty location is what migration tests and a
    first ``parkgate serve`` need; a migrated one costs a file copy (SQLite) or a
    ``TRUNCATE`` of a schema from this process's pool (PostgreSQL). Everything made here
    goes back (or is dropped) after the test. A test that makes a PostgreSQL location
    must carry the ``postgres`` marker (a ``"postgres"`` parameter gives it one), so that
    the quick run leaves it out.
    """
    made: list[StoreLocation] = []

    def factory(engine: str, *, migrated: bool = False, url: str | None = None) -> StoreLocation:
        if engine == "sqlite":
            location = databases.sqlite(tmp_path_factory.mktemp("store"), migrated=migrated)
        elif engine == "postgres":
            if request.node.get_closest_marker("postgres") is None:
                pytest.fail(f"{request.node.nodeid} reaches PostgreSQL without the postgres marker", pytrace=False)
            location = databases.postgres(url or require_postgres(), migrated=migrated)
        else:
            raise ValueError(f"unknown engine {engine!r}")
        made.append(location)
        return location

    yield factory
    for location in reversed(made):
        databases.give_back(location)


@pytest.fixture
def make_store(store_url_factory: StoreUrlFactory) -> Iterator[MakeStore]:
    """Open stores on a location; every store opened here is closed after the test.

    It depends on ``store_url_factory`` so that its stores close before the factory
    empties or drops their databases.
    """
    opened: list[Store] = []

    def make(location: StoreLocation, **options: Any) -> Store:
        store = location.open(**options)
        opened.append(store)
        return store

    yield make
    for store in reversed(opened):
        store.close()


@pytest.fixture
def store_location(request: pytest.FixtureRequest, store_url_factory: StoreUrlFactory) -> StoreLocation:
    """A clean, migrated database: on SQLite, and also on PostgreSQL where the test runs on both.

    Parametrised by :func:`pytest_generate_tests`: over both engines in the store
    conformance suite (``tests/store``) and for tests marked ``engines("why")``; on SQLite
    elsewhere.
    """
    return store_url_factory(str(request.param), migrated=True)


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
