"""Benchmark 4: POST /v1/conversations/{id}/messages through ``parkgate serve``.

For 1 and 4 uvicorn workers on PostgreSQL (a fresh schema each), the server is started
as a real process on loopback and driven with a bounded number of requests, a bounded
wall time and a fixed concurrency, by ``wrk`` (``bench/wrk_load.lua``) when it is
installed, otherwise by an async httpx client. wrk is C: one of its threads keeps
thousands of requests a second in flight, where the Python client tops out at a few
hundred and would measure itself rather than the server. The messages are
non-answers and ``menu`` to parked conversations (each with its own ``message_id``), so
every request runs the full reply path and the conversations stay parked.

Baselines in the same run, in alternating rounds: ``GET /healthz`` on the same server
(the HTTP stack plus the store's connection check, ``SELECT 1``) and the same messages
through an in-process :meth:`Gateway.handle` on the same schema (the reply path without
HTTP). The floor against a bare app and the worker table are :mod:`bench.http_floor`
and :mod:`bench.http_workers`.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import socket
import subprocess
import sys
import time
import uuid
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import quote

from bench import wrk
from bench.common import drop_schema, latency_summary, new_schema, ratio

OPTIONS = ("Sequence diagram", "Class diagram", "Activity diagram")
PROMPT = "Which UML diagram should I draw?"
TEXTS = ("not sure yet", "which one is best?", "menu", "hmm")
PARKED = 300
#: Parked conversations are PREFIX0 .. PREFIX299 (wrk_load.lua builds the same ids).
PREFIX = "http-"
WRK_SCRIPT = wrk.SCRIPT
GENERATORS = ("wrk", "httpx")


def load_generator() -> str:
    """``wrk`` when it is on PATH (Debian's ``wrk`` package), else the httpx client."""
    return "wrk" if wrk.installed() else "httpx"


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def schema_url(url: str, schema: str) -> str:
    """``url`` with libpq ``options`` setting ``search_path`` (every connection, every worker)."""
    joiner = "&" if "?" in url else "?"
    return f"{url}{joiner}options={quote(f'-csearch_path={schema}')}"


def start_server(db_url: str, schema: str | None, workers: int, port: int, log_path: Path) -> subprocess.Popen[bytes]:
    """``parkgate serve`` as a child process (its output to ``log_path``); ``schema``: PostgreSQL's."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("PARKGATE_")}
    if schema:
        env["PARKGATE_PG_SCHEMA"] = schema
    env["PARKGATE_CALLBACK_ALLOW"] = "127.0.0.1"  # the benchmarks' callback receivers listen on loopback
    command = [
        sys.executable,
        "-m",
        "parkgate",
        "serve",
        "--db",
        db_url,
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--workers",
        str(workers),
    ]
    with open(log_path, "wb") as out:
        return subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True)


def wait_healthy(base: str, proc: subprocess.Popen[bytes], timeout: float = 90.0) -> None:
    """Poll ``/healthz`` until it answers 200, the process dies, or ``timeout`` passes."""
    import httpx

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"parkgate serve exited with {proc.returncode}")
        try:
            if httpx.get(f"{base}/healthz", timeout=2.0).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.3)
    raise RuntimeError(f"parkgate serve did not become healthy within {timeout:.0f} s")


def stop_server(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM the server's process group, then SIGKILL if it lingers."""
    import signal

    if proc.poll() is not None:
        return
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=20)
    except (ProcessLookupError, subprocess.TimeoutExpired):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)


