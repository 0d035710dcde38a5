"""Benchmark 1: the reply path against the store's own limit.

A realistic mix goes through :meth:`Gateway.ask` / :meth:`Gateway.handle`: each
conversation parks an ask, bounces twice, asks for the ``menu`` and then selects (85%),
or cancels instead (5%), or is a free-text ask answered after two empty replies (10%).
Every inbound message carries a ``message_id`` (the idempotent path a chat surface or
the HTTP API uses). Each call is one store transaction.

The baseline, measured in the same run on the same database file / schema, with the
same connection (same PRAGMAs, same pool settings), is the raw single-row loop
``UPDATE asks SET ... WHERE id = ?; COMMIT``. Both sides run in alternating rounds so
drift on a shared machine hits both. Reported: throughput, p50/p99 and
``gateway/raw`` throughput ratios, for 1 worker, 4 threads (one shared gateway) and
4 processes (a gateway each).
"""

from __future__ import annotations

import multiprocessing
import random
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.common import StoreTarget, latency_summary, ratio, store_target, until_wal_settles, workdir

OPTIONS = ("Sequence diagram", "Class diagram", "Activity diagram")
CHOICE_PROMPT = "Which UML diagram should I draw?"
TEXT_PROMPT = "Describe the diagram in a sentence or two."
CHUNK = 50  # conversations interleaved at a time
RAW_TARGETS_PER_WORKER = 1000
GOAL = 0.5

#: The expected reply kinds of each flavour, in order (ask first).
EXPECTED = {
    "choice": ("asked", "retry", "retry", "reshown", "selected"),
    "cancel": ("asked", "retry", "retry", "reshown", "cancelled"),
    "text": ("asked", "retry", "retry", "reshown", "answered"),
}
INPUTS = {
    "choice": ("what do you mean?", "the second one I guess", "menu", "2"),
    "cancel": ("what do you mean?", "the second one I guess", "menu", "cancel"),
    "text": ("", "   ", "/menu", "Alice logs in; the server checks her token and answers."),
}
MODES = ("single", "threads", "processes")
#: What the mix's asks carry besides the question. ``plain`` asks keep no due time;
#: ``watched`` ones do (every miss moves it, through migration 5's trigger); ``callback``
#: ones do too, and each close also queues a callback in the outbox (nothing sends it here:
#: the URL is never called).
ASK_VARIANTS: dict[str, dict[str, Any]] = {
    "plain": {},
    "watched": {"watched": True},
    "callback": {"callback_url": "http://127.0.0.1:9/parkgate-bench-never-called"},
}
#: SQLite durabilities measured: the store's default (``full``) and the faster ``normal``.
SQLITE_SYNC = ("full", "normal")


def flavour_of(conversation_index: int, seed: int = 7) -> str:
    """Which script a conversation follows: 5% cancel, 10% text, 85% choice."""
    draw = random.Random(seed * 1_000_003 + conversation_index).random()
    if draw < 0.05:
        return "cancel"
    if draw < 0.15:
        return "text"
    return "choice"


#: Raw UPDATEs per warm-up batch while a SQLite WAL grows (one WAL frame each): the
#: default of :attr:`Plan.warm_up_writes` (a scale's ``warm_up_writes``).
WARM_UP_WRITES = 500


@dataclass(frozen=True)
class Plan:
    """One worker's share: its conversations (per round) and the rows its raw loop updates."""

    worker: int
    rounds: tuple[tuple[int, ...], ...]
    raw_ids: tuple[str, ...]
    message_ids: bool = True
    variant: str = "plain"
    #: Raw UPDATEs per batch of the SQLite WAL's warm-up (:func:`_warm_up`).
    warm_up_writes: int = WARM_UP_WRITES


