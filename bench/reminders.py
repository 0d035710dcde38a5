"""Reminder lateness: 1,000 asks reminded in the same second, through real servers.

The due-read benchmark's method (:func:`bench.waiting.due_round`) with the reminder's due
time in place of the TTL's: ``count`` asks, each with a callback and ``remind_after`` of
``offset`` seconds (the TTL far later), are written in one store transaction (one
``last_touched``: every reminder falls due at the same instant) while ``servers``
``parkgate serve`` processes run on the database. Each ask's lateness is its
``ask.reminder`` callback's arrival (wall clock) minus its due time (``last_touched`` +
the offset, from the event's ``data``). Goal: p99 <= 1 s, as the due reads.

    python -m bench.reminders [--engines sqlite,postgres] [--asks 1000] [--rounds 3]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.common import StoreTarget, store_target, workdir
from bench.waiting import OPTIONS, PROMPT, Receiver, _seconds_summary, serving

#: The goal, as the due reads': reminder lateness p99 in seconds.
GOAL_P99_S = 1.0
#: Seconds from the parking to the reminders (time for the servers to be idle again).
OFFSET_S = 3.0


def park_reminded(target: StoreTarget, count: int, offset: float, url: str) -> list[str]:
    """``count`` asks (a run each) reminded ``offset`` s after one shared ``last_touched``."""
    from parkgate.core.kinds import AskKind, AskStatus
    from parkgate.core.model import Ask, Run

    store = target.open()
    now, ids = datetime.now(UTC), []
    try:
        with store.transaction() as tx:
            for n in range(count):
                conversation, run_id, ask_id = f"rem-{n}-{uuid.uuid4().hex[:6]}", uuid.uuid4().hex, uuid.uuid4().hex
                tx.save_run(Run(run_id, conversation, None, "running", None, {}, ask_id, now, now))
                ask = Ask(ask_id, conversation, run_id, AskKind.CHOICE, PROMPT, OPTIONS, AskStatus.OPEN, now, now, 3600)
                tx.insert_ask(ask.evolve(callback_url=url, watched=True, remind_after=(offset,)))
                ids.append(ask_id)
    finally:
        store.close()
    return ids


def reminder_round(target: StoreTarget, receiver: Receiver, count: int, offset: float) -> dict[str, Any]:
    """One round: ``count`` asks reminded at one instant; their reminders' lateness."""
    ids = park_reminded(target, count, offset, receiver.url)
    hits = receiver.wait_for(ids, offset + 120)
    lateness = []
    for hit in hits:
        assert hit.type == "ask.reminder", hit.type
        due = datetime.fromisoformat(hit.body["last_touched"]).timestamp() + hit.body["remind_after"][0]
        lateness.append(hit.wall - due)
    arrivals = sorted(hit.wall for hit in hits)
    return {
        "asks": count,
        "reminders": len(hits),
        "lateness": _seconds_summary(lateness),
        "arrivals_span_s": arrivals[-1] - arrivals[0] if arrivals else 0.0,
    }


def measure(engine: str, work: Path, pg_url: str, count: int, rounds: int, servers: int) -> dict[str, Any]:
    """``rounds`` rounds on a fresh database of ``engine`` with ``servers`` servers."""
    receiver = Receiver()
    try:
        with store_target(engine, work, pg_url, "reminders") as target, contextlib.ExitStack() as running:
            for number in range(servers):
                running.enter_context(serving(target, work, f"reminders-{number}"))
            found = [reminder_round(target, receiver, count, OFFSET_S) for _ in range(rounds)]
    finally:
        receiver.stop()
    worst = max(r["lateness"]["p99_s"] for r in found)
    complete = all(r["reminders"] == r["asks"] for r in found)
    return {
        "store": engine,
        "servers": servers,
        "rounds": found,
        "lateness_p99_s_worst_round": worst,
        "duplicates": receiver.duplicates,
        "goal_p99_s": GOAL_P99_S,
        "goal_met": worst <= GOAL_P99_S and complete,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.reminders", description=__doc__.splitlines()[0])
    parser.add_argument("--engines", default="sqlite,postgres")
    parser.add_argument("--asks", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--servers", default="1,2", help="comma-separated server counts")
    args = parser.parse_args(argv)
    pg_url = os.environ.get("PARKGATE_PG_URL", "postgresql://postgres@127.0.0.1:5432/test")
    rows = []
    with workdir() as work:
        for engine in args.engines.split(","):
            for servers in (int(n) for n in args.servers.split(",")):
                began = time.monotonic()
                row = measure(engine, work, pg_url, args.asks, args.rounds, servers)
                row["seconds"] = round(time.monotonic() - began, 1)
                rows.append(row)
                p99s = " / ".join(f"{r['lateness']['p99_s']:.3f}" for r in row["rounds"])
                p50s = " / ".join(f"{r['lateness']['p50_s']:.3f}" for r in row["rounds"])
                print(f"{engine} {servers} server(s): lateness p50 {p50s} s, p99 {p99s} s, goal met: {row['goal_met']}")
    print(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