async def _drive(
    base: str,
    make: Callable[[int], tuple[str, str, dict[str, Any] | None]],
    count: int,
    seconds: float,
    concurrency: int,
) -> dict[str, Any]:
    """Send up to ``count`` requests (for at most ``seconds``), ``concurrency`` at a time."""
    import httpx

    latencies: list[int] = []
    statuses: Counter[int | str] = Counter()
    kinds: Counter[str] = Counter()
    next_index = 0
    deadline = time.perf_counter() + seconds
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)

    async with httpx.AsyncClient(base_url=base, limits=limits, timeout=30.0) as client:

        async def worker() -> None:
            nonlocal next_index
            while next_index < count and time.perf_counter() < deadline:
                index = next_index
                next_index += 1
                method, path, body = make(index)
                began = time.perf_counter_ns()
                try:
                    response = await client.request(method, path, json=body)
                except httpx.TransportError as error:
                    # A dropped connection is a result to report (under "statuses"), not a
                    # reason to lose the whole run's figures.
                    statuses[f"transport error ({type(error).__name__})"] += 1
                    continue
                latencies.append(time.perf_counter_ns() - began)
                statuses[response.status_code] += 1
                if body is not None and response.status_code == 200:
                    kinds[str(response.json().get("kind"))] += 1

        started = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(concurrency)))
        wall = time.perf_counter() - started
    return {
        "requests": len(latencies),
        "wall_s": wall,
        "requests_per_s": ratio(len(latencies), wall),
        "latency": latency_summary(latencies),
        "statuses": {str(code): n for code, n in sorted(statuses.items(), key=lambda item: str(item[0]))},
        "kinds": dict(kinds),
    }


def _drive_wrk(
    base: str, mode: str, count: int, seconds: float, concurrency: int, seed: int, expected_rate: float | None = None
) -> dict[str, Any]:
    """:func:`_drive`'s figures from one wrk run (``mode``: ``messages`` or ``healthz``; see :func:`bench.wrk.run`)."""
    return wrk.run(
        base,
        mode,
        count=count,
        seconds=seconds,
        concurrency=concurrency,
        seed=seed,
        conversations=PARKED,
        prefix=PREFIX,
        expected_rate=expected_rate,
    )


def _drive_with(
    generator: str,
    base: str,
    mode: str,
    conversations: list[str],
    count: int,
    seconds: float,
    concurrency: int,
    seed: int,
    expected_rate: float | None = None,
) -> dict[str, Any]:
    """One load of ``mode`` (``messages`` or ``healthz``) through ``generator``."""
    if generator == "wrk":
        return _drive_wrk(base, mode, count, seconds, concurrency, seed, expected_rate)
    if mode == "healthz":
        return asyncio.run(_drive(base, lambda _i: ("GET", "/healthz", None), count, seconds, concurrency))
    return asyncio.run(_drive(base, _message_maker(conversations, seed), count, seconds, concurrency))


def _message_maker(conversations: list[str], seed: int) -> Callable[[int], tuple[str, str, dict[str, Any] | None]]:
    rng = random.Random(seed)
    tag = uuid.uuid4().hex[:8]

    def make(index: int) -> tuple[str, str, dict[str, Any] | None]:
        conversation = rng.choice(conversations)
        body = {"text": TEXTS[index % len(TEXTS)], "message_id": f"h{tag}-{index}"}
        return "POST", f"/v1/conversations/{quote(conversation, safe='')}/messages", body

    return make


def _in_process(gateway: Any, conversations: list[str], count: int, seconds: float, seed: int) -> dict[str, Any]:
    rng = random.Random(seed)
    tag = uuid.uuid4().hex[:8]
    latencies = []
    deadline = time.perf_counter() + seconds
    started = time.perf_counter()
    for index in range(count):
        if time.perf_counter() >= deadline:
            break
        began = time.perf_counter_ns()
        gateway.handle(rng.choice(conversations), TEXTS[index % len(TEXTS)], f"p{tag}-{index}")
        latencies.append(time.perf_counter_ns() - began)
    wall = time.perf_counter() - started
    return {
        "requests": len(latencies),
        "wall_s": wall,
        "requests_per_s": ratio(len(latencies), wall),
        "latency": latency_summary(latencies),
    }


