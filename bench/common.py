"""Shared helpers for the benchmarks: scales, stores, timing, percentiles, the machine.

Every figure the benchmarks report is a ratio against a baseline measured in the same
run, on the same machine, so a noisy shared box moves both sides together.
"""

from __future__ import annotations

import os
import platform
import re
import sqlite3
import subprocess
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

DEFAULT_POSTGRES_URL = "postgresql://postgres@127.0.0.1:5432/test"
RESULTS_DIR = Path(__file__).resolve().parent / "results"


@dataclass(frozen=True)
class Scale:
    """How big each benchmark runs. ``smoke`` is for the test suite, ``full`` for the README."""

    name: str
    #: Benchmark 1: conversations per (store, concurrency) cell, and the rounds they are split into.
    reply_conversations: int
    reply_rounds: int
    #: Benchmark 2: measured conversations per side (each is 4 round trips). parkgate's WAL
    #: checkpoints every ~330 of them and LangGraph's every few, so both sides must run past
    #: at least one: ``small`` spans one of parkgate's, ``full`` three.
    langgraph_conversations: int
    #: Benchmark 3: the open-ask counts measured, in order (each level tops up the last).
    scale_levels: tuple[int, ...]
    scale_batch: int
    scale_samples: int
    #: Benchmark 4: messages per server configuration, and the wall-clock bound.
    http_requests: int
    http_seconds: float
    http_concurrency: int
    workers: int = 4
    #: Benchmark 4's floor and worker table: seconds a wrk run lasts (``-d``), rounds, the
    #: requests a run may send, and at most how many asks are parked for one select run.
    floor_seconds: float = 4.0
    floor_rounds: int = 2
    floor_requests: int = 10_000_000
    floor_select_max: int = 20_000
    #: Benchmark 5: samples per wake-up, floor and callback cell; asks falling due at once
    #: (parked in a short window with one TTL), per round; the due-time cost's repeats of
    #: each variant (benchmark 1's mix at ``reply_conversations``).
    waiting_samples: int = 200
    due_asks: int = 1_000
    due_ttl_seconds: float = 4.0
    due_rounds: int = 1
    due_cost_repeats: int = 2
    #: Benchmarks 1 and 5's SQLite warm-up: raw UPDATEs per batch while the WAL grows
    #: (:func:`until_wal_settles`; at most :data:`MAX_WARM_UP_BATCHES` batches).
    warm_up_writes: int = 500
    extra: dict[str, Any] = field(default_factory=dict)


SCALES: dict[str, Scale] = {
    "smoke": Scale(
        name="smoke",
        reply_conversations=24,
        reply_rounds=2,
        langgraph_conversations=3,
        scale_levels=(200, 400),
        scale_batch=100,
        scale_samples=5,
        http_requests=40,
        http_seconds=20.0,
        http_concurrency=4,
        workers=2,
        floor_seconds=1.0,
        floor_rounds=1,
        floor_requests=12,
        floor_select_max=40,
        waiting_samples=4,
        due_asks=12,
        due_ttl_seconds=1.0,
        due_cost_repeats=1,
        warm_up_writes=10,
    ),
    "small": Scale(
        name="small",
        reply_conversations=1_000,
        reply_rounds=4,
        langgraph_conversations=400,
        scale_levels=(1_000, 10_000),
        scale_batch=5_000,
        scale_samples=200,
        http_requests=2_000,
        http_seconds=30.0,
        http_concurrency=16,
    ),
    "full": Scale(
        name="full",
        reply_conversations=10_000,
        reply_rounds=4,
        langgraph_conversations=1_000,
        scale_levels=(10_000, 100_000, 1_000_000),
        scale_batch=10_000,
        scale_samples=500,
        http_requests=20_000,
        http_seconds=60.0,
        http_concurrency=32,
        floor_seconds=10.0,
        floor_rounds=3,
        floor_select_max=60_000,
        waiting_samples=1_000,
        due_ttl_seconds=5.0,
        due_rounds=2,
    ),
}


def postgres_url() -> str:
    """The PostgreSQL the benchmarks use (env ``PARKGATE_BENCH_POSTGRES_URL``)."""
    return os.environ.get("PARKGATE_BENCH_POSTGRES_URL", DEFAULT_POSTGRES_URL)


