"""Benchmark 4's floor and worker table: ``parkgate serve`` against a bare app, same load.

*The HTTP floor*: the bare app (:mod:`bench.bare_app`: one JSON POST route under the
uvicorn settings ``parkgate serve`` uses) and ``parkgate serve`` on SQLite and on
PostgreSQL, one worker each, driven by the same ``wrk`` requests. Cells:

- ``pass``: a message to a conversation with nothing parked, without ``message_id``;
- ``pass_id``: the same with its own ``message_id`` (the reply is stored for redelivery);
- ``retry``: a non-answer (with ``message_id``) to a parked 3-option menu;
- ``select``: ``1`` (with ``message_id``) to a parked menu, each conversation once: the
  conversations are parked afresh before each round's run.

Each cell runs right after a bare-app run of the same requests, round after round, and
its ratio is the cell's messages/s over the bare app's (the sums over the rounds; the
per-round ratios are kept too). Goals (issue 41): ``pass`` >= 0.25x the bare app;
``pass_id`` a p99 of at most 25 ms and >= 0.6x the same store's ``pass``.

*The worker table*: for each worker count (``--workers``, default 1,2,4,8), the bare app
and ``parkgate serve`` on each store with that many workers, ``pass`` and ``pass_id``
messages in alternating rounds: messages/s, the ratio to the bare app at the same
count, and each figure over its own one-worker figure.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from bench import wrk
from bench.common import ratio
from bench.http_servers import Target, start_bare, start_parkgate

CELLS = ("pass", "pass_id", "retry", "select")
CELL_NAMES = {
    "pass": "nothing parked, no message_id",
    "pass_id": "nothing parked, message_id",
    "retry": "a retry on a parked ask",
    "select": "a selection",
}
#: Issue 41's goals (one worker): a ``pass`` at least this ratio to the bare app...
PASS_OF_BARE = 0.25
#: ...and a ``pass_id`` at most this p99 and at least this ratio to the same store's ``pass``.
PASS_ID_P99_MS = 25.0
PASS_ID_OF_PASS = 0.6
#: The cells the goals judge (the others are measured only).
GOALS = {
    "pass": f">= {PASS_OF_BARE:g}x bare",
    "pass_id": f"p99 <= {PASS_ID_P99_MS:g} ms, >= {PASS_ID_OF_PASS:g}x the pass",
}
#: The messages the worker table sends.
WORKER_MODES = ("pass", "pass_id")
DEFAULT_WORKERS = (1, 2, 4, 8)
#: Conversations with nothing parked that ``pass`` messages pick from.
FREE_CONVERSATIONS = 10_000
FREE = "free-"
#: Parked conversations the ``retry`` messages pick from.
RETRY_PARKED = 300
RETRY = "parked-"


def wrk_threads(workers: int) -> int:
    """wrk threads for a server of ``workers``: one per four cores, at most four and at most ``workers``."""
    return max(1, min(4, workers, (os.cpu_count() or 1) // 4))


class Loads:
    """Runs wrk against targets with one scale's bounds, and keeps each target's last rate."""

    def __init__(self, scale: Any, concurrency: int, threads: int) -> None:
        self.scale, self.concurrency, self.threads = scale, concurrency, threads
        self.rates: dict[tuple[str, str], float] = {}

    def run(self, target: Target, mode: str, seed: int, parked: tuple[str, int] | None = None) -> dict[str, Any]:
        """One run of ``mode`` on ``target`` (``parked``: the select run's prefix and count)."""
        count = self.scale.floor_requests
        prefix, conversations = {"retry": (RETRY, RETRY_PARKED)}.get(mode, (FREE, FREE_CONVERSATIONS))
        if parked is not None:
            prefix, conversations = parked
            count = min(count, max(1, conversations // self.threads - self.concurrency))
        result = wrk.run(
            target.base,
            mode,
            count=count,
            seconds=self.scale.floor_seconds,
            concurrency=self.concurrency,
            seed=seed,
            conversations=conversations,
            prefix=prefix,
            threads=self.threads,
            expected_rate=self.rates.get((target.name, mode)),
        )
        self.rates[(target.name, mode)] = result["requests_per_s"]
        return result


def _select_parked(scale: Any, loads: Loads, target: Target, number: int) -> tuple[str, int]:
    """Park enough fresh conversations for one select run on ``target``; their prefix and count."""
    rate = loads.rates.get((target.name, "select")) or loads.rates.get((target.name, "pass_id")) or 100.0
    wanted = math.ceil(rate * scale.floor_seconds * 1.5) + 2 * loads.concurrency * loads.threads
    count = min(scale.floor_select_max, wanted, scale.floor_requests * loads.threads + 2 * loads.concurrency)
    prefix = f"sel{number}-"
    target.park(prefix, count)
    return prefix, count


def measure_floor(
    scale: Any, work: Path, pg_url: str | None, log: Callable[[str], None], engines: Iterable[str]
) -> dict[str, Any]:
    """The floor cells on each store (one worker), each against the bare app in the same rounds."""
    stores = [engine for engine in engines if engine == "sqlite" or pg_url]
    skipped = [engine for engine in engines if engine not in stores]
    loads = Loads(scale, scale.http_concurrency, wrk_threads(1))
    result: dict[str, Any] = {"workers": 1, "wrk_threads": loads.threads, "concurrency": loads.concurrency}
    if skipped:
        result["skipped"] = f"{', '.join(skipped)}: PostgreSQL is not reachable"
    if not stores:
        return result | {"cells": []}
    targets: list[Target] = []
    runs: dict[tuple[str, str], list[tuple[dict[str, Any], dict[str, Any]]]] = {}
    try:
        bare = start_bare(1, work)
        targets.append(bare)
        for engine in stores:
            targets.append(start_parkgate(engine, 1, work, pg_url))
        for target in targets[1:]:
            target.park(RETRY, RETRY_PARKED)
        for target in targets:  # warm-up: every connection opened, every statement prepared
            for mode in ("pass", "pass_id"):
                loads.run(target, mode, 99)
        for number in range(scale.floor_rounds):
            for target in targets[1:]:
                for cell in CELLS:
                    parked = _select_parked(scale, loads, target, number) if cell == "select" else None
                    pair = (loads.run(bare, cell, number, parked), loads.run(target, cell, number, parked))
                    runs.setdefault((target.name, cell), []).append(pair)
            log(f"    floor round {number + 1}/{scale.floor_rounds} done")
    finally:
        for target in reversed(targets):
            target.stop()
    cells = [_floor_cell(store, cell, pairs) for (store, cell), pairs in runs.items()]
    return result | {"cells": _judged(cells)}


def _judged(cells: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each goal cell with ``goal_met`` (issue 41): a ``pass_id`` is judged against its
    store's ``pass`` cell, measured in the same rounds."""
    passes = {c["store"]: c["parkgate"]["requests_per_s"] for c in cells if c["cell"] == "pass"}
    for c in cells:
        if c["cell"] == "pass":
            c["goal_met"] = c["ratio"] >= PASS_OF_BARE
        elif c["cell"] == "pass_id":
            of_pass = ratio(c["parkgate"]["requests_per_s"], passes.get(c["store"], 0.0))
            c["of_pass"] = of_pass
            c["goal_met"] = c["parkgate"]["p99_ms"] <= PASS_ID_P99_MS and of_pass >= PASS_ID_OF_PASS
    return cells


def _floor_cell(store: str, cell: str, pairs: list[tuple[dict[str, Any], dict[str, Any]]]) -> dict[str, Any]:
    bare = merged_runs(pair[0] for pair in pairs)
    served = merged_runs(pair[1] for pair in pairs)
    figure = ratio(served["requests_per_s"], bare["requests_per_s"])
    goal = GOALS.get(cell)  # judged once every cell is in (_judged)
    return {
        "store": store,
        "cell": cell,
        "name": CELL_NAMES[cell],
        "parkgate": served,
        "bare": bare,
        "ratio": figure,
        "ratio_per_round": [ratio(s["requests_per_s"], b["requests_per_s"]) for b, s in pairs],
        "goal": goal,
        "goal_met": None,
    }


def merged_runs(parts: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """Runs summed: requests over wall time, the worst p50/p99, statuses and kinds added up."""
    listed = list(parts)
    requests = sum(p["requests"] for p in listed)
    wall = sum(p["wall_s"] for p in listed)
    statuses: dict[str, int] = {}
    kinds: dict[str, int] = {}
    for p in listed:
        for key, value in p["statuses"].items():
            statuses[key] = statuses.get(key, 0) + value
        for key, value in p["kinds"].items():
            kinds[key] = kinds.get(key, 0) + value
    return {
        "requests": requests,
        "wall_s": wall,
        "requests_per_s": ratio(requests, wall),
        "p50_ms": max(p["latency"]["p50_ms"] for p in listed),
        "p99_ms": max(p["latency"]["p99_ms"] for p in listed),
        "statuses": statuses,
        "kinds": kinds,
    }


def render_floor(floor: dict[str, Any]) -> list[str]:
    """The floor's table: each cell's messages/s beside the bare app's, and the ratio."""
    lines = [
        f"4a. HTTP floor: parkgate serve vs a bare Starlette app, same uvicorn settings, one worker, wrk "
        f"(-c{floor['concurrency']}, -t{floor['wrk_threads']}); goals (issue 41): without message_id "
        f"{GOALS['pass']}; with one {GOALS['pass_id']}",
        f"{'store':9} {'message':32} {'req/s':>7} {'bare/s':>7} {'ratio':>6} {'per round':>17} "
        f"{'p50':>8} {'p99':>8}  kinds / goal",
    ]
    for c in floor["cells"]:
        served = c["parkgate"]
        rounds = " ".join(f"{r:.2f}" for r in c["ratio_per_round"])
        of_pass = f" ({c['of_pass']:.2f}x the pass)" if "of_pass" in c else ""
        goal = "" if c["goal"] is None else of_pass + (" met" if c["goal_met"] else f" NOT met ({c['goal']})")
        kinds = ",".join(f"{kind}:{n}" for kind, n in sorted(served["kinds"].items()))
        bad = {code: n for code, n in served["statuses"].items() if code != "200"}
        lines.append(
            f"{c['store']:9} {c['name']:32} {served['requests_per_s']:7.0f} {c['bare']['requests_per_s']:7.0f} "
            f"{c['ratio']:6.2f} {rounds:>17} {served['p50_ms']:6.1f}ms {served['p99_ms']:6.1f}ms  "
            f"{kinds}{goal}{f' statuses {bad}' if bad else ''}"
        )
    if "skipped" in floor:
        lines.append(f"note: {floor['skipped']}")
    return lines