def run_workers(
    pg_url: str, workers: int, scale: Any, work: Path, log: Callable[[str], None], generator: str | None = None
) -> dict[str, Any]:
    """One server configuration: start it, park conversations, alternate the three loads.

    ``generator`` is ``wrk`` or ``httpx`` (default: :func:`load_generator`).
    """
    generator = generator or load_generator()
    if generator not in GENERATORS:
        raise ValueError(f"generator must be one of {', '.join(GENERATORS)}, not {generator!r}")
    from parkgate import Gateway
    from parkgate.store.postgres import PostgresStore

    schema = new_schema(pg_url)
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    log_path = work / f"serve-{workers}.log"
    proc = start_server(schema_url(pg_url, schema), schema, workers, port, log_path)
    gateway = None
    try:
        wait_healthy(base, proc)
        gateway = Gateway(store=PostgresStore(pg_url, schema=schema))
        conversations = [f"{PREFIX}{n}" for n in range(PARKED)]
        for conversation in conversations:
            gateway.ask(conversation, PROMPT, OPTIONS)
        rounds = 2
        count = max(1, scale.http_requests // rounds)
        seconds = scale.http_seconds / rounds
        concurrency = scale.http_concurrency
        # Warm-up: every worker process opens its pool and prepares its statements; the
        # rates seen bound how long each measured wrk run waits (see _drive_wrk).
        rates: dict[str, float] = {}
        for mode in ("healthz", "messages"):
            warm = _drive_with(
                generator, base, mode, conversations, min(200, count), min(5.0, seconds), concurrency, 99
            )
            rates[mode] = warm["requests_per_s"]
        loads: dict[str, list[dict[str, Any]]] = {"messages": [], "healthz": [], "in_process": []}
        for number in range(rounds):
            for mode in ("healthz", "messages"):
                load = _drive_with(
                    generator, base, mode, conversations, count, seconds, concurrency, number, rates[mode]
                )
                rates[mode] = load["requests_per_s"]
                loads[mode].append(load)
            loads["in_process"].append(_in_process(gateway, conversations, count, seconds, number))
    finally:
        if gateway is not None:
            gateway.close()
        stop_server(proc)
        drop_schema(pg_url, schema)
    merged = {name: _merge(parts) for name, parts in loads.items()}
    messages = merged["messages"]
    result = {
        "workers": workers,
        "load_generator": generator,
        "concurrency": scale.http_concurrency,
        "messages": messages,
        "healthz": merged["healthz"],
        "in_process_handle": merged["in_process"],
        "messages_vs_healthz": ratio(messages["requests_per_s"], merged["healthz"]["requests_per_s"]),
        "messages_vs_in_process": ratio(messages["requests_per_s"], merged["in_process"]["requests_per_s"]),
    }
    log(
        f"    {workers} worker(s), {generator}: messages {messages['requests_per_s']:.0f} req/s p99 "
        f"{messages['latency']['p99_ms']:.1f} ms; healthz {merged['healthz']['requests_per_s']:.0f} req/s; "
        f"in-process {merged['in_process']['requests_per_s']:.0f}/s"
    )
    return result


def _merge(parts: list[dict[str, Any]]) -> dict[str, Any]:
    requests = sum(p["requests"] for p in parts)
    wall = sum(p["wall_s"] for p in parts)
    statuses: Counter[str] = Counter()
    kinds: Counter[str] = Counter()
    for p in parts:
        statuses.update(p.get("statuses", {}))
        kinds.update(p.get("kinds", {}))
    # Latency percentiles of the merged rounds: the rounds are equal-sized, so take the worse p99.
    return {
        "requests": requests,
        "wall_s": wall,
        "requests_per_s": ratio(requests, wall),
        "latency": {
            "p50_ms": max(p["latency"]["p50_ms"] for p in parts),
            "p99_ms": max(p["latency"]["p99_ms"] for p in parts),
            "count": requests,
        },
        "statuses": dict(statuses),
        "kinds": dict(kinds),
    }


def run(
    scale: Any,
    work: Path,
    pg_url: str | None,
    log: Callable[[str], None] = print,
    worker_counts: tuple[int, ...] = (1, 4),
) -> dict[str, Any]:
    """Benchmark 4 for each worker count (PostgreSQL only; skipped without it)."""
    if not pg_url:
        return {"skipped": "PostgreSQL is not reachable"}
    generator = load_generator()
    configs = []
    for workers in worker_counts:
        log(
            f"  HTTP: parkgate serve --workers {workers} (PostgreSQL), up to {scale.http_requests} messages, "
            f"load from {generator} ..."
        )
        configs.append(run_workers(pg_url, workers, scale, work, log, generator))
    return {"load_generator": generator, "configs": configs}
