"""Benchmark 3: a million parked conversations.

Asks are bulk-loaded through the store's own insert path (``Transaction.save_run`` and
``Transaction.insert_ask`` in batches, one transaction per batch), one open ask per
conversation, topped up level by level (e.g. 10k -> 100k -> 1M). At each level a fresh
gateway process (``python -m bench.scale probe``) times:

- ``open_asks(limit=100)``: the audit's oldest 100, with hours open (partial index);
- ``handle()`` of a non-answer on a random conversation (the per-message path);
- a TTL expiry read: ``handle()`` on a random conversation whose ask is past its TTL
  (the read closes it as ``expired`` and returns ``pass`` with ``expired_ask_id``);

and reports its peak RSS. Each figure is divided by the same figure at the first level,
so "flat" is a ratio near 1.0. Time is a :class:`ManualClock`: nobody waits for a TTL.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from bench.common import StoreTarget, current_rss_kib, peak_rss_kib, percentile, ratio, store_target

BASE = datetime(2026, 12, 2, 8, 0, tzinfo=UTC)
TTL = timedelta(hours=6)
OPTIONS = ("Sequence diagram", "Class diagram", "Activity diagram")
PROMPT = "Which UML diagram should I draw?"


def conversation_id(i: int) -> str:
    """The id of the ``i``-th bulk-loaded conversation."""
    return f"s{i:07d}"


def bulk_load(target: StoreTarget, start: int, stop: int, batch: int) -> float:
    """Park asks for conversations ``start..stop-1`` in batches; return rows per second."""
    from parkgate.core.model import Ask
    from parkgate.core.phrases import AskKind, AskStatus
    from parkgate.store.base import Run
    from parkgate.store.sql import SqlTransaction

    store = target.open()
    began = time.perf_counter()
    try:
        for low in range(start, stop, batch):
            high = min(stop, low + batch)
            if target.engine == "postgres":
                from parkgate.store.postgres import DIALECT

                # The store's pool connection and its SqlTransaction, pipelined: the same
                # INSERT statements, without one network round trip each.
                with store._pool.connection() as conn, conn.pipeline(), conn.transaction(), conn.cursor() as cur:
                    _load_batch(SqlTransaction(cur, DIALECT), low, high, Ask, AskKind, AskStatus, Run)
            else:
                with store.transaction() as tx:
                    _load_batch(tx, low, high, Ask, AskKind, AskStatus, Run)
    finally:
        store.close()
    return ratio(2 * (stop - start), time.perf_counter() - began)


def _load_batch(tx: Any, low: int, high: int, ask_cls: Any, kinds: Any, statuses: Any, run_cls: Any) -> None:
    for i in range(low, high):
        moment = BASE + timedelta(microseconds=i)  # distinct, increasing: "oldest first" is well defined
        run_id = uuid.uuid4().hex
        conversation = conversation_id(i)
        ask_id = uuid.uuid4().hex
        tx.save_run(run_cls(run_id, conversation, None, "running", None, {}, ask_id, moment, moment))
        tx.insert_ask(
            ask_cls(
                id=ask_id,
                conversation_id=conversation,
                run_id=run_id,
                kind=kinds.CHOICE,
                prompt=PROMPT,
                options=OPTIONS,
                status=statuses.OPEN,
                asked_at=moment,
                last_touched=moment,
                ttl_seconds=TTL.total_seconds(),
            )
        )


def probe(target: StoreTarget, level: int, samples: int, seed: int) -> dict[str, Any]:
    """In this (fresh) process: time the audit, a message and an expiry read; peak RSS."""
    from parkgate import Gateway, ManualClock, ReplyKind, ask_to_dict

    rss_start = current_rss_kib()
    rng = random.Random(seed)
    live = ManualClock(BASE + timedelta(hours=1))
    late = ManualClock(BASE + TTL + timedelta(hours=2))  # past the TTL of re-parked asks too
    store = target.open()
    gateway = Gateway(store=store, clock=live, ttl=TTL)
    expirer = Gateway(store=store, clock=late, ttl=TTL)
    clock = time.perf_counter_ns
    try:
        audit_ns = []
        for _ in range(max(5, samples // 10)):
            began = clock()
            found = gateway.open_asks(limit=100)
            rows = [ask_to_dict(ask, live.now()) for ask in found]
            audit_ns.append(clock() - began)
        if len(rows) != min(100, level) or rows[0]["hours_open"] < 0.99:
            raise RuntimeError(f"the audit returned {len(rows)} rows, first {rows[:1]}")
        picks = rng.sample(range(level), min(level, 2 * samples))
        handle_ns = []
        for i in picks[:samples]:
            began = clock()
            reply = gateway.handle(conversation_id(i), "not sure yet")
            handle_ns.append(clock() - began)
            if reply.kind not in (ReplyKind.RETRY, ReplyKind.ESCALATED):
                raise RuntimeError(f"handle on a parked conversation replied {reply.kind}")
        expiry_ns = []
        for i in picks[samples:]:
            began = clock()
            reply = expirer.handle(conversation_id(i), "hello?")
            expiry_ns.append(clock() - began)
            if reply.kind is not ReplyKind.PASS or not reply.expired_ask_id:
                raise RuntimeError(f"an expiry read replied {reply.kind} without expired_ask_id")
            gateway.ask(conversation_id(i), PROMPT, OPTIONS)  # untimed: keep every conversation parked
        plans = query_plans(target, store)
    finally:
        gateway.close()
    return {
        "level": level,
        "audit_oldest_100_ms": percentile(audit_ns, 0.5) / 1e6,
        "handle_p50_ms": percentile(handle_ns, 0.5) / 1e6,
        "handle_p99_ms": percentile(handle_ns, 0.99) / 1e6,
        "expiry_read_p50_ms": percentile(expiry_ns, 0.5) / 1e6,
        "expiry_read_p99_ms": percentile(expiry_ns, 0.99) / 1e6,
        "samples": len(handle_ns),
        "rss_after_imports_kib": rss_start,
        "peak_rss_kib": peak_rss_kib(),
        "query_plans": plans,
    }


def query_plans(target: StoreTarget, store: Any) -> dict[str, str]:
    """The plans of the per-message read and the audit read (to show the indexes in use)."""
    from parkgate.store.sql import ASK_COLUMNS

    reads = {
        "open_ask_by_conversation": (
            f"SELECT {ASK_COLUMNS} FROM asks WHERE conversation_id = ? AND status = 'open'",
            (conversation_id(0),),
        ),
        "audit_oldest_100": (
            f"SELECT {ASK_COLUMNS} FROM asks WHERE status = 'open' ORDER BY asked_at, id LIMIT ?",
            (100,),
        ),
    }
    plans = {}
    if target.engine == "sqlite":
        conn = store._connection()
        for name, (statement, params) in reads.items():
            rows = conn.execute("EXPLAIN QUERY PLAN " + statement, params).fetchall()
            plans[name] = "; ".join(str(row[-1]) for row in rows)
    else:
        with store._pool.connection() as conn:
            for name, (statement, params) in reads.items():
                rows = conn.execute("EXPLAIN " + statement.replace("?", "%s"), params).fetchall()
                plans[name] = "; ".join(str(row[0]).strip() for row in rows)
    return plans


def _probe_in_subprocess(target: StoreTarget, level: int, samples: int, seed: int) -> dict[str, Any]:
    command = [
        sys.executable, "-m", "bench.scale", "probe",
        "--engine", target.engine, "--url", target.url, "--schema", target.schema or "",
        "--level", str(level), "--samples", str(samples), "--seed", str(seed),
    ]
    root = Path(__file__).resolve().parent.parent
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(root), os.environ.get("PYTHONPATH")]))}
    done = subprocess.run(command, capture_output=True, text=True, timeout=3600, check=False, cwd=root, env=env)
    if done.returncode != 0:
        raise RuntimeError(f"the probe failed ({done.returncode}): {done.stderr[-2000:]}")
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def run_engine(target: StoreTarget, levels: tuple[int, ...], batch: int, samples: int,
               log: Callable[[str], None] = print) -> dict[str, Any]:
    """Load level by level, probe each, and express every figure relative to the first level."""
    loaded = 0
    probes = []
    load_rates = []
    for number, level in enumerate(levels):
        log(f"  scale: {target.engine}, loading {loaded:,} -> {level:,} parked conversations ...")
        load_rates.append(bulk_load(target, loaded, level, batch))
        loaded = level
        result = _probe_in_subprocess(target, level, samples, seed=number)
        probes.append(result)
        log(
            f"    audit {result['audit_oldest_100_ms']:.2f} ms, handle p50 {result['handle_p50_ms']:.2f} ms, "
            f"expiry p50 {result['expiry_read_p50_ms']:.2f} ms, peak RSS {result['peak_rss_kib'] / 1024:.0f} MiB"
        )
    first = probes[0]
    for result in probes:
        result["growth"] = {
            key: ratio(result[key], first[key])
            for key in ("audit_oldest_100_ms", "handle_p50_ms", "expiry_read_p50_ms", "peak_rss_kib")
        }
    return {"store": target.engine, "levels": list(levels), "load_rows_per_s": load_rates, "probes": probes}


def run(scale: Any, work: Path, pg_url: str | None, log: Callable[[str], None] = print,
        engines_wanted: tuple[str, ...] = ("sqlite", "postgres")) -> dict[str, Any]:
    """Benchmark 3 on SQLite and (when ``pg_url``) PostgreSQL."""
    engines = [e for e in ("sqlite", "postgres") if e in engines_wanted and (e == "sqlite" or pg_url)]
    results = []
    for engine in engines:
        with store_target(engine, work, pg_url or "", "scale") as target:
            results.append(run_engine(target, scale.scale_levels, scale.scale_batch, scale.scale_samples, log))
    return {"engines": results}


def main(argv: list[str] | None = None) -> None:
    """``python -m bench.scale probe ...``: the measuring process (prints one JSON line)."""
    parser = argparse.ArgumentParser(prog="python -m bench.scale")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("probe")
    p.add_argument("--engine", required=True, choices=["sqlite", "postgres"])
    p.add_argument("--url", required=True)
    p.add_argument("--schema", default="")
    p.add_argument("--level", type=int, required=True)
    p.add_argument("--samples", type=int, default=200)
    p.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    target = StoreTarget(args.engine, args.url, args.schema or None)
    print(json.dumps(probe(target, args.level, args.samples, args.seed)))


if __name__ == "__main__":
    main()
