"""Fixtures of the reliability suite: a database on each store, a manual clock.

Database locations come from the root conftest's ``store_url_factory`` (a migrated
SQLite file copied from the process's template; a clean schema from the process's
pool on ``PARKGATE_TEST_POSTGRES_URL``, failing the test when the server is
unreachable). The fault tests' throwaway cluster is a server of its own; its schemas
are made here. A missing prerequisite
of the fault tests (root, Debian's postgresql-common) fails them too: nothing skips.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import psycopg
import pytest

from engine_params import STORE_PARAMS
from parkgate.clock import ManualClock
from polling import until

from ._support import T0, StoreSpec

if TYPE_CHECKING:
    from conftest import StoreLocation, StoreUrlFactory


@pytest.fixture
def clock() -> ManualClock:
    """A clock that moves only when the test moves it."""
    return ManualClock(T0)


def as_spec(location: StoreLocation) -> StoreSpec:
    """The reliability suite's picklable :class:`StoreSpec` of a root-conftest location."""
    return StoreSpec(location.engine, location.url, location.schema)


@pytest.fixture
def sqlite_spec(store_url_factory: StoreUrlFactory) -> StoreSpec:
    """A clean, migrated SQLite file (the root conftest's ``store_url_factory``)."""
    return as_spec(store_url_factory("sqlite", migrated=True))


@pytest.fixture
def postgres_spec(pg_url: str, store_url_factory: StoreUrlFactory) -> StoreSpec:
    """A clean, migrated schema on the test PostgreSQL server (the root conftest's factory)."""
    return as_spec(store_url_factory("postgres", migrated=True))


@pytest.fixture(params=STORE_PARAMS)
def spec(request: pytest.FixtureRequest, store_url_factory: StoreUrlFactory) -> StoreSpec:
    """A clean, migrated database on each store in turn: what these tests check (races,
    redelivery, restarts, clocks across a restart) is the engines' own locking and storage."""
    return as_spec(store_url_factory(str(request.param), migrated=True))


# -- the throwaway PostgreSQL cluster that the fault tests may restart ----------------

FAULTS_CLUSTER = "parkgate_faults"
FAULTS_PORT = int(os.environ.get("PARKGATE_FAULTS_PG_PORT", "54329"))
#: What the fault tests lock to take turns on the throwaway cluster: PostgreSQL's own
#: configuration folder, which every test run on this machine sees. A lock on a folder
#: writes nothing (no file at a fixed path in a shared temporary folder).
FAULTS_LOCK = Path("/etc/postgresql")
_HBA = "local all all trust\nhost all all 127.0.0.1/32 trust\nhost all all ::1/128 trust\n"


@dataclass(frozen=True)
class FaultsCluster:
    """A dedicated PostgreSQL cluster (never the shared one on 5432) that tests may restart."""

    version: str
    port: int

    @property
    def url(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def ctl(self, action: str) -> None:
        """``pg_ctlcluster VERSION parkgate_faults ACTION`` (start, stop, restart)."""
        subprocess.run(
            ["pg_ctlcluster", "--skip-systemctl-redirect", self.version, FAULTS_CLUSTER, action],
            check=True,
            capture_output=True,
            text=True,
            timeout=120,
        )

    def wait_ready(self, seconds: float = 60.0) -> None:
        """Block until the cluster accepts connections (bounded)."""

        def connects() -> bool:
            psycopg.connect(self.url, connect_timeout=2).close()
            return True

        until(connects, seconds, "the cluster to accept connections", interval=0.2, retry_on=(psycopg.Error,))


def _unavailable(reason: str) -> None:
    pytest.fail(f"{reason}: the PostgreSQL fault tests cannot run here", pytrace=False)


@contextlib.contextmanager
def _cluster_turn() -> Iterator[None]:
    """Hold :data:`FAULTS_LOCK` (exclusive, across processes) for the block."""
    if not FAULTS_LOCK.is_dir():
        _unavailable("Debian's postgresql-common (/etc/postgresql) is not installed")
    folder = os.open(FAULTS_LOCK, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(folder, fcntl.LOCK_EX)
        yield
    finally:
        os.close(folder)  # closing it lets the lock go


def _ensure_faults_cluster() -> FaultsCluster:
    if shutil.which("pg_createcluster") is None or not Path("/etc/postgresql").is_dir():
        _unavailable("Debian's postgresql-common (pg_createcluster) is not installed")
    if os.geteuid() != 0:
        _unavailable("creating the throwaway PostgreSQL cluster needs root")
    versions = sorted(
        (p.name for p in Path("/usr/lib/postgresql").iterdir() if (p / "bin" / "postgres").exists()), key=float
    )
    if not versions:
        _unavailable("no PostgreSQL server binaries under /usr/lib/postgresql")
    version = versions[-1]
    cluster = FaultsCluster(version, FAULTS_PORT)
    config = Path("/etc/postgresql") / version / FAULTS_CLUSTER
    if not config.is_dir():
        subprocess.run(
            [
                "pg_createcluster",
                version,
                FAULTS_CLUSTER,
                "-p",
                str(FAULTS_PORT),
                "--",
                "--auth-local=trust",
                "--auth-host=trust",
            ],
            check=True,
            capture_output=True,
            text=True,
            timeout=300,
        )
    hba = config / "pg_hba.conf"
    if hba.read_text() != _HBA:
        hba.write_text(_HBA)
    status = subprocess.run(["pg_lsclusters", "--no-header"], capture_output=True, text=True).stdout
    line = next((row for row in status.splitlines() if row.split()[:2] == [version, FAULTS_CLUSTER]), "")
    if "online" in line:
        cluster.ctl("reload")
    else:
        cluster.ctl("start")
    cluster.wait_ready()
    return cluster


@pytest.fixture(scope="session")
def faults_cluster() -> Iterator[FaultsCluster]:
    """The throwaway cluster on port 54329, created and started if missing. Left running.

    The tests that restart it hold ``faults_lock`` so that two test runs on one
    machine never restart it under each other.
    """
    with _cluster_turn():
        cluster = _ensure_faults_cluster()
    yield cluster


@pytest.fixture
def faults_lock(faults_cluster: FaultsCluster) -> Iterator[FaultsCluster]:
    """Exclusive use of the throwaway cluster for one test (it may restart it)."""
    with _cluster_turn():
        try:
            faults_cluster.wait_ready()
            yield faults_cluster
        finally:
            try:  # leave it up for the next test, whatever this one did
                faults_cluster.wait_ready(5)
            except psycopg.Error:
                faults_cluster.ctl("start")
                faults_cluster.wait_ready()


@pytest.fixture
def faults_spec(faults_lock: FaultsCluster, store_url_factory: StoreUrlFactory) -> StoreSpec:
    """A fresh schema on the throwaway cluster (which this test may restart), from the root factory."""
    return as_spec(store_url_factory("postgres", url=faults_lock.url))
