"""Benchmark 4's worker table: messages/s at each worker count, beside the bare app's.

For each count N of ``--workers`` (default 1,2,4,8) the bare app (:mod:`bench.bare_app`)
and ``parkgate serve --workers N`` on each store run at once; in each round every target
takes a ``pass`` and a ``pass_id`` load (see :mod:`bench.http_floor`) in turn, the bare
app first. wrk holds four connections a worker (at least the scale's concurrency), so
every worker has requests waiting. On a machine with fewer cores than N the table shows
what those cores allow: workers, wrk and PostgreSQL share them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from bench.common import ratio
from bench.http_floor import WORKER_MODES, Loads, merged_runs, wrk_threads
from bench.http_servers import Target, start_bare, start_parkgate


def measure_workers(
    scale: Any,
    work: Path,
    pg_url: str | None,
    log: Callable[[str], None],
    counts: Iterable[int],
    engines: Iterable[str],
) -> dict[str, Any]:
    """One row per worker count: each target's messages/s for each mode, merged over the rounds."""
    stores = [engine for engine in engines if engine == "sqlite" or pg_url]
    rows = []
    for workers in counts:
        log(f"    workers {workers}: bare app and parkgate serve on {', '.join(stores)} ...")
        loads = Loads(scale, max(scale.http_concurrency, 4 * workers), wrk_threads(workers))
        runs: dict[tuple[str, str], list[dict[str, Any]]] = {}
        targets: list[Target] = []
        try:
            targets.append(start_bare(workers, work))
            for engine in stores:
                targets.append(start_parkgate(engine, workers, work, pg_url))
            for target in targets:  # warm-up: every worker's connections and statements
                for mode in WORKER_MODES:
                    loads.run(target, mode, 99)
            for number in range(scale.floor_rounds):
                for mode in WORKER_MODES:
                    for target in targets:
                        runs.setdefault((target.name, mode), []).append(loads.run(target, mode, number))
        finally:
            for target in reversed(targets):
                target.stop()
        rows.append(_row(workers, loads, runs))
    _add_scaling(rows)
    return {"counts": [row["workers"] for row in rows], "stores": stores, "rows": rows}


def _row(workers: int, loads: Loads, runs: dict[tuple[str, str], list[dict[str, Any]]]) -> dict[str, Any]:
    merged = {f"{name} {mode}": merged_runs(parts) for (name, mode), parts in runs.items()}
    cells = {}
    for key, figures in merged.items():
        name, mode = key.split(" ")
        cells[key] = {
            "target": name,
            "mode": mode,
            "requests_per_s": figures["requests_per_s"],
            "p99_ms": figures["p99_ms"],
            "statuses": figures["statuses"],
            "kinds": figures["kinds"],
            "vs_bare": ratio(figures["requests_per_s"], merged[f"bare {mode}"]["requests_per_s"]),
        }
    return {"workers": workers, "concurrency": loads.concurrency, "wrk_threads": loads.threads, "cells": cells}


def _add_scaling(rows: list[dict[str, Any]]) -> None:
    """Each cell's messages/s over the same cell's at the first (smallest) worker count."""
    if not rows:
        return
    first = rows[0]
    for row in rows:
        for key, cell in row["cells"].items():
            base = first["cells"].get(key, {}).get("requests_per_s", 0.0)
            cell["vs_first_count"] = ratio(cell["requests_per_s"], base)


def render_workers(table: dict[str, Any]) -> list[str]:
    """The worker table: for each count, each store's messages/s, x bare, x its first-count figure."""
    rows = table["rows"]
    if not rows:
        return []
    keys = list(rows[0]["cells"])
    first = rows[0]["workers"]
    lines = [
        f"4b. Workers: messages/s (x the bare app at the same count; x the same cell at {first} worker(s)); "
        "pass = nothing parked, pass_id = with message_id",
        f"{'workers':>7} " + " ".join(f"{key:>26}" for key in keys),
    ]
    for row in rows:
        figures = []
        for key in keys:
            cell = row["cells"].get(key)
            figures.append(
                f"{'-':>26}"
                if cell is None
                else f"{cell['requests_per_s']:>10.0f} x{cell['vs_bare']:5.2f} x{cell['vs_first_count']:5.2f}   "
            )
        lines.append(f"{row['workers']:>7} " + " ".join(figures))
    return lines