def _raw_loop(target: StoreTarget, store: Any) -> Callable[[Sequence[str], list[int]], None]:
    """The baseline: one single-row UPDATE that commits itself, on the store's connection.

    The cheapest durable write either store can do: one statement (SQLite, in autocommit
    mode) or one round trip (PostgreSQL: the pool's connections are in autocommit, so
    the UPDATE and its COMMIT travel and run as one), under the store's own settings.
    """
    if target.engine == "sqlite":
        from parkgate.store.sqlite import DIALECT

        conn = store._connection()  # the store's own connection: the same PRAGMAs
        statement = "UPDATE asks SET last_touched = ?, mismatches = mismatches + 1 WHERE id = ?"
        encode = DIALECT.encode_time

        def sqlite_loop(ids: Sequence[str], out: list[int]) -> None:
            clock = time.perf_counter_ns
            for ask_id in ids:
                started = clock()
                conn.execute(statement, (encode(datetime.now(UTC)), ask_id))  # autocommit: UPDATE; COMMIT
                out.append(clock() - started)

        return sqlite_loop

    pg_statement = "UPDATE asks SET last_touched = %s, mismatches = mismatches + 1 WHERE id = %s"

    def pg_loop(ids: Sequence[str], out: list[int]) -> None:
        clock = time.perf_counter_ns
        # One connection from the store's own pool (same configure hook, same settings).
        with store._pool.connection() as conn:
            assert conn.autocommit  # so each UPDATE is its own committed transaction
            cur = conn.cursor()
            for ask_id in ids:
                started = clock()
                cur.execute(pg_statement, (datetime.now(UTC), ask_id))
                out.append(clock() - started)

    return pg_loop


#: One gateway call of the mix: (conversation, step, text or None for the ask, message_id, flavour).
Call = tuple[str, int, str | None, str | None, str]


def script(indices: Sequence[int], message_ids: bool = True) -> list[Call]:
    """The mix for ``indices``, interleaved ``CHUNK`` conversations at a time, in call order.

    Built before a round is timed, as the raw loop's row ids are: the measured loop then
    does what a surface does per message (one call, its reply checked), no bookkeeping
    of the script itself.
    """
    calls: list[Call] = []
    for start in range(0, len(indices), CHUNK):
        chunk = indices[start : start + CHUNK]
        flavours = {i: flavour_of(i) for i in chunk}
        for step in range(5):
            for i in chunk:
                flavour = flavours[i]
                text = None if step == 0 else INPUTS[flavour][step - 1]
                message_id = f"m{i}-{step}" if message_ids and step else None
                calls.append((f"c{i}", step, text, message_id, flavour))
    return calls


def _gateway_ops(
    gateway: Any,
    calls: Sequence[Call],
    handle_ns: list[int],
    ask_ns: list[int],
    kinds: Counter[str],
    wrong: list[str],
    variant: str = "plain",
) -> int:
    """Run ``calls`` (see :func:`script`) through ``gateway``; return how many ran.

    ``variant`` names what every ask carries (:data:`ASK_VARIANTS`).
    """
    clock = time.perf_counter_ns
    extra = ASK_VARIANTS[variant]
    for conversation, step, text, message_id, flavour in calls:
        began = clock()
        if text is None:
            if flavour == "text":
                reply = gateway.ask(conversation, TEXT_PROMPT, kind="text", **extra)
            else:
                reply = gateway.ask(conversation, CHOICE_PROMPT, OPTIONS, **extra)
            ask_ns.append(clock() - began)
        else:
            reply = gateway.handle(conversation, text, message_id)
            handle_ns.append(clock() - began)
        kind = reply.kind.value
        kinds[kind] += 1
        if kind != EXPECTED[flavour][step] and len(wrong) < 10:
            wrong.append(f"{conversation} step {step}: {kind}, expected {EXPECTED[flavour][step]}")
    return len(calls)


def checked_ops(gateway: Any, calls: Sequence[Call], variant: str = "plain") -> None:
    """Run ``calls`` untimed (the profiler's and the instruction counter's mix); a wrong kind raises.

    ``variant`` names what every ask carries (:data:`ASK_VARIANTS`).
    """
    wrong: list[str] = []
    _gateway_ops(gateway, calls, [], [], Counter(), wrong, variant)
    if wrong:
        raise SystemExit(f"unexpected reply kinds: {wrong}")


