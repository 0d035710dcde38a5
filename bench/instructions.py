"""Client instructions per message, counted by valgrind: benchmark 1's two sides, repeatably.

``python -m bench.instructions [--store postgres|sqlite] [--small N] [--large M] [--variant watched]``

Throughput on a shared 2-core machine moves by 10-20% between runs; an instruction
count does not (the same total twice, whatever else the machine is doing). So a change
to the reply path is judged here first: valgrind's callgrind counts the instructions of
the calling process (the gateway, psycopg and SQLite's C code; not the PostgreSQL
server, not the kernel) for benchmark 1's mix and for its raw ``UPDATE`` loop. Each
side runs twice in a child process, with N and with M conversations, so that start-up,
imports and schema set-up cancel out:

    per message = (instructions(M) - instructions(N)) / (messages(M) - messages(N))

The ratio printed is raw / gateway: the share of the gateway's client work that the
cheapest durable write alone would cost (1.0 would mean the gateway adds nothing).
``--variant`` gives every ask of the mix a due time (``watched``) or a callback
(``callback``; see ``bench.reply_path.ASK_VARIANTS``).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from bench.common import postgres_url
from bench.reply_path import ASK_VARIANTS, checked_ops, cycled, fresh_gateway, script, warmed_raw_loop

SIDES = ("gateway", "raw")
MESSAGES_PER_CONVERSATION = 5  # the mix's park, two bounces, menu, select (or cancel/answer)
#: Conversations run before counting starts in the child: connections, caches, prepared statements.
WARM_UP_CONVERSATIONS = 100
_COLLECTED = re.compile(r"Collected : (\d+)")


def run_side(
    side: str,
    engine: str,
    conversations: int,
    pg_url: str,
    variant: str = "plain",
    warm_up: int = WARM_UP_CONVERSATIONS,
) -> None:
    """The child's work: ``warm_up`` conversations, then ``conversations`` scripts (or as
    many raw UPDATEs) on a fresh store."""
    with fresh_gateway(engine, pg_url, "instructions") as (target, gateway):
        if side == "gateway":
            checked_ops(gateway, script(range(10**6, 10**6 + warm_up)), variant)
            checked_ops(gateway, script(range(conversations)), variant)
        else:
            raw, ids = warmed_raw_loop(target, gateway, warm_up)
            raw(cycled(ids, conversations * MESSAGES_PER_CONVERSATION), [])


def count(
    side: str,
    engine: str,
    conversations: int,
    pg_url: str,
    variant: str = "plain",
    warm_up: int = WARM_UP_CONVERSATIONS,
) -> int:
    """Instructions of one child process running ``side`` for ``conversations`` (after
    ``warm_up`` conversations, counted too: :func:`measure` subtracts them out)."""
    command = [
        "valgrind",
        "--tool=callgrind",
        "--callgrind-out-file=/dev/null",
        sys.executable,
        "-m",
        "bench.instructions",
        "--child",
        side,
        "--store",
        engine,
        "--small",
        str(conversations),
        "--variant",
        variant,
        "--warm-up",
        str(warm_up),
    ]
    done = subprocess.run(
        command,
        capture_output=True,
        text=True,
        check=False,
        cwd=Path(__file__).resolve().parents[1],
        env=_child_env(pg_url),
    )
    found = _COLLECTED.search(done.stderr)
    if done.returncode != 0 or found is None:
        raise RuntimeError(f"valgrind run of the {side} side failed ({done.returncode}):\n{done.stderr[-2000:]}")
    return int(found.group(1))


def _child_env(pg_url: str) -> dict[str, str]:
    return {**os.environ, "PARKGATE_BENCH_POSTGRES_URL": pg_url}


def measure(engine: str, small: int, large: int, pg_url: str, variant: str = "plain") -> dict[str, Any]:
    """Instructions per message on each side, and their ratio (raw / gateway)."""
    if shutil.which("valgrind") is None:
        raise RuntimeError("valgrind is not installed (Debian's package: valgrind)")
    if large <= small:
        raise ValueError("--large must be more conversations than --small")
    messages = (large - small) * MESSAGES_PER_CONVERSATION
    per_message = {
        side: (count(side, engine, large, pg_url, variant) - count(side, engine, small, pg_url, variant)) / messages
        for side in SIDES
    }
    return {
        "store": engine,
        "variant": variant,
        "conversations": [small, large],
        "instructions_per_message": per_message,
        "raw_over_gateway": per_message["raw"] / per_message["gateway"],
    }


def main() -> None:
    """Command-line entry: print both sides' instructions per message on one store."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--store", choices=["postgres", "sqlite"], default="postgres")
    parser.add_argument("--small", type=int, default=100, help="conversations in the first run of each side")
    parser.add_argument("--large", type=int, default=400, help="conversations in the second run of each side")
    parser.add_argument("--variant", choices=sorted(ASK_VARIANTS), default="plain", help="what every ask carries")
    parser.add_argument("--warm-up", type=int, default=WARM_UP_CONVERSATIONS, help=argparse.SUPPRESS)  # the child's
    parser.add_argument("--child", choices=SIDES, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        run_side(args.child, args.store, args.small, postgres_url(), args.variant, args.warm_up)
        return
    result = measure(args.store, args.small, args.large, postgres_url(), args.variant)
    per = result["instructions_per_message"]
    print(
        f"client instructions per message on {args.store}, {args.variant} asks "
        f"({args.small} -> {args.large} conversations):"
    )
    print(f"  gateway {per['gateway']:>10,.0f}")
    print(f"  raw     {per['raw']:>10,.0f}")
    print(f"  raw / gateway {result['raw_over_gateway']:.2f}")


if __name__ == "__main__":
    main()
