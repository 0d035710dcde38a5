"""CPU a message, client and server: benchmark 1's two sides on PostgreSQL, split.

``python -m bench.cpu_split [--conversations N] [--rounds R]``

On a machine short of cores, the client and the server share the CPU, so a message's
cost is the client's CPU *plus* the server's. ``bench.instructions`` counts only the
client; this adds the server: the CPU time (user and system, from ``/proc``) of every
PostgreSQL process (its backends, WAL writer, checkpointer) and of this process, read
before and after each side's run of benchmark 1's mix (the gateway) and of its raw
``UPDATE`` loop, in alternating rounds in one process. It needs the server on this
machine (its processes' ``/proc`` entries readable); a remote server's share is
reported as unknown. Times come in clock ticks (10 ms), so a round should run for
seconds: the default is 2,000 conversations (10,000 messages) a round.

This is the measurement that showed schema v3's ``parkgate_step`` scanning every open
ask (bench/README.md, Round 9): the client's share had barely moved, the server's was
more than twice the raw ``UPDATE``'s.
"""

from __future__ import annotations

import argparse
import os
import resource
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from bench.common import postgres_url
from bench.reply_path import checked_ops, cycled, fresh_gateway, script, warmed_raw_loop

SIDES = ("gateway", "raw")
WARM_UP_CONVERSATIONS = 200
_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


@dataclass
class Cpu:
    """Seconds of CPU: this process's and the server's (None: the server's cannot be read)."""

    client_user: float = 0.0
    client_system: float = 0.0
    server_user: float | None = 0.0
    server_system: float | None = 0.0

    def __add__(self, other: Cpu) -> Cpu:
        def plus(one: float | None, two: float | None) -> float | None:
            return None if one is None or two is None else one + two

        return Cpu(
            self.client_user + other.client_user,
            self.client_system + other.client_system,
            plus(self.server_user, other.server_user),
            plus(self.server_system, other.server_system),
        )

    @property
    def total(self) -> float | None:
        if self.server_user is None or self.server_system is None:
            return None
        return self.client_user + self.client_system + self.server_user + self.server_system


def process_ticks(pid: int) -> tuple[int, int] | None:
    """User and system clock ticks of the PostgreSQL process ``pid`` (None: not one here)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            line = stat.read()
    except OSError:
        return None
    name, fields = line[line.index("(") + 1 : line.rindex(")")], line.rsplit(")", 1)[1].split()
    if name != "postgres":  # a remote server's pid, met by chance on this machine
        return None
    return int(fields[11]), int(fields[12])  # utime, stime (fields 14 and 15 of proc(5))


def server_pids(store: Any) -> list[int]:
    """Every process of the PostgreSQL server the store talks to (backends and helpers)."""
    with store._pool.connection() as conn:
        return [row[0] for row in conn.execute("SELECT pid FROM pg_stat_activity WHERE pid IS NOT NULL")]


def measured(run: Callable[[], None], pids: list[int]) -> Cpu:
    """The CPU ``run`` took, here and in the server processes ``pids`` that lived through it."""
    before, own_before = {pid: process_ticks(pid) for pid in pids}, resource.getrusage(resource.RUSAGE_SELF)
    run()
    after, own_after = {pid: process_ticks(pid) for pid in pids}, resource.getrusage(resource.RUSAGE_SELF)
    spans = [(before[pid], after[pid]) for pid in pids]
    lived = [(then, now) for then, now in spans if then is not None and now is not None]
    server: tuple[float | None, float | None] = (None, None)
    if lived:
        server = (
            sum(now[0] - then[0] for then, now in lived) / _TICK,
            sum(now[1] - then[1] for then, now in lived) / _TICK,
        )
    return Cpu(own_after.ru_utime - own_before.ru_utime, own_after.ru_stime - own_before.ru_stime, *server)


def measure(conversations: int, rounds: int, pg_url: str) -> dict[str, Any]:
    """Both sides' CPU a message, in alternating rounds; microseconds, and raw / gateway."""
    totals = {side: Cpu() for side in SIDES}
    messages = 0
    with fresh_gateway("postgres", pg_url, "cpusplit") as (target, gateway):
        checked_ops(gateway, script(range(10**6, 10**6 + WARM_UP_CONVERSATIONS)))
        raw, ids = warmed_raw_loop(target, gateway, WARM_UP_CONVERSATIONS)
        pids = server_pids(gateway.store)
        for n in range(rounds):
            calls = script(range(n * conversations, (n + 1) * conversations))
            targets = cycled(ids, len(calls))
            totals["gateway"] += measured(lambda calls=calls: checked_ops(gateway, calls), pids)
            totals["raw"] += measured(lambda targets=targets: raw(targets, []), pids)
            messages += len(calls)
    per_message = {side: _microseconds(cpu, messages) for side, cpu in totals.items()}
    gateway_total, raw_total = per_message["gateway"]["total"], per_message["raw"]["total"]
    return {
        "store": "postgres",
        "messages_per_side": messages,
        "cpu_us_per_message": per_message,
        "raw_over_gateway": raw_total / gateway_total if gateway_total and raw_total else None,
    }


def _microseconds(cpu: Cpu, messages: int) -> dict[str, float | None]:
    def each(seconds: float | None) -> float | None:
        return None if seconds is None else seconds * 1e6 / messages

    return {
        "client_user": each(cpu.client_user),
        "client_system": each(cpu.client_system),
        "server_user": each(cpu.server_user),
        "server_system": each(cpu.server_system),
        "total": each(cpu.total),
    }


def render(result: dict[str, Any]) -> str:
    """The table ``main`` prints."""
    columns = ("client_user", "client_system", "server_user", "server_system", "total")
    lines = [
        f"CPU a message on PostgreSQL, µs ({result['messages_per_side']:,} messages a side)",
        f"{'side':<8}" + "".join(f"{name.replace('_', ' '):>15}" for name in columns),
    ]
    for side in SIDES:
        row = result["cpu_us_per_message"][side]
        lines.append(f"{side:<8}" + "".join(f"{'?' if row[c] is None else format(row[c], '.1f'):>15}" for c in columns))
    ratio = result["raw_over_gateway"]
    lines.append(
        f"raw / gateway (total) {'unknown: the server is not on this machine' if ratio is None else f'{ratio:.2f}'}"
    )
    return "\n".join(lines)


def main() -> None:
    """Command-line entry: print both sides' CPU a message, client and server."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--conversations", type=int, default=2000, help="conversations a round (5 messages each)")
    parser.add_argument("--rounds", type=int, default=2, help="alternating rounds of each side")
    args = parser.parse_args()
    if args.conversations < 1 or args.rounds < 1:
        parser.error("--conversations and --rounds must be at least 1")
    print(render(measure(args.conversations, args.rounds, postgres_url())))


if __name__ == "__main__":
    main()
