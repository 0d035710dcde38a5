"""One ``wrk`` run with ``bench/wrk_load.lua``, read back as the benchmarks' figures.

wrk is C: one of its threads keeps thousands of requests a second in flight, where a
Python client tops out at a few hundred and would measure itself rather than the server.
The Lua script picks each request by its mode (see its header), stops a thread after
``count`` responses and prints one ``PARKGATE_WRK {json}`` line with the requests, the
time from the first request to the last response, latency percentiles, statuses and the
reply kinds it saw. wrk waits out its ``-d`` even when every thread has stopped, so a run
whose threads all reached ``count`` is ended then with SIGINT (wrk's own way to end a run
early: it still reports), not a second or more later.
"""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import threading
import uuid
from pathlib import Path
from typing import Any

from bench.common import ratio

SCRIPT = Path(__file__).with_name("wrk_load.lua")
#: The line the script writes on stderr when one of its threads has its ``count``.
THREAD_DONE = "PARKGATE_WRK_THREAD_DONE"
#: SIGINT's bit in ``/proc/PID/status``'s ``SigCgt`` mask (signal n is bit n - 1).
_SIGINT_BIT = 1 << (signal.SIGINT - 1)


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
    returncode, stdout, stderr = _run_until_counted(command, threads, seconds + 60)
    line = next((text for text in stdout.splitlines() if text.startswith("PARKGATE_WRK ")), None)
    if returncode != 0 or line is None:
        raise RuntimeError(f"wrk failed ({returncode}): {(stdout + stderr)[-600:]}")
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


def _run_until_counted(command: list[str], threads: int, timeout: float) -> tuple[int, str, str]:
    """Run wrk; once all ``threads`` have their count, end it with SIGINT. Its status and output.

    The signal goes only once wrk catches it (its handler is set right after its threads
    start): before that, SIGINT would kill it unreported, so the run then lasts its ``-d``.
    """
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as proc:
        watchdog = threading.Timer(timeout, proc.kill)
        watchdog.start()
        try:
            assert proc.stdout is not None and proc.stderr is not None
            finished, other = 0, []
            for text in proc.stderr:  # until wrk exits and closes it
                if not text.startswith(THREAD_DONE):
                    other.append(text)
                    continue
                finished += 1
                if finished == threads and _catches_sigint(proc.pid):
                    proc.send_signal(signal.SIGINT)
            stdout = proc.stdout.read()
            returncode = proc.wait()
        finally:
            watchdog.cancel()
    return returncode, stdout, "".join(other)


def _catches_sigint(pid: int) -> bool:
    """Whether process ``pid`` has a handler for SIGINT (``SigCgt`` in ``/proc/PID/status``)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    mask = next((line.split()[1] for line in status.splitlines() if line.startswith("SigCgt:")), "0")
    return bool(int(mask, 16) & _SIGINT_BIT)
