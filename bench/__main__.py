"""``python -m bench``: run the benchmarks, print a table, write ``bench/results/latest.json``.

``python -m bench --hot`` runs the set that covers the hot paths (benchmark 1's mix on SQLite
and PostgreSQL, benchmark 4 through HTTP, benchmark 5 the waiting side) at ``small``
scale; ``python -m bench.compare BEFORE.json AFTER.json`` sets two such runs side by side.

Options: ``--scale smoke|small|full`` (default ``small``; ``full`` is the README's run:
10,000 conversations, 1,000,000 parked asks), ``--only reply,langgraph,scale,http,waiting``,
``--conversations N`` (override benchmark 1's count), ``--modes single,threads,processes``,
``--scale-levels 10000,100000``, ``--scale-engines sqlite``, ``--workers 1,2,4,8`` (benchmark 4's
worker table), ``--no-postgres``, ``--out PATH``.
PostgreSQL comes from ``PARKGATE_BENCH_POSTGRES_URL`` (default the local server); each
benchmark works in a schema of its own and drops it afterwards.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from pathlib import Path
from typing import Any

from bench import wrk
from bench.common import RESULTS_DIR, SCALES, machine_info, postgres_reachable, postgres_url, to_jsonable, workdir
from bench.http_floor import DEFAULT_WORKERS, render_floor
from bench.http_servers import ENGINES
from bench.http_workers import render_workers

BENCHMARKS = ("reply", "langgraph", "scale", "http", "waiting")
#: The benchmarks ``--hot`` runs: every path a message, a wake-up or a callback takes.
HOT_PATHS = ("reply", "http", "waiting")


def run_all(
    scale_name: str,
    only: tuple[str, ...],
    use_postgres: bool,
    conversations: int | None = None,
    log: Any = print,
    modes: tuple[str, ...] | None = None,
    scale_levels: tuple[int, ...] | None = None,
    scale_engines: tuple[str, ...] = ("sqlite", "postgres"),
    worker_counts: tuple[int, ...] = DEFAULT_WORKERS,
) -> dict[str, Any]:
    """Run the chosen benchmarks at ``scale_name``; the results as one JSON-ready dict."""
    from bench import http_floor, http_load, http_workers, langgraph_vs, reply_path, scale, waiting

    chosen = SCALES[scale_name]
    if conversations is not None:
        chosen = dataclasses.replace(chosen, reply_conversations=conversations)
    if scale_levels:
        chosen = dataclasses.replace(chosen, scale_levels=scale_levels)
    pg_url: str | None = postgres_url() if use_postgres else None
    notes: list[str] = []
    if pg_url is not None:
        reason = postgres_reachable(pg_url)
        if reason is not None:
            notes.append(f"PostgreSQL skipped: {reason}")
            log(f"  {notes[-1]}")
            pg_url = None
    results: dict[str, Any] = {"scale_name": scale_name, "machine": machine_info(), "notes": notes}
    started = time.perf_counter()
    with workdir() as work:
        if "reply" in only:
            results["reply_path"] = reply_path.run(chosen, work, pg_url, log, modes or reply_path.MODES)
        if "langgraph" in only:
            # Both durabilities, each the same on both sides; the first is parkgate's default.
            results["langgraph"] = [langgraph_vs.run(chosen, work, log, synchronous=s) for s in ("full", "normal")]
        if "http" in only:
            results["http"] = http_load.run(chosen, work, pg_url, log)
            if wrk.installed():
                log("  HTTP floor: parkgate serve vs a bare Starlette app, one worker ...")
                results["http_floor"] = http_floor.measure_floor(chosen, work, pg_url, log, ENGINES)
                log(f"  HTTP workers: {', '.join(map(str, worker_counts))} ...")
                results["http_workers"] = http_workers.measure_workers(
                    chosen, work, pg_url, log, worker_counts, ENGINES
                )
            else:
                notes.append("HTTP floor and worker table skipped: wrk is not installed")
        if "scale" in only:
            results["scale"] = scale.run(chosen, work, pg_url, log, scale_engines)
        if "waiting" in only:
            log("  waiting side: long-poll wake-ups, callbacks, due reads, the due time's cost ...")
            results["waiting"] = waiting.run(chosen, work, pg_url, log)
    results["elapsed_s"] = time.perf_counter() - started
    return to_jsonable(results)


def render(results: dict[str, Any]) -> str:
    """The results as plain-text tables (what ``python -m bench`` prints)."""
    lines: list[str] = []
    machine = results["machine"]
    lines.append(
        f"parkgate bench ({results['scale_name']}) {machine['date']} — {machine['cpu']}, {machine['cores']} cores, "
        f"{machine['memory_gib']} GiB, Python {machine['python']}, SQLite {machine['sqlite']}"
    )
    reply = results.get("reply_path")
    if reply:
        lines.append("")
        lines.append(
            f"1. Reply path vs the raw autocommitted UPDATE ({reply['conversations']:,} conversations; goal >= 0.5)"
        )
        lines.append(
            f"{'store':15} {'workers':12} {'gateway ops/s':>13} {'raw ops/s':>10} {'ratio':>6} "
            f"{'handle p50':>10} {'handle p99':>10} {'raw p50':>8} {'raw p99':>8}"
        )
        for c in reply["cells"]:
            h, r = c["handle_latency"], c["raw_latency"]
            lines.append(
                f"{c['store']:15} {c['label']:12} {c['gateway_ops_per_s']:13.0f} {c['raw_ops_per_s']:10.0f} "
                f"{c['ratio']:6.2f} {h['p50_ms']:8.2f}ms {h['p99_ms']:8.2f}ms {r['p50_ms']:6.2f}ms {r['p99_ms']:6.2f}ms"
            )
    for number, lg in enumerate(results.get("langgraph") or []):
        if number == 0:
            lines.append("")
            lines.append(
                f"2. vs LangGraph {lg['langgraph_version']} + SqliteSaver (4 round trips x "
                f"{lg['conversations_per_side']} conversations, measured once each WAL is at its reused size; "
                "goal >= 10x)"
            )
        pg_lat, lg_lat = lg["parkgate_latency"], lg["langgraph_latency"]
        lines.append(
            f"synchronous={lg['synchronous']:6} parkgate {lg['parkgate_round_trips_per_s']:.0f} round trips/s "
            f"(p50 {pg_lat['p50_ms']:.2f} ms), LangGraph {lg['langgraph_round_trips_per_s']:.0f}/s "
            f"(p50 {lg_lat['p50_ms']:.2f} ms): ratio {lg['ratio']:.1f}x; a disk sync here {lg['disk_sync_ms']:.2f} ms"
        )
    sc = results.get("scale")
    if sc:
        lines.append("")
        lines.append("3. Scale: parked conversations -> time (growth vs the first level)")
        lines.append(
            f"{'store':9} {'parked':>10} {'audit 100':>16} {'handle p50':>16} {'expiry read p50':>16} {'peak RSS':>14}"
        )
        for engine in sc["engines"]:
            for p in engine["probes"]:
                g = p["growth"]
                lines.append(
                    f"{engine['store']:9} {p['level']:>10,} "
                    f"{p['audit_oldest_100_ms']:7.2f}ms x{g['audit_oldest_100_ms']:5.2f}"
                    f" {p['handle_p50_ms']:7.2f}ms x{g['handle_p50_ms']:5.2f}"
                    f" {p['expiry_read_p50_ms']:7.2f}ms x{g['expiry_read_p50_ms']:5.2f}"
                    f" {p['peak_rss_kib'] / 1024:5.0f}MiB x{g['peak_rss_kib']:4.2f}"
                )
                if "handle_p50_ms_vs_reference" in g:
                    lines.append(
                        f"{'':9} {'vs 1k ref':>10} {'':9}x{g['audit_oldest_100_ms_vs_reference']:5.2f}"
                        f" {'':9}x{g['handle_p50_ms_vs_reference']:5.2f}"
                        f" {'':9}x{g['expiry_read_p50_ms_vs_reference']:5.2f}"
                    )
    http = results.get("http")
    if http:
        lines.append("")
        if "skipped" in http:
            lines.append(f"4. HTTP: skipped ({http['skipped']})")
        else:
            lines.append(
                "4. HTTP POST /v1/conversations/{id}/messages via parkgate serve "
                f"(PostgreSQL; load from {http.get('load_generator', 'httpx')})"
            )
            lines.append(
                f"{'workers':>7} {'req/s':>7} {'p50':>9} {'p99':>9} {'healthz/s':>9} {'in-proc/s':>9} "
                f"{'vs healthz':>10} {'vs in-proc':>10}"
            )
            for c in http["configs"]:
                m = c["messages"]
                lines.append(
                    f"{c['workers']:>7} {m['requests_per_s']:7.0f} {m['latency']['p50_ms']:7.1f}ms "
                    f"{m['latency']['p99_ms']:7.1f}ms {c['healthz']['requests_per_s']:9.0f} "
                    f"{c['in_process_handle']['requests_per_s']:9.0f} {c['messages_vs_healthz']:10.2f} "
                    f"{c['messages_vs_in_process']:10.2f}"
                )
    if results.get("http_floor"):
        lines.append("")
        lines.extend(render_floor(results["http_floor"]))
    if results.get("http_workers"):
        lines.append("")
        lines.extend(render_workers(results["http_workers"]))
    waiting = results.get("waiting")
    if waiting:
        lines.append("")
        lines.extend(render_waiting(waiting))
    for note in results.get("notes", []):
        lines.append(f"note: {note}")
    return "\n".join(lines)


def render_waiting(w: dict[str, Any]) -> list[str]:
    """Benchmark 5's tables."""
    goals = w["goals"]
    wake_goals = goals["wake_two_processes_p99_ms"]
    lines = [
        f"5. Waiting side via parkgate serve --workers 1 ({w['samples']} samples a cell; ms; goals: wake across "
        f"processes p99 <= {wake_goals['postgres']:g} PostgreSQL, <= {wake_goals['sqlite']:g} SQLite)",
        f"{'store':9} {'long-poll on':14} {'wake p50':>8} {'p99':>7} {'after POST':>10} {'p99':>7} "
        f"{'answer POST':>11} {'p99':>7} {'floor p50':>9} {'p99':>7} {'wake/floor p50':>14} {'p99':>5} goal",
    ]
    for c in w["wake"]:
        wake, post, floor, after = c["wake"], c["answer_post"], c["floor"], c["after_answer_returned"]
        goal = "" if "goal_met" not in c else ("met" if c["goal_met"] else f"NOT met (<= {c['goal_p99_ms']:g})")
        lines.append(
            f"{c['store']:9} {c['topology']:14} {wake['p50_ms']:8.2f} {wake['p99_ms']:7.2f} "
            f"{after['p50_ms']:10.2f} {after['p99_ms']:7.2f} {post['p50_ms']:11.2f} {post['p99_ms']:7.2f} "
            f"{floor['p50_ms']:9.2f} {floor['p99_ms']:7.2f} {c['wake_over_floor_p50']:14.2f} "
            f"{c['wake_over_floor_p99']:5.2f} {goal}"
        )
    lines.append(f"callback received (ms; goal p99 <= {goals['callback_p99_ms']:g} after the commit)")
    lines.append(
        f"{'store':9} {'after POST returned p50':>23} {'p99':>7} {'after POST sent p50':>19} {'p99':>7} "
        f"{'floor p50':>9} {'p99':>7} goal"
    )
    for c in w["callback"]:
        returned, sent, floor = c["after_post_returned"], c["after_post_sent"], c["floor"]
        lines.append(
            f"{c['store']:9} {returned['p50_ms']:23.2f} {returned['p99_ms']:7.2f} {sent['p50_ms']:19.2f} "
            f"{sent['p99_ms']:7.2f} {floor['p50_ms']:9.2f} {floor['p99_ms']:7.2f} "
            f"{'met' if c['goal_met'] else 'NOT met'}"
        )
    lines.append(f"due reads: TTL passing -> callback received (s; goal p99 <= {goals['due_lateness_p99_s']:g})")
    lines.append(
        f"{'store':9} {'parked':16} {'servers':>7} {'asks':>5} {'due within':>10} {'lateness p50':>12} {'p99':>6} "
        f"{'max':>6} {'read p99':>8} {'callbacks/s':>11} {'server CPU ms/cb':>16} goal"
    )
    for row in w["due"]:
        for r in row["rounds"]:
            late = r["lateness"]
            lines.append(
                f"{row['store']:9} {r['parking']:16} {row['servers']:7} {r['callbacks']:5} {r['due_within_s']:9.2f}s "
                f"{late['p50_s']:12.3f} {late['p99_s']:6.3f} {late['max_s']:6.3f} {r['due_read_delay']['p99_s']:8.3f} "
                f"{r['callbacks_per_s']:11.0f} {_optional(r.get('server_cpu_ms_per_callback')):>16} "
                f"{'met' if row['goal_met'] else 'NOT met'}"
            )
    if w["due_cost"]:
        lines.append("the due time's cost: benchmark 1's mix, one process, the variants in turn on one store")
        lines.append(
            f"{'store':15} {'asks carry':10} {'gateway/raw':>11} {'vs plain':>8} {'handle p50':>10} {'vs plain':>8} "
            f"{'ask p50':>7} {'vs plain':>8} {'client CPU µs':>13} {'server CPU µs':>13}"
        )
        for row in w["due_cost"]:
            for variant, v in row["variants"].items():
                server = v["server_cpu_us_per_op"]
                lines.append(
                    f"{row['store']:15} {variant:10} {v['ratio']:11.2f} {v['ratio_vs_plain']:8.3f} "
                    f"{v['handle']['p50_ms']:8.3f}ms {v['handle_p50_vs_plain']:8.3f} {v['ask']['p50_ms']:5.3f}ms "
                    f"{v['ask_p50_vs_plain']:8.3f} {v['client_cpu_us_per_op']:13.0f} "
                    f"{'-' if server is None else format(server, '.0f'):>13}"
                )
    if "skipped" in w:
        lines.append(f"note: {w['skipped']}")
    return lines