@contextmanager
def fresh_gateway(engine: str, pg_url: str, label: str, synchronous: str = "full") -> Iterator[tuple[StoreTarget, Any]]:
    """A gateway on a new, empty store (its target too), closed and removed afterwards."""
    from parkgate import Gateway

    with workdir() as work, store_target(engine, work, pg_url, label, synchronous=synchronous) as target:
        gateway = Gateway(store=target.open())
        try:
            yield target, gateway
        finally:
            gateway.close()


def _warm_up(target: StoreTarget, gateway: Any, raw: Callable[[Sequence[str], list[int]], None], plan: Plan) -> None:
    """Open connections, fill caches, let PostgreSQL prepare its statements, grow SQLite's WAL.

    The WAL is grown to the size it is reused at with the raw UPDATE (one frame each):
    otherwise whichever side runs first pays the growing file's dearer syncs.
    """
    conversation = f"warm-{plan.worker}-{time.perf_counter_ns()}"
    for n in range(3):
        gateway.ask(f"{conversation}-{n}", CHOICE_PROMPT, OPTIONS)
        for text in ("huh", "menu", "1"):
            gateway.handle(f"{conversation}-{n}", text)
    raw(plan.raw_ids[:10], [])
    if target.engine == "sqlite":
        from parkgate.store.sqlite_file import path_from_url

        batch = cycled(plan.raw_ids, plan.warm_up_writes)
        until_wal_settles(lambda _: raw(batch, []), path_from_url(target.url))


def run_worker(target: StoreTarget, plan: Plan, barrier: Any, gateway: Any | None = None) -> dict[str, Any]:
    """One worker: rounds of (raw loop, gateway mix), each phase started on ``barrier``."""
    from parkgate import Gateway

    own = gateway is None
    store = target.open() if own else gateway.store
    gw = Gateway(store=store) if own else gateway
    raw = _raw_loop(target, store)
    _warm_up(target, gw, raw, plan)
    phases: list[dict[str, Any]] = []
    raw_ns: list[int] = []
    handle_ns: list[int] = []
    ask_ns: list[int] = []
    kinds: Counter[str] = Counter()
    wrong: list[str] = []
    try:
        for number, indices in enumerate(plan.rounds):
            ops = len(indices) * 5
            picker = random.Random(plan.worker * 7919 + number)
            ids = [picker.choice(plan.raw_ids) for _ in range(ops)]  # a random row each time
            barrier.wait()
            t0 = time.perf_counter()
            raw(ids, raw_ns)
            t1 = time.perf_counter()
            phases.append({"round": number, "side": "raw", "start": t0, "end": t1, "ops": ops})
            calls_of_round = script(indices, plan.message_ids)
            barrier.wait()
            t2 = time.perf_counter()
            calls = _gateway_ops(gw, calls_of_round, handle_ns, ask_ns, kinds, wrong, plan.variant)
            t3 = time.perf_counter()
            phases.append({"round": number, "side": "gateway", "start": t2, "end": t3, "ops": calls})
    finally:
        if own:
            gw.close()
    return {
        "worker": plan.worker,
        "phases": phases,
        "raw_ns": raw_ns,
        "handle_ns": handle_ns,
        "ask_ns": ask_ns,
        "kinds": dict(kinds),
        "wrong": wrong,
    }


def _process_main(target: StoreTarget, plan: Plan, barrier: Any, queue: Any) -> None:
    try:
        queue.put(run_worker(target, plan, barrier))
    except BaseException as error:
        barrier.abort()
        queue.put({"worker": plan.worker, "error": repr(error)})
        raise