def postgres_reachable(url: str) -> str | None:
    """``None`` when PostgreSQL answers at ``url``, else the reason it does not."""
    import psycopg

    try:
        psycopg.connect(url, connect_timeout=3).close()
    except psycopg.Error as error:
        return f"PostgreSQL unreachable at {url}: {error}".strip()
    return None


def new_schema(url: str, prefix: str = "bench") -> str:
    """Create a uniquely named schema (the caller drops it with :func:`drop_schema`)."""
    from parkgate.store.postgres import create_schema

    return create_schema(url, prefix)


def drop_schema(url: str, name: str) -> None:
    """Drop a schema made by :func:`new_schema`; quiet if the server has gone."""
    from parkgate.store.postgres import drop_schema as drop

    drop(url, name)


@dataclass(frozen=True)
class StoreTarget:
    """Where one benchmark cell keeps its data: a SQLite file or a PostgreSQL schema."""

    engine: str  # "sqlite" | "postgres"
    url: str
    schema: str | None = None
    #: SQLite's durability (``full``, the store's default, or ``normal``); None on PostgreSQL.
    synchronous: str | None = None

    @property
    def label(self) -> str:
        """The store as the tables name it: ``sqlite (full)``, ``sqlite (normal)``, ``postgres``."""
        return f"sqlite ({self.synchronous or 'full'})" if self.engine == "sqlite" else self.engine

    def open(self, **options: Any) -> Any:
        """Open the parkgate store this target names (migrated)."""
        if self.engine == "postgres":
            from parkgate.store.postgres import PostgresStore

            return PostgresStore(self.url, schema=self.schema, **options)
        from parkgate.store.sqlite import SQLiteStore

        return SQLiteStore(self.url, synchronous=self.synchronous)


@contextmanager
def store_target(
    engine: str, workdir: Path, pg_url: str, label: str, synchronous: str = "full"
) -> Iterator[StoreTarget]:
    """A fresh, empty place for one cell; removed afterwards."""
    if engine == "sqlite":
        path = workdir / f"{label}-{uuid.uuid4().hex[:6]}.db"
        try:
            yield StoreTarget("sqlite", f"sqlite:///{path}", synchronous=synchronous)
        finally:
            for suffix in ("", "-wal", "-shm"):
                Path(f"{path}{suffix}").unlink(missing_ok=True)
        return
    schema = new_schema(pg_url)
    try:
        yield StoreTarget("postgres", pg_url, schema)
    finally:
        drop_schema(pg_url, schema)


