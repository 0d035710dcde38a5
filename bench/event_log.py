"""The event log's cost (issue 42): benchmark 1's reply path with and without its events,
and how many bytes the log grows by per ask.

``python -m bench.event_log [--conversations N] [--rounds R] [--growth-asks N]
[--no-postgres] [--out PATH]``

**Time.** Benchmark 1's mix (:mod:`bench.reply_path`: park, two bounces, ``menu``, select,
with its cancel and text shares; a ``message_id`` on every message) runs in one process
on one gateway, in alternating rounds: *with* the log (the product as it is) and
*without* it, the same code with the event writes suppressed for the measurement only
(:func:`without_events`: no event is built, so none is inserted; no product flag). Each
round takes fresh conversations; which side goes first alternates, so drift on a shared
machine hits both. Reported per store: ops/s of each side, the per-round ratios and
``with/without`` time per op (the log's overhead is that minus 1; the goal is at most
1.25). Benchmark 1's raw ``UPDATE`` is measured alongside, so the usual gateway/raw ratio
of each side shows too.

**Growth.** Two scripts, each over ``--growth-asks`` fresh asks: the door script (park,
two misses, a selection: 5 events) and a voted, escalated ask (park with three responders
and a quorum of 2, a miss, a vote, the escalation fired by a due read, a second vote
that selects: 6 events). On SQLite the bytes of ``ask_events`` and its indexes come from
``dbstat``, and the file's page count is compared with the same script run without the
log; on PostgreSQL ``pg_total_relation_size('ask_events')`` (table, indexes, TOAST) before
and after. Each divided by the number of asks.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from bench.common import (
    RESULTS_DIR,
    StoreTarget,
    machine_info,
    postgres_reachable,
    postgres_url,
    ratio,
    store_target,
    to_jsonable,
    workdir,
)
from bench.reply_path import (
    CHOICE_PROMPT,
    OPTIONS,
    Call,
    Plan,
    _gateway_ops,
    _park_raw_targets,
    _raw_loop,
    _warm_up,
    script,
)

GOAL = 1.25  # the log may add at most 25% to the reply path's time
SIDES = ("with", "without")


@contextlib.contextmanager
def without_events() -> Iterator[None]:
    """The gateway with its event writes suppressed (this process, for the block only).

    Every event of the reply path is built by :mod:`parkgate.core.events` or
    :func:`parkgate.core.machine.message_event` and handed to ``WritePlan.log``, or made
    from the fired schedule in ``WritePlan._logged``. Here the builders return nothing,
    ``log`` drops what it gets and ``_logged`` returns no events: the units write exactly
    what they did before the log existed.
    """
    from parkgate.core import events, machine
    from parkgate.gateway import runs

    saved: list[tuple[Any, str, Any]] = []

    def patch(owner: Any, name: str, value: Any) -> None:
        saved.append((owner, name, getattr(owner, name)))
        setattr(owner, name, value)

    def nothing(*_: Any, **__: Any) -> None:
        return None

    try:
        for name in ("parked", "closed", "reminded", "escalated"):
            patch(events, name, nothing)
        patch(machine, "message_event", nothing)
        patch(runs.WritePlan, "log", nothing)
        patch(runs.WritePlan, "_logged", lambda self, clock: ())
        yield
    finally:
        for owner, name, value in reversed(saved):
            setattr(owner, name, value)


def measure_time(target: StoreTarget, conversations: int, rounds: int) -> dict[str, Any]:
    """One store's cell: ``rounds`` rounds, each running the mix with and without the log
    (and the raw UPDATE), ``conversations`` fresh conversations per side and round."""
    from parkgate import Gateway

    gateway = Gateway(store=target.open())
    try:
        raw_ids = _park_raw_targets(gateway, 1)[0]
        raw = _raw_loop(target, gateway.store)
        _warm_up(target, gateway, raw, Plan(0, (), tuple(raw_ids)))
        with without_events():
            _warm_up(target, gateway, raw, Plan(0, (), tuple(raw_ids)))
        seconds: dict[str, list[float]] = {side: [] for side in (*SIDES, "raw")}
        ops: dict[str, int] = dict.fromkeys((*SIDES, "raw"), 0)
        handle_ns: dict[str, list[int]] = {side: [] for side in SIDES}
        kinds: dict[str, Counter[str]] = {side: Counter() for side in SIDES}
        wrong: list[str] = []
        per_round: list[float] = []
        for number in range(rounds):
            order = SIDES if number % 2 == 0 else SIDES[::-1]
            took: dict[str, float] = {}
            # Both sides run the same conversations' scripts (the same flavours), each under
            # names of its own: a round's mix differs from side to side only in the log.
            indices = list(range(number * conversations, (number + 1) * conversations))
            for side in order:
                calls = _renamed(script(indices), side)
                suppress = without_events() if side == "without" else contextlib.nullcontext()
                with suppress:
                    started = time.perf_counter()
                    count = _gateway_ops(gateway, calls, handle_ns[side], [], kinds[side], wrong)
                    took[side] = time.perf_counter() - started
                seconds[side].append(took[side])
                ops[side] += count
            picked = [raw_ids[(number * 7919 + i) % len(raw_ids)] for i in range(conversations * 5)]
            started = time.perf_counter()
            raw(picked, [])
            seconds["raw"].append(time.perf_counter() - started)
            ops["raw"] += len(picked)
            per_round.append(took["with"] / took["without"])
    finally:
        gateway.close()
    rates = {side: ratio(ops[side], sum(seconds[side])) for side in seconds}
    return {
        "store": target.label,
        "conversations_per_side_and_round": conversations,
        "rounds": rounds,
        "with_ops_per_s": rates["with"],
        "without_ops_per_s": rates["without"],
        "raw_ops_per_s": rates["raw"],
        # Time per op with the log over time per op without it (the overhead is this - 1).
        "with_over_without": ratio(rates["without"], rates["with"]),
        "with_over_without_per_round": per_round,
        "median_round": statistics.median(per_round),
        "gateway_over_raw_with": ratio(rates["with"], rates["raw"]),
        "gateway_over_raw_without": ratio(rates["without"], rates["raw"]),
        "handle_p50_us": {side: _p50_us(handle_ns[side]) for side in SIDES},
        "kinds": {side: dict(kinds[side]) for side in SIDES},
        "unexpected": wrong[:10],
        "goal": GOAL,
    }


def _renamed(calls: list[Call], side: str) -> list[Call]:
    """``calls`` in conversations (and with message ids) of ``side``'s own."""
    return [
        (f"{side}-{conversation}", step, text, None if mid is None else f"{side}-{mid}", flavour)
        for conversation, step, text, mid, flavour in calls
    ]


