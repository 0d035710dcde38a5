"""The servers the HTTP floor and the worker table drive: the bare app and ``parkgate serve``.

Each is a real process (a process group, so its workers go with it) on a free loopback
port. ``parkgate serve`` runs on a SQLite file in the run's folder or on a PostgreSQL
schema of its own (dropped when it stops); the bare app (:mod:`bench.bare_app`) through
the same ``serve`` code with its own factory. Asks are parked through an in-process
:class:`~parkgate.Gateway` on the same database (SQLite with ``synchronous=normal`` for
the parking connection only, so setting up costs seconds, not minutes).
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench import http_load
from bench.common import drop_schema, new_schema

#: Where ``python -m bench.bare_app`` is importable from (the repository's root).
ROOT = Path(__file__).resolve().parent.parent
ENGINES = ("sqlite", "postgres")


@dataclass
class Target:
    """One running server: ``bare``, ``sqlite`` or ``postgres``, and how to reach it."""

    name: str
    workers: int
    base: str
    proc: subprocess.Popen[bytes]
    db_url: str | None = None
    schema: str | None = None
    pg_url: str | None = None
    parking: Any = field(default=None, repr=False)

    def park(self, prefix: str, count: int) -> None:
        """Park a 3-option menu in conversations ``prefix0`` .. ``prefix<count-1>``."""
        if self.parking is None:
            self.parking = _parking_gateway(self)
        for number in range(count):
            self.parking.ask(f"{prefix}{number}", http_load.PROMPT, http_load.OPTIONS)

    def stop(self) -> None:
        """Stop the server, close the parking gateway, drop the schema (PostgreSQL)."""
        if self.parking is not None:
            self.parking.close()
            self.parking = None
        http_load.stop_server(self.proc)
        if self.schema and self.pg_url:
            drop_schema(self.pg_url, self.schema)


def _parking_gateway(target: Target) -> Any:
    from parkgate import Gateway

    if target.name == "sqlite":
        from parkgate.store.sqlite import SQLiteStore

        assert target.db_url is not None
        return Gateway(store=SQLiteStore(target.db_url, synchronous="normal"))
    from parkgate.store.postgres import PostgresStore

    assert target.pg_url is not None
    return Gateway(store=PostgresStore(target.pg_url, schema=target.schema))


def start_bare(workers: int, work: Path) -> Target:
    """The bare app with ``workers`` processes, healthy."""
    port = http_load.free_port()
    env = {key: value for key, value in os.environ.items() if not key.startswith("PARKGATE_")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    command = [sys.executable, "-m", "bench.bare_app", "--port", str(port), "--workers", str(workers)]
    with open(work / f"bare-{workers}.log", "wb") as out:
        proc = subprocess.Popen(
            command, stdout=out, stderr=subprocess.STDOUT, env=env, cwd=ROOT, start_new_session=True
        )
    return _healthy(Target("bare", workers, f"http://127.0.0.1:{port}", proc))


def start_parkgate(engine: str, workers: int, work: Path, pg_url: str | None) -> Target:
    """``parkgate serve --workers N`` on a fresh SQLite file or PostgreSQL schema, healthy."""
    if engine not in ENGINES:
        raise ValueError(f"engine must be one of {', '.join(ENGINES)}, not {engine!r}")
    port = http_load.free_port()
    log_path = work / f"serve-{engine}-{workers}.log"
    if engine == "sqlite":
        db_url = f"sqlite:///{work / f'floor-{workers}-{port}.db'}"
        proc = http_load.start_server(db_url, None, workers, port, log_path)
        return _healthy(Target("sqlite", workers, f"http://127.0.0.1:{port}", proc, db_url=db_url))
    assert pg_url is not None
    schema = new_schema(pg_url, "bfloor")
    db_url = http_load.schema_url(pg_url, schema)
    proc = http_load.start_server(db_url, schema, workers, port, log_path)
    target = Target("postgres", workers, f"http://127.0.0.1:{port}", proc, db_url, schema, pg_url)
    return _healthy(target)


def _healthy(target: Target) -> Target:
    try:
        http_load.wait_healthy(target.base, target.proc)
    except BaseException:
        target.stop()
        raise
    return target
