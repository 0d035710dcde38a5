"""Fixtures of the reliability suite: a database on each store, a manual clock.

PostgreSQL comes from ``PARKGATE_TEST_POSTGRES_URL`` (default the local server); each
test gets a schema of its own, dropped afterwards (through the root conftest's
``pg_url``, which fails a test when the server is unreachable). A missing prerequisite
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

import psycopg
import pytest

from parkgate.clock import ManualClock
from parkgate.store.postgres import create_schema, drop_schema
from polling import until

from ._support import T0, StoreSpec


def new_schema(url: str) -> str:
    """Create a uniquely named schema; the caller drops it with :func:`drop_schema`."""
    return create_schema(url, "rel")


@pytest.fixture
def clock() -> ManualClock:
    """A clock that moves only when the test moves it."""
    return ManualClock(T0)


@pytest.fixture
def sqlite_spec(tmp_path: Path) -> StoreSpec:
    """A fresh SQLite file."""
    return StoreSpec("sqlite", f"sqlite:///{tmp_path / 'parkgate.db'}")


@pytest.fixture
def postgres_spec(pg_url: str) -> Iterator[StoreSpec]:
    """A fresh schema on the test PostgreSQL server, dropped afterwards."""
    url = pg_url
    schema = new_schema(url)
    try:
        yield StoreSpec("postgres", url, schema)
    finally:
        drop_schema(url, schema)


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def spec(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[StoreSpec]:
    """A fresh database on each store in turn."""
    if request.param == "sqlite":
        yield StoreSpec("sqlite", f"sqlite:///{tmp_path / 'parkgate.db'}")
        return
    url: str = request.getfixturevalue("pg_url")
    schema = new_schema(url)
    try:
        yield StoreSpec("postgres", url, schema)
    finally:
        drop_schema(url, schema)


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
def faults_spec(faults_lock: FaultsCluster) -> Iterator[StoreSpec]:
    """A fresh schema on the throwaway cluster (which this test may restart)."""
    schema = new_schema(faults_lock.url)
    try:
        yield StoreSpec("postgres", faults_lock.url, schema)
    finally:
        drop_schema(faults_lock.url, schema)
