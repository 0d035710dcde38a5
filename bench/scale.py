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
so "flat" is a ratio near 1.0. Because the levels are measured minutes apart, each probe
also measures a small reference store (1,000 parked conversations) interleaved with the
big one, and ``*_vs_reference`` growth divides that drift out. Time is a
:class:`ManualClock`: nobody waits for a TTL.
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
    from parkgate.core.kinds import AskKind, AskStatus
    from parkgate.core.model import Ask, Run

    store = target.open()
    began = time.perf_counter()
    try:
        for low in range(start, stop, batch):
            high = min(stop, low + batch)
            if target.engine == "postgres":
                from parkgate.store.pg_transaction import PostgresTransaction

                # The store's pool connection and its PostgresTransaction (remembering nothing), pipelined: the same
                # INSERT statements, without one network round trip each.
                with store._pool.connection() as conn, conn.pipeline(), conn.transaction(), conn.cursor() as cur:
                    _load_batch(PostgresTransaction(cur), low, high, Ask, AskKind, AskStatus, Run)
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


REFERENCE_LEVEL = 1_000  # the small store every probe also measures, interleaved, as its baseline


class _Side:
    """One store as a probe measures it: a live gateway, an expiring one, its samples."""

    def __init__(self, target: StoreTarget, level: int) -> None:
        from parkgate import Gateway, ManualClock

        self.level = level
        self.live = ManualClock(BASE + timedelta(hours=1))
        late = ManualClock(BASE + TTL + timedelta(hours=2))  # past the TTL of re-parked asks too
        self.store = target.open()
        self.gateway = Gateway(store=self.store, clock=self.live, ttl=TTL)
        self.expirer = Gateway(store=self.store, clock=late, ttl=TTL)
        self.audit_ns: list[int] = []
        self.handle_ns: list[int] = []
        self.expiry_ns: list[int] = []

    def audit(self) -> None:
        from parkgate import ask_to_dict

        began = time.perf_counter_ns()
        rows = [ask_to_dict(ask, self.live.now()) for ask in self.gateway.open_asks(limit=100)]
        self.audit_ns.append(time.perf_counter_ns() - began)
        if len(rows) != min(100, self.level) or rows[0]["hours_open"] < 0:
            raise RuntimeError(f"the audit returned {len(rows)} rows, first {rows[:1]}")

    def handle(self, i: int) -> None:
        from parkgate import ReplyKind

        began = time.perf_counter_ns()
        reply = self.gateway.handle(conversation_id(i), "not sure yet")
        self.handle_ns.append(time.perf_counter_ns() - began)
        if reply.kind not in (ReplyKind.RETRY, ReplyKind.ESCALATED):
            raise RuntimeError(f"handle on a parked conversation replied {reply.kind}")

    def expire(self, i: int) -> None:
        from parkgate import ReplyKind

        began = time.perf_counter_ns()
        reply = self.expirer.handle(conversation_id(i), "hello?")
        self.expiry_ns.append(time.perf_counter_ns() - began)
        if reply.kind is not ReplyKind.PASS or not reply.expired_ask_id:
            raise RuntimeError(f"an expiry read replied {reply.kind} without expired_ask_id")
        self.gateway.ask(conversation_id(i), PROMPT, OPTIONS)  # untimed: keep every conversation parked

    def figures(self) -> dict[str, float]:
        return {
            "audit_oldest_100_ms": percentile(self.audit_ns, 0.5) / 1e6,
            "handle_p50_ms": percentile(self.handle_ns, 0.5) / 1e6,
            "handle_p99_ms": percentile(self.handle_ns, 0.99) / 1e6,
            "expiry_read_p50_ms": percentile(self.expiry_ns, 0.5) / 1e6,
            "expiry_read_p99_ms": percentile(self.expiry_ns, 0.99) / 1e6,
        }

    def close(self) -> None:
        self.gateway.close()