def _plans(
    conversations: int,
    rounds: int,
    workers: int,
    raw_ids: Sequence[Sequence[str]],
    variant: str = "plain",
    warm_up_writes: int = WARM_UP_WRITES,
) -> list[Plan]:
    plans = []
    for w in range(workers):
        mine = list(range(w, conversations, workers))
        per_round = tuple(tuple(mine[r::rounds]) for r in range(rounds))
        plans.append(Plan(w, per_round, tuple(raw_ids[w]), variant=variant, warm_up_writes=warm_up_writes))
    return plans


def cycled(ids: Sequence[str], count: int) -> list[str]:
    """``count`` row ids taken from ``ids`` in turn: the raw side's rows for ``count`` writes."""
    return [ids[i % len(ids)] for i in range(count)]


def warmed_raw_loop(
    target: StoreTarget, gateway: Any, warm_up: int
) -> tuple[Callable[[Sequence[str], list[int]], None], list[str]]:
    """The raw loop on ``gateway``'s store and its target rows, parked and ``warm_up`` of them
    updated once (the tools that run one side at a time: instructions, cpu_split)."""
    ids = _park_raw_targets(gateway, 1)[0]
    raw = _raw_loop(target, gateway.store)
    raw(ids[:warm_up], [])
    return raw, ids


def _park_raw_targets(gateway: Any, workers: int) -> list[list[str]]:
    """Rows for the raw loop: open asks inserted through the store (one transaction), spread
    over the table like the conversations the gateway touches."""
    import uuid
    from datetime import timedelta

    from parkgate.core.kinds import AskKind, AskStatus
    from parkgate.core.model import Ask, Run

    now = datetime.now(UTC)
    ids: list[list[str]] = []
    with gateway.store.transaction() as tx:
        for w in range(workers):
            mine = []
            for j in range(RAW_TARGETS_PER_WORKER):
                run_id, ask_id, moment = uuid.uuid4().hex, uuid.uuid4().hex, now + timedelta(microseconds=j)
                tx.save_run(Run(run_id, f"raw-{w}-{j}", None, "running", None, {}, ask_id, moment, moment))
                tx.insert_ask(
                    Ask(
                        ask_id,
                        f"raw-{w}-{j}",
                        run_id,
                        AskKind.CHOICE,
                        CHOICE_PROMPT,
                        OPTIONS,
                        AskStatus.OPEN,
                        moment,
                        moment,
                        6 * 3600.0,
                    )
                )
                mine.append(ask_id)
            ids.append(mine)
    return ids