@contextmanager
def workdir(base: Path | None = None) -> Iterator[Path]:
    """A scratch folder for database files (on the results folder's file system)."""
    root = base or RESULTS_DIR
    root.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="work-", dir=root) as name:
        yield Path(name)


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q`` quantile (0..1) of ``values`` by nearest rank; 0.0 for no values."""
    if not values:
        return 0.0
    ordered = sorted(values)
    rank = min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))
    return float(ordered[rank])


def latency_summary(nanoseconds: Sequence[int]) -> dict[str, float]:
    """p50/p99/mean in milliseconds and the count of a list of per-call latencies."""
    if not nanoseconds:
        return {"count": 0, "p50_ms": 0.0, "p99_ms": 0.0, "mean_ms": 0.0}
    return {
        "count": len(nanoseconds),
        "p50_ms": percentile(nanoseconds, 0.50) / 1e6,
        "p99_ms": percentile(nanoseconds, 0.99) / 1e6,
        "mean_ms": sum(nanoseconds) / len(nanoseconds) / 1e6,
    }


def sync_cost_ms(folder: Path, samples: int = 200) -> float:
    """Median cost of one 4 KiB write + ``fdatasync`` to a file in ``folder``, in ms.

    With per-commit syncs both sides of benchmark 2 mostly wait for this, so a ratio from
    a slow disk and one from a fast disk differ for a reason the run can name.
    """
    path = folder / f"sync-probe-{uuid.uuid4().hex[:8]}.bin"
    block = b"\0" * 4096
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        for offset in range(0, 64 * 4096, 4096):  # allocated first: the probe never grows the file
            os.pwrite(fd, block, offset)
        os.fsync(fd)
        costs = []
        for n in range(samples):
            began = time.perf_counter_ns()
            os.pwrite(fd, block, (n % 64) * 4096)
            os.fdatasync(fd)
            costs.append(time.perf_counter_ns() - began)
    finally:
        os.close(fd)
        path.unlink(missing_ok=True)
    return percentile(costs, 0.5) / 1e6


#: Warm-up batches at most: a WAL stops growing at its first checkpoint (SQLite's default
#: at 1,000 pages). parkgate's store checkpoints from a thread every 500 of its own group
#: commits (``wal_autocheckpoint`` 40,000 pages), which writes outside the store (the raw
#: UPDATE) never start, so a raw warm-up on parkgate's file runs every batch.
MAX_WARM_UP_BATCHES = 40


def until_wal_settles(run_batch: Callable[[int], None], database: Path) -> dict[str, int]:
    """Call ``run_batch(0)``, ``run_batch(1)``, ... until one leaves ``database``'s WAL the size it found it.

    A SQLite WAL grows until its first checkpoint and is then reused from its start. While
    it grows, each synced commit also syncs the file's new length and blocks, a cost a
    long-running process pays once; benchmarks measure after it. At least two batches run,
    at most :data:`MAX_WARM_UP_BATCHES`. Returns the batches run and the WAL's size in bytes.
    """
    wal = database.with_name(database.name + "-wal")
    size = -1
    for number in range(MAX_WARM_UP_BATCHES):
        run_batch(number)
        now = wal.stat().st_size if wal.exists() else 0
        if number > 0 and now == size:
            return {"batches": number + 1, "wal_bytes": now}
        size = now
    return {"batches": MAX_WARM_UP_BATCHES, "wal_bytes": size}


def ratio(numerator: float, denominator: float) -> float:
    """``numerator / denominator``, or 0.0 when the baseline is zero."""
    return numerator / denominator if denominator else 0.0


def peak_rss_kib() -> int:
    """This process's peak resident set size (VmHWM) in KiB."""
    try:
        text = Path("/proc/self/status").read_text()
    except OSError:
        import resource

        return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
    found = re.search(r"^VmHWM:\s+(\d+)\s+kB", text, re.MULTILINE)
    return int(found.group(1)) if found else 0


def current_rss_kib() -> int:
    """This process's current resident set size (VmRSS) in KiB."""
    try:
        text = Path("/proc/self/status").read_text()
    except OSError:
        return 0
    found = re.search(r"^VmRSS:\s+(\d+)\s+kB", text, re.MULTILINE)
    return int(found.group(1)) if found else 0


def machine_info() -> dict[str, Any]:
    """What the numbers were measured on: CPU, cores, memory, OS, versions, the date."""
    model = platform.processor() or ""
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, timeout=5, check=False).stdout
        for line in out.splitlines():
            if line.startswith("Model name:"):
                model = line.split(":", 1)[1].strip()
            if line.startswith("Hypervisor vendor:"):
                model += f" ({line.split(':', 1)[1].strip()} guest)"
    except (OSError, subprocess.SubprocessError):
        pass
    memory_gib = 0.0
    try:
        meminfo = Path("/proc/meminfo").read_text()
        found = re.search(r"^MemTotal:\s+(\d+)\s+kB", meminfo, re.MULTILINE)
        memory_gib = round(int(found.group(1)) / 1024 / 1024, 1) if found else 0.0
    except OSError:
        pass
    info: dict[str, Any] = {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "cpu": model,
        "cores": os.cpu_count(),
        "memory_gib": memory_gib,
        "os": f"{platform.system()} {platform.release()}",
        "python": platform.python_version(),
        "sqlite": sqlite3.sqlite_version,
    }
    try:
        import psycopg

        info["psycopg"] = psycopg.__version__
    except ImportError:  # pragma: no cover - psycopg is a dependency
        pass
    return info


def to_jsonable(value: Any) -> Any:
    """Dataclasses and tuples turned into plain JSON values."""
    if hasattr(value, "__dataclass_fields__"):
        return to_jsonable(asdict(value))
    if isinstance(value, dict):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_jsonable(v) for v in value]
    return value