def probe(
    target: StoreTarget, level: int, samples: int, seed: int, reference: StoreTarget | None = None
) -> dict[str, Any]:
    """In this (fresh) process: time the audit, a message and an expiry read; peak RSS.

    With a ``reference`` store (``REFERENCE_LEVEL`` parked conversations), every sample
    on the big store is followed by the same sample on the reference, so a machine that
    gets busier between two levels slows both and the ``*_vs_reference`` figures hold.
    """
    rss_start = current_rss_kib()
    rng = random.Random(seed)
    big = _Side(target, level)
    ref = _Side(reference, REFERENCE_LEVEL) if reference is not None else None
    try:
        sides = [big] + ([ref] if ref else [])
        for _ in range(max(5, samples // 10)):
            for side in sides:
                side.audit()
        picks = rng.sample(range(level), min(level, 2 * samples))
        ref_picks = rng.sample(range(REFERENCE_LEVEL), min(REFERENCE_LEVEL, 2 * samples))
        for n, i in enumerate(picks[:samples]):
            big.handle(i)
            if ref and n < len(ref_picks) // 2:
                ref.handle(ref_picks[n])
        for n, i in enumerate(picks[samples:]):
            big.expire(i)
            if ref and len(ref_picks) // 2 + n < len(ref_picks):
                ref.expire(ref_picks[len(ref_picks) // 2 + n])
        plans = query_plans(target, big.store)
    finally:
        big.close()
        if ref:
            ref.close()
    result: dict[str, Any] = {"level": level, **big.figures(), "samples": len(big.handle_ns)}
    if ref:
        reference_figures = ref.figures()
        result["reference"] = reference_figures
        for key in ("audit_oldest_100_ms", "handle_p50_ms", "expiry_read_p50_ms"):
            result[f"{key}_vs_reference"] = ratio(result[key], reference_figures[key])
    result.update({"rss_after_imports_kib": rss_start, "peak_rss_kib": peak_rss_kib(), "query_plans": plans})
    return result


def query_plans(target: StoreTarget, store: Any) -> dict[str, str]:
    """The plans of the per-message read and the audit read (to show the indexes in use)."""
    from parkgate.store.ask_rows import ASK_COLUMNS

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


def _probe_in_subprocess(
    target: StoreTarget, level: int, samples: int, seed: int, reference: StoreTarget | None
) -> dict[str, Any]:
    command = [
        sys.executable,
        "-m",
        "bench.scale",
        "probe",
        "--engine",
        target.engine,
        "--url",
        target.url,
        "--schema",
        target.schema or "",
        "--level",
        str(level),
        "--samples",
        str(samples),
        "--seed",
        str(seed),
    ]
    if reference is not None:
        command += ["--ref-url", reference.url, "--ref-schema", reference.schema or ""]
    root = Path(__file__).resolve().parent.parent
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(root), os.environ.get("PYTHONPATH")]))}
    done = subprocess.run(command, capture_output=True, text=True, timeout=3600, check=False, cwd=root, env=env)
    if done.returncode != 0:
        raise RuntimeError(f"the probe failed ({done.returncode}): {done.stderr[-2000:]}")
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def run_engine(
    target: StoreTarget,
    levels: tuple[int, ...],
    batch: int,
    samples: int,
    log: Callable[[str], None] = print,
    reference: StoreTarget | None = None,
) -> dict[str, Any]:
    """Load level by level, probe each, and express every figure relative to the first level.

    ``reference`` (optional) is loaded with ``REFERENCE_LEVEL`` conversations first and
    measured by every probe beside the big store (see :func:`probe`).
    """
    if reference is not None:
        bulk_load(reference, 0, REFERENCE_LEVEL, batch)
    loaded = 0
    probes = []
    load_rates = []
    for number, level in enumerate(levels):
        log(f"  scale: {target.engine}, loading {loaded:,} -> {level:,} parked conversations ...")
        load_rates.append(bulk_load(target, loaded, level, batch))
        loaded = level
        result = _probe_in_subprocess(target, level, samples, number, reference)
        probes.append(result)
        log(
            f"    audit {result['audit_oldest_100_ms']:.2f} ms, handle p50 {result['handle_p50_ms']:.2f} ms, "
            f"expiry p50 {result['expiry_read_p50_ms']:.2f} ms, peak RSS {result['peak_rss_kib'] / 1024:.0f} MiB"
        )
    first = probes[0]
    keys = ["audit_oldest_100_ms", "handle_p50_ms", "expiry_read_p50_ms", "peak_rss_kib"]
    if reference is not None:
        keys += [f"{key}_vs_reference" for key in keys[:3]]
    for result in probes:
        result["growth"] = {key: ratio(result[key], first[key]) for key in keys}
    return {"store": target.engine, "levels": list(levels), "load_rows_per_s": load_rates, "probes": probes}


def run(
    scale: Any,
    work: Path,
    pg_url: str | None,
    log: Callable[[str], None] = print,
    engines_wanted: tuple[str, ...] = ("sqlite", "postgres"),
) -> dict[str, Any]:
    """Benchmark 3 on SQLite and (when ``pg_url``) PostgreSQL."""
    engines = [e for e in ("sqlite", "postgres") if e in engines_wanted and (e == "sqlite" or pg_url)]
    results = []
    for engine in engines:
        with (
            store_target(engine, work, pg_url or "", "scale") as target,
            store_target(engine, work, pg_url or "", "scale-ref") as reference,
        ):
            results.append(
                run_engine(target, scale.scale_levels, scale.scale_batch, scale.scale_samples, log, reference)
            )
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
    p.add_argument("--ref-url", default="")
    p.add_argument("--ref-schema", default="")
    args = parser.parse_args(argv)
    target = StoreTarget(args.engine, args.url, args.schema or None)
    reference = StoreTarget(args.engine, args.ref_url, args.ref_schema or None) if args.ref_url else None
    print(json.dumps(probe(target, args.level, args.samples, args.seed, reference)))


if __name__ == "__main__":
    main()