def _p50_us(values: Sequence[int]) -> float:
    return statistics.median(values) / 1000 if values else 0.0


# -- growth ------------------------------------------------------------------------------

#: The escalated script's responders, and whom its escalation adds.
VOTERS = ["ann", "bo", "cy"]


def door_script(gateway: Any, n: int) -> None:
    """Park, two misses, a selection (the door script): 5 events."""
    conversation = f"door-{n}"
    gateway.ask(conversation, CHOICE_PROMPT, OPTIONS)
    for text in ("what do you mean?", "the second one I guess", "2"):
        gateway.handle(conversation, text, f"{conversation}-{text[:4]}")


def escalated_script(gateway: Any, n: int) -> None:
    """Park for three responders with a quorum of 2 and an escalation, a miss, a vote, the
    escalation (a due read), a second vote that selects: 6 events. The clock is moved."""
    conversation = f"vote-{n}"
    clock = gateway.clock
    gateway.ask(
        conversation, CHOICE_PROMPT, OPTIONS, responders=VOTERS, quorum=2, escalate_after=60, escalate_to=["dee"]
    )
    gateway.handle(conversation, "hmm", f"{conversation}-a", sender="ann")
    gateway.handle(conversation, "1", f"{conversation}-b", sender="bo")
    clock.advance(61)
    assert gateway.read_due() == 1
    gateway.handle(conversation, "1", f"{conversation}-c", sender="dee")


SCRIPTS: dict[str, tuple[Callable[[Any, int], None], int]] = {
    "door": (door_script, 5),
    "escalated": (escalated_script, 6),
}