def _optional(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point of ``python -m bench``."""
    parser = argparse.ArgumentParser(
        prog="python -m bench", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--scale", choices=sorted(SCALES), default="small")
    parser.add_argument("--only", default=",".join(BENCHMARKS), help="comma-separated: " + ",".join(BENCHMARKS))
    parser.add_argument("--conversations", type=int, default=None, help="benchmark 1's conversation count")
    parser.add_argument("--modes", default=None, help="benchmark 1's modes: single,threads,processes")
    parser.add_argument("--scale-levels", default=None, help="benchmark 3's levels, e.g. 10000,100000,1000000")
    parser.add_argument("--scale-engines", default="sqlite,postgres", help="benchmark 3's stores")
    parser.add_argument(
        "--workers",
        default=",".join(map(str, DEFAULT_WORKERS)),
        help="benchmark 4's worker table: worker counts, e.g. 1,2,4,8",
    )
    parser.add_argument("--no-postgres", action="store_true", help="SQLite only (benchmark 4 is skipped)")
    parser.add_argument("--out", type=Path, default=RESULTS_DIR / "latest.json")
    parser.add_argument("--hot", action="store_true", help="the hot paths: --only " + ",".join(HOT_PATHS))
    args = parser.parse_args(argv)
    only = tuple(name.strip() for name in args.only.split(",") if name.strip())
    if args.hot:
        only = HOT_PATHS
    unknown = [name for name in only if name not in BENCHMARKS]
    if unknown:
        parser.error(f"unknown benchmark(s): {', '.join(unknown)}")

    def log(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    modes = tuple(m.strip() for m in args.modes.split(",")) if args.modes else None
    levels = tuple(int(n) for n in args.scale_levels.split(",")) if args.scale_levels else None
    engines = tuple(e.strip() for e in args.scale_engines.split(",") if e.strip())
    workers = tuple(int(n) for n in args.workers.split(",") if n.strip())
    if not workers or min(workers) < 1:
        parser.error("--workers takes worker counts of at least 1, e.g. 1,2,4,8")
    results = run_all(args.scale, only, not args.no_postgres, args.conversations, log, modes, levels, engines, workers)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2) + "\n")
    print(render(results))
    print(f"\nwrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
