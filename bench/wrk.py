"""One ``wrk`` run with ``bench/wrk_load.lua``, read back as the benchmarks' figures.

wrk is C: one of its threads keeps thousands of requests a second in flight, where a
Python client tops out at a few hundred and would measure itself rather than the server.
The Lua script picks each request by its mode (see its header), stops a thread after
``count`` responses and prints one ``PARKGATE_WRK {json}`` line with the requests, the
time from the first request to the last response, latency percentiles, statuses and the
reply kinds it saw.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import uuid
from pathlib import Path
from typing import Any

from bench.common import ratio

SCRIPT = Path(__file__).with_name("wrk_load.lua")


def installed() -> bool:
    """Whether ``wrk`` is on PATH (Debian's ``wrk`` package)."""
    return shutil.which("wrk") is not None


def run(
    base: str,
    mode: str,
    *,
    count: int,
    seconds: float,
    concurrency: int,
    seed: int,
    conversations: int,
    prefix: str,
    threads: int = 1,
    expected_rate: float | None = None,
) -> dict[str, Any]:
    """Drive ``base`` with one wrk run of ``mode``; requests, wall time, rate, latency, statuses, kinds.

    Args:
        base: the server's URL (``http://127.0.0.1:PORT``).
        mode: a mode of ``wrk_load.lua``: ``healthz``, ``messages``, ``pass``, ``pass_id``,
            ``retry`` or ``select``.
        count: responses after which each wrk thread stops.
        seconds: wrk's ``-d``, the bound on the run's time.
        concurrency: connections held open (``-c``).
        seed: seeds the script's choice of conversations.
        conversations: how many conversation ids the script picks from (``PREFIX0`` ...).
        prefix: the conversation ids' prefix.
        threads: wrk threads (``-t``); ``select`` gives each its own share of the ids.
        expected_rate: requests/s seen earlier: ``-d`` is cut to twice the time ``count``
            should take, so a small count does not idle out the whole ``seconds``.

    Returns:
        ``requests``, ``wall_s``, ``requests_per_s``, ``latency`` (ms), ``statuses``, ``kinds``.

    Raises:
        RuntimeError: wrk failed or printed no result line.
    """
    if expected_rate:
        seconds = min(seconds, 2 * count * threads / expected_rate + 1)
    command = [
        "wrk",
        f"-t{threads}",
        f"-c{max(concurrency, threads)}",
        f"-d{max(1, round(seconds))}s",
        "--timeout",
        "30s",
        "-s",
        str(SCRIPT),
        base,
        "--",
        str(count),
        mode,
        f"w{uuid.uuid4().hex[:8]}",
        str(conversations),
        prefix,
        str(seed),
        str(threads),
    ]
    done = subprocess.run(command, capture_output=True, text=True, timeout=seconds + 60, check=False)
    line = next((text for text in done.stdout.splitlines() if text.startswith("PARKGATE_WRK ")), None)
    if done.returncode != 0 or line is None:
        raise RuntimeError(f"wrk failed ({done.returncode}): {(done.stdout + done.stderr)[-600:]}")
    data = json.loads(line.split(" ", 1)[1])
    wall = data["elapsed_us"] / 1e6
    statuses: dict[str, int] = dict(data["statuses"])
    if data["socket_errors"]:
        statuses["socket errors"] = data["socket_errors"]
    return {
        "requests": data["requests"],
        "wall_s": wall,
        "requests_per_s": ratio(data["requests"], wall),
        "latency": {
            "count": data["requests"],
            "p50_ms": data["p50_us"] / 1000,
            "p99_ms": data["p99_us"] / 1000,
            "mean_ms": data["mean_us"] / 1000,
        },
        "statuses": statuses,
        "kinds": dict(data["kinds"]),
    }
