"""Profile the reply path: benchmark 1's mix, sampled by py-spy (default) or under cProfile.

``python -m bench.profile_reply [--store sqlite|postgres] [--synchronous full|normal]
[--conversations N] [--profiler py-spy|cprofile] [--rate HZ] [--sort tottime] [--limit N]``

py-spy samples the running process from outside, so the profile has the shape of the
real run: time spent waiting on the store or in a system call shows as such, and a
small Python function costs what it costs. cProfile counts every call exactly but adds
its own cost to each one, so it overstates code made of many small calls; it is kept
for call counts (``--profiler cprofile``).

The py-spy profile covers only the measured mix (not start-up or the warm-up) and only
time on the CPU (a thread asleep waiting for the server is not sampled). It prints each
function's share of those samples, inclusive (it or what it called) and self (the
sampled line was in it), and how much of the whole was the store's I/O path: psycopg
sending or polling, or SQLite running a statement, a BEGIN or a COMMIT.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import re
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from bench.common import postgres_url
from bench.reply_path import Call, checked_ops, fresh_gateway, script

#: Conversations run before measuring: connections, caches and prepared statements warm.
WARM_UP_CONVERSATIONS = 20
#: Leaf frames that are the store's I/O: psycopg waiting on or sending to the server; a
#: statement handed to the driver (sqlite3 runs it in C, below any Python frame); SQLite's
#: BEGIN and COMMIT. py-spy may qualify a method with its class (``Connection.wait``).
IO_LEAVES = re.compile(
    r"^(\w+\.)?(wait|_send_query_prepared) \(psycopg/"
    r"|^(\w+\.)?_exec \(parkgate/store/sql\.py"
    r"|^(\w+\.)?__(enter|exit)__ \(parkgate/store/sqlite\.py"
)
_LINE_NUMBER = re.compile(r":\d+\)$")


def measured_mix(gateway: Any, calls: Sequence[Call]) -> None:
    """The profiled part. Its name marks the samples that count (see :func:`summarise_samples`)."""
    checked_ops(gateway, calls)


def _run_mix(engine: str, conversations: int, pg_url: str, synchronous: str, profiler: Any = None) -> None:
    with fresh_gateway(engine, pg_url, "profile", synchronous) as (_, gateway):
        checked_ops(gateway, script(range(conversations, conversations + WARM_UP_CONVERSATIONS)))
        calls = script(range(conversations))
        if profiler is not None:
            profiler.enable()
        measured_mix(gateway, calls)
        if profiler is not None:
            profiler.disable()


def profile(engine: str, conversations: int, sort: str, limit: int, pg_url: str, synchronous: str = "full") -> str:
    """Run ``conversations`` scripts through one gateway under cProfile; the stats as text."""
    profiler = cProfile.Profile()
    _run_mix(engine, conversations, pg_url, synchronous, profiler)
    out = io.StringIO()
    pstats.Stats(profiler, stream=out).sort_stats(sort).print_stats(limit)
    return out.getvalue()


def py_spy() -> str:
    """The py-spy executable: beside this interpreter (the virtual environment), else on PATH."""
    beside = Path(sys.executable).parent / "py-spy"
    found = str(beside) if beside.exists() else shutil.which("py-spy")
    if found is None:
        raise RuntimeError("py-spy is not installed (pip install py-spy; it is in parkgate's dev extra)")
    return found


def sample(engine: str, conversations: int, limit: int, pg_url: str, synchronous: str = "full", rate: int = 250) -> str:
    """Run the mix in a child process sampled by py-spy; the summary as text."""
    child = [
        sys.executable,
        "-m",
        "bench.profile_reply",
        "--child",
        "--store",
        engine,
        "--synchronous",
        synchronous,
        "--conversations",
        str(conversations),
    ]
    with tempfile.TemporaryDirectory() as folder:
        raw = Path(folder) / "samples.txt"
        record = [py_spy(), "record", "--format", "raw", "--rate", str(rate), "--output", str(raw), "--", *child]
        done = subprocess.run(
            record, capture_output=True, text=True, check=False, cwd=Path(__file__).resolve().parents[1]
        )
        if not raw.exists():
            raise RuntimeError(f"py-spy wrote no samples ({done.returncode}):\n{done.stderr[-2000:]}")
        lines = raw.read_text(encoding="utf-8").splitlines()
    return summarise_samples(lines, limit)


def summarise_samples(lines: Iterable[str], limit: int, marker: str = measured_mix.__name__) -> str:
    """py-spy's raw output (``frame;frame;... count`` per stack) as shares of the measured samples.

    Only stacks through ``marker`` count. A function is counted once per stack for its
    inclusive share, however deep it recurses; line numbers are dropped so that a
    function's lines add up.
    """
    inclusive: Counter[str] = Counter()
    own: Counter[str] = Counter()
    total = io_samples = 0
    for line in lines:
        stack, _, number = line.rpartition(" ")
        frames = stack.split(";")
        if not stack or not any(frame.startswith(marker + " ") for frame in frames):
            continue
        count = int(number)
        total += count
        names = [_LINE_NUMBER.sub(")", frame) for frame in frames]
        below = names[next(i for i, frame in enumerate(frames) if frame.startswith(marker + " ")) + 1 :]
        inclusive.update(dict.fromkeys(below, count))
        own[names[-1]] += count
        if IO_LEAVES.search(names[-1]):
            io_samples += count
    if not total:
        return "no samples inside the measured mix (too few conversations for the rate?)"
    out = [
        f"{total} on-CPU samples in the measured mix (py-spy leaves out idle time); "
        f"{100 * io_samples / total:.0f}% in the store's I/O (the driver sending, polling, or running SQLite)",
        "",
        "inclusive  function",
    ]
    out += [f"{100 * n / total:8.1f}%  {name}" for name, n in inclusive.most_common(limit)]
    out += ["", "self       function"]
    out += [f"{100 * n / total:8.1f}%  {name}" for name, n in own.most_common(limit)]
    return "\n".join(out)


def main() -> None:
    """Command-line entry: print the profile of the reply path on one store."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--store", choices=["sqlite", "postgres"], default="sqlite")
    parser.add_argument("--conversations", type=int, default=1000)
    parser.add_argument("--profiler", choices=["py-spy", "cprofile"], default="py-spy")
    parser.add_argument("--rate", type=int, default=250, help="py-spy's samples per second")
    parser.add_argument("--sort", default="tottime", help="cProfile's sort key")
    parser.add_argument("--synchronous", choices=["full", "normal"], default="full", help="SQLite's durability")
    parser.add_argument("--limit", type=int, default=35)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        _run_mix(args.store, args.conversations, postgres_url(), args.synchronous)
    elif args.profiler == "cprofile":
        print(profile(args.store, args.conversations, args.sort, args.limit, postgres_url(), args.synchronous))
    else:
        print(sample(args.store, args.conversations, args.limit, postgres_url(), args.synchronous, args.rate))


if __name__ == "__main__":
    main()