def run_cell(
    target: StoreTarget,
    mode: str,
    conversations: int,
    rounds: int,
    workers: int,
    variant: str = "plain",
    warm_up_writes: int = WARM_UP_WRITES,
) -> dict[str, Any]:
    """Measure one (store, concurrency) cell; return throughputs, latencies and the ratio.

    ``variant`` names what the mix's asks carry (:data:`ASK_VARIANTS`); the raw side is
    the same in every variant. ``warm_up_writes`` sizes each batch of a SQLite WAL's
    warm-up (:attr:`Plan.warm_up_writes`).
    """
    from parkgate import Gateway

    if variant not in ASK_VARIANTS:
        raise ValueError(f"variant must be one of {', '.join(ASK_VARIANTS)}, not {variant!r}")
    n = 1 if mode == "single" else workers
    gateway = Gateway(store=target.open())
    try:
        raw_ids = _park_raw_targets(gateway, n)
        plans = _plans(conversations, rounds, n, raw_ids, variant, warm_up_writes)
        if mode == "processes":
            ctx = multiprocessing.get_context("spawn")
            barrier: Any = ctx.Barrier(n, timeout=600)
            queue = ctx.Queue()
            procs = [ctx.Process(target=_process_main, args=(target, plan, barrier, queue)) for plan in plans]
            for proc in procs:
                proc.start()
            results = [queue.get(timeout=1800) for _ in procs]
            for proc in procs:
                proc.join(timeout=60)
        else:
            barrier = threading.Barrier(n, timeout=600)
            results = [{} for _ in plans]
            errors: list[BaseException] = []

            def thread_main(index: int) -> None:
                try:
                    results[index] = run_worker(target, plans[index], barrier, gateway)
                except BaseException as error:  # surfaced below
                    errors.append(error)
                    barrier.abort()

            threads = [threading.Thread(target=thread_main, args=(i,)) for i in range(n)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            if errors:
                raise errors[0]
    finally:
        gateway.close()
    failed = [r["error"] for r in results if "error" in r]
    if failed:
        raise RuntimeError(f"a worker failed: {failed[0]}")
    return {**summarise(results, mode, n, target.label), "variant": variant}


def summarise(results: list[dict[str, Any]], mode: str, workers: int, engine: str) -> dict[str, Any]:
    """Throughput per side (ops over the wall time of each round), latencies, ratios."""
    totals = {"raw": [0, 0.0], "gateway": [0, 0.0]}
    rounds = {p["round"] for r in results for p in r["phases"]}
    per_round: list[float] = []
    for number in sorted(rounds):
        rates = {}
        for side in ("raw", "gateway"):
            phases = [p for r in results for p in r["phases"] if p["round"] == number and p["side"] == side]
            ops = sum(p["ops"] for p in phases)
            wall = max(p["end"] for p in phases) - min(p["start"] for p in phases)
            totals[side][0] += ops
            totals[side][1] += wall
            rates[side] = ratio(ops, wall)
        per_round.append(ratio(rates["gateway"], rates["raw"]))
    raw_rate = ratio(totals["raw"][0], totals["raw"][1])
    gw_rate = ratio(totals["gateway"][0], totals["gateway"][1])
    kinds: Counter[str] = Counter()
    for r in results:
        kinds.update(r["kinds"])
    handle_ns = [v for r in results for v in r["handle_ns"]]
    raw_ns = [v for r in results for v in r["raw_ns"]]
    ask_ns = [v for r in results for v in r["ask_ns"]]
    return {
        "store": engine,
        "mode": mode,
        "workers": workers,
        "label": "1 process" if mode == "single" else f"{workers} {mode}",
        "raw_ops_per_s": raw_rate,
        "gateway_ops_per_s": gw_rate,
        "ratio": ratio(gw_rate, raw_rate),
        "ratio_per_round": per_round,
        "goal": GOAL,
        "raw_latency": latency_summary(raw_ns),
        "handle_latency": latency_summary(handle_ns),
        "ask_latency": latency_summary(ask_ns),
        "p50_ratio": ratio(latency_summary(raw_ns)["p50_ms"], latency_summary(handle_ns)["p50_ms"]),
        "kinds": dict(kinds),
        "unexpected": [w for r in results for w in r["wrong"]][:10],
    }


def run(
    scale: Any,
    work: Path,
    pg_url: str | None,
    log: Callable[[str], None] = print,
    modes: Sequence[str] = MODES,
    sqlite_sync: Sequence[str] = SQLITE_SYNC,
) -> dict[str, Any]:
    """All cells: SQLite (each durability in ``sqlite_sync``) and (when ``pg_url``) PostgreSQL, each in every mode."""
    engines = [("sqlite", sync) for sync in sqlite_sync] + ([("postgres", "full")] if pg_url else [])
    cells = []
    for engine, sync in engines:
        for mode in modes:
            with store_target(engine, work, pg_url or "", "reply", synchronous=sync) as target:
                log(f"  reply path: {target.label}, {mode}, {scale.reply_conversations} conversations ...")
                cell = run_cell(
                    target,
                    mode,
                    scale.reply_conversations,
                    scale.reply_rounds,
                    scale.workers,
                    warm_up_writes=scale.warm_up_writes,
                )
                log(
                    f"    gateway {cell['gateway_ops_per_s']:.0f} ops/s, raw {cell['raw_ops_per_s']:.0f} ops/s, "
                    f"ratio {cell['ratio']:.2f}"
                )
                cells.append(cell)
    return {
        "conversations": scale.reply_conversations,
        "mix": "park, 2 bounces, menu, select (85%) | cancel (5%) | text ask (10%); message_id on every message",
        "cells": cells,
    }
