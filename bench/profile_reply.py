"""Profile the reply path: the benchmark's mix under cProfile, top functions printed.

``python -m bench.profile_reply [--store sqlite|postgres] [--synchronous full|normal]
[--conversations N] [--sort tottime]``
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
from collections import Counter

from bench.common import postgres_url, store_target, workdir
from bench.reply_path import _gateway_ops, script


def profile(engine: str, conversations: int, sort: str, limit: int, pg_url: str, synchronous: str = "full") -> str:
    """Run ``conversations`` scripts through one gateway under cProfile; the stats as text."""
    from parkgate import Gateway

    with workdir() as work, store_target(engine, work, pg_url, "profile", synchronous=synchronous) as target:
        gateway = Gateway(store=target.open())
        try:
            _gateway_ops(gateway, script(range(conversations, conversations + 20)), [], [], Counter(), [])
            calls = script(range(conversations))
            profiler = cProfile.Profile()
            profiler.enable()
            _gateway_ops(gateway, calls, [], [], Counter(), [])
            profiler.disable()
        finally:
            gateway.close()
    out = io.StringIO()
    pstats.Stats(profiler, stream=out).sort_stats(sort).print_stats(limit)
    return out.getvalue()


def main() -> None:
    """Command-line entry: print the profile of the reply path on one store."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--store", choices=["sqlite", "postgres"], default="sqlite")
    parser.add_argument("--conversations", type=int, default=1000)
    parser.add_argument("--sort", default="tottime")
    parser.add_argument("--synchronous", choices=["full", "normal"], default="full", help="SQLite's durability")
    parser.add_argument("--limit", type=int, default=35)
    args = parser.parse_args()
    print(profile(args.store, args.conversations, args.sort, args.limit, postgres_url(), args.synchronous))


if __name__ == "__main__":
    main()