def _sqlite_sizes(url: str) -> tuple[int, int]:
    """(the file's bytes by page count, ask_events' bytes with its indexes by dbstat)."""
    import sqlite3

    from parkgate.store.sqlite_file import path_from_url

    conn = sqlite3.connect(path_from_url(url))
    try:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        pages = conn.execute("PRAGMA page_count").fetchone()[0] * conn.execute("PRAGMA page_size").fetchone()[0]
        names = [row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE tbl_name = 'ask_events'")]
        marks = ", ".join("?" for _ in names)
        used = conn.execute(f"SELECT COALESCE(SUM(pgsize), 0) FROM dbstat WHERE name IN ({marks})", names).fetchone()
        return int(pages), int(used[0])
    finally:
        conn.close()


def _pg_size(target: StoreTarget) -> int:
    import psycopg
    from psycopg import sql as pgsql

    with psycopg.connect(target.url, autocommit=True) as conn:
        conn.execute(pgsql.SQL("SET search_path TO {}").format(pgsql.Identifier(target.schema or "public")))
        conn.execute("VACUUM ask_events")  # the visibility and free-space maps are part of what it costs
        row = conn.execute("SELECT pg_total_relation_size('ask_events')").fetchone()
        assert row is not None
        return int(row[0])


def measure_growth(target: StoreTarget, name: str, asks: int, logged: bool = True) -> dict[str, Any]:
    """Bytes per ask that ``asks`` runs of script ``name`` add (``logged``: with the log)."""
    from parkgate import Gateway
    from parkgate.clock import ManualClock

    run_script, events_per_ask = SCRIPTS[name]
    gateway = Gateway(store=target.open(), clock=ManualClock(datetime(2026, 12, 6, tzinfo=UTC)))
    try:
        gateway.ask("warm", CHOICE_PROMPT, OPTIONS)  # the schema's first pages exist before counting
        before = _sqlite_sizes(target.url) if target.engine == "sqlite" else (_pg_size(target), 0)
        with contextlib.nullcontext() if logged else without_events():
            for n in range(asks):
                run_script(gateway, n)
                gateway.clock.advance(timedelta(seconds=1))
        after = _sqlite_sizes(target.url) if target.engine == "sqlite" else (_pg_size(target), 0)
        logged_events = len(gateway.events_after(0, limit=asks * 10 + 10)) - 1
    finally:
        gateway.close()
    assert logged_events == (events_per_ask * asks if logged else 0), f"{name}: {logged_events} events"
    out: dict[str, Any] = {"script": name, "asks": asks, "events_per_ask": events_per_ask}
    if target.engine == "sqlite":
        out["file_bytes_per_ask"] = (after[0] - before[0]) / asks
        out["ask_events_bytes_per_ask"] = (after[1] - before[1]) / asks
    else:
        out["ask_events_bytes_per_ask"] = (after[0] - before[0]) / asks
    return out


def growth(work: Path, pg_url: str | None, asks: int, log: Callable[[str], None]) -> list[dict[str, Any]]:
    """Both scripts on SQLite (with the log, and without it for the page count) and PostgreSQL."""
    rows = []
    for name in SCRIPTS:
        with store_target("sqlite", work, "", f"growth-{name}") as target:
            with_log = measure_growth(target, name, asks)
        with store_target("sqlite", work, "", f"growth-{name}-bare") as target:
            bare = measure_growth(target, name, asks, logged=False)
        with_log["file_bytes_per_ask_without_log"] = bare["file_bytes_per_ask"]
        with_log["store"] = "sqlite"
        rows.append(with_log)
        log(f"  growth, sqlite, {name}: {with_log['ask_events_bytes_per_ask']:.0f} B/ask in ask_events (dbstat)")
        if pg_url is not None:
            with store_target("postgres", work, pg_url, f"growth-{name}") as target:
                row = {**measure_growth(target, name, asks), "store": "postgres"}
            rows.append(row)
            log(f"  growth, postgres, {name}: {row['ask_events_bytes_per_ask']:.0f} B/ask")
    return rows


def run(
    conversations: int, rounds: int, growth_asks: int, pg_url: str | None, log: Callable[[str], None] = print
) -> dict[str, Any]:
    """Every cell: SQLite full and normal (and PostgreSQL), then the growth."""
    cells = []
    engines = [("sqlite", "full"), ("sqlite", "normal")] + ([("postgres", "full")] if pg_url else [])
    with workdir() as work:
        for engine, sync in engines:
            with store_target(engine, work, pg_url or "", "eventlog", synchronous=sync) as target:
                log(f"  event log: {target.label}, {rounds} rounds of {conversations} conversations a side ...")
                cell = measure_time(target, conversations, rounds)
                log(
                    f"    with {cell['with_ops_per_s']:.0f} ops/s, without {cell['without_ops_per_s']:.0f} ops/s: "
                    f"with/without time {cell['with_over_without']:.3f} (rounds' median {cell['median_round']:.3f})"
                )
                cells.append(cell)
        rows = growth(work, pg_url, growth_asks, log)
    return {"machine": machine_info(), "cells": cells, "growth": rows}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.event_log", description=__doc__.splitlines()[0])
    parser.add_argument("--conversations", type=int, default=500, help="per side and round (5 calls each)")
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--growth-asks", type=int, default=1000)
    parser.add_argument("--no-postgres", action="store_true")
    parser.add_argument("--out", type=Path, default=RESULTS_DIR / "event-log.json")
    args = parser.parse_args(argv)
    pg_url: str | None = None if args.no_postgres else postgres_url()
    if pg_url is not None and (reason := postgres_reachable(pg_url)) is not None:
        print(f"  PostgreSQL skipped: {reason}")
        pg_url = None
    results = run(args.conversations, args.rounds, args.growth_asks, pg_url)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(to_jsonable(results), indent=2))
    print(f"  written: {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
