"""A tiny run of each benchmark in ``bench/``, so the benchmarks keep working.

Nothing here asserts a speed: the checks are that every benchmark runs end to end on
real stores, sends what it claims to send (the reply kinds of its script), and reports
the keys and positive figures the README's table is built from.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # `bench` lives at the repository root, beside src/
    sys.path.insert(0, str(ROOT))

from bench import __main__ as bench_main  # noqa: E402
from bench import http_floor, http_load, http_workers, langgraph_vs, reply_path, scale, waiting  # noqa: E402
from bench.common import MAX_WARM_UP_BATCHES, SCALES, StoreTarget, drop_schema, new_schema  # noqa: E402

SMOKE = SCALES["smoke"]


def _expected_kinds(conversations: int) -> Counter[str]:
    kinds: Counter[str] = Counter()
    for i in range(conversations):
        kinds.update(reply_path.EXPECTED[reply_path.flavour_of(i)])
    return kinds


def _check_cell(cell: dict[str, Any], conversations: int, workers: int) -> None:
    assert cell["unexpected"] == []
    assert cell["workers"] == workers
    # Every worker also parks its raw-loop rows and warms up outside the measured mix.
    assert cell["kinds"] == dict(_expected_kinds(conversations))
    assert cell["handle_latency"]["count"] == 4 * conversations
    assert cell["ask_latency"]["count"] == conversations
    assert cell["raw_latency"]["count"] == 5 * conversations
    assert cell["gateway_ops_per_s"] > 0 and cell["raw_ops_per_s"] > 0
    assert cell["ratio"] == pytest.approx(cell["gateway_ops_per_s"] / cell["raw_ops_per_s"])
    assert cell["handle_latency"]["p99_ms"] >= cell["handle_latency"]["p50_ms"] > 0


def test_the_mix_has_the_shares_the_readme_states() -> None:
    flavours = Counter(reply_path.flavour_of(i) for i in range(10_000))
    assert 0.04 < flavours["cancel"] / 10_000 < 0.06
    assert 0.09 < flavours["text"] / 10_000 < 0.11


@pytest.mark.parametrize(("mode", "synchronous"), [("single", "full"), ("processes", "normal")])
def test_reply_path_on_sqlite(tmp_path: Path, mode: str, synchronous: str) -> None:
    target = StoreTarget("sqlite", f"sqlite:///{tmp_path / 'reply.db'}", synchronous=synchronous)
    cell = reply_path.run_cell(target, mode, 12, 2, 2, warm_up_writes=SMOKE.warm_up_writes)
    _check_cell(cell, 12, 1 if mode == "single" else 2)
    assert cell["label"] == ("1 process" if mode == "single" else "2 processes")
    assert cell["store"] == f"sqlite ({synchronous})"


@pytest.mark.postgres
def test_reply_path_on_postgres_with_threads(pg_url: str) -> None:
    schema = new_schema(pg_url, "bsmoke")
    try:
        cell = reply_path.run_cell(StoreTarget("postgres", pg_url, schema), "threads", 8, 2, 2)
    finally:
        drop_schema(pg_url, schema)
    _check_cell(cell, 8, 2)


def test_langgraph_comparison_runs_the_same_script_on_both(tmp_path: Path) -> None:
    result = langgraph_vs.run(
        dataclasses.replace(SMOKE, langgraph_conversations=2), tmp_path, log=lambda _: None, rounds=2
    )
    assert result["conversations_per_side"] == 2
    assert result["langgraph_latency"]["count"] == result["parkgate_latency"]["count"] == 8
    assert result["langgraph_round_trips_per_s"] > 0 and result["parkgate_round_trips_per_s"] > 0
    rates = result["parkgate_round_trips_per_s"], result["langgraph_round_trips_per_s"]
    assert result["ratio"] == pytest.approx(rates[0] / rates[1])
    assert result["langgraph_version"].startswith("1.")
    for side in ("langgraph", "parkgate"):  # warmed up on its own file, which is in WAL mode
        assert result["warm_up"][side]["conversations"] >= 1
        assert result["warm_up"][side]["wal_bytes"] > 0


def test_warm_up_runs_until_the_wal_stops_growing(tmp_path: Path) -> None:
    database = tmp_path / "side.db"
    wal = tmp_path / "side.db-wal"
    calls: list[str] = []

    def conversation(thread_id: str) -> list[int]:
        calls.append(thread_id)
        if len(calls) <= 6:  # the WAL grows for six conversations (three batches), then is reused
            with wal.open("ab") as file:
                file.write(b"\0" * 100)
        return []

    done = langgraph_vs._warm_up(conversation, database, 2, "side")
    # Batches 1-3 grow it; batch 4 is the first that leaves it the size it found it.
    assert done == {"conversations": 8, "wal_bytes": 600}
    assert len(set(calls)) == 8


def test_warm_up_gives_up_on_a_wal_that_never_stops_growing(tmp_path: Path) -> None:
    database = tmp_path / "side.db"

    def conversation(thread_id: str) -> list[int]:
        with database.with_name("side.db-wal").open("ab") as file:
            file.write(b"\0")
        return []

    done = langgraph_vs._warm_up(conversation, database, 1, "side")
    assert done["conversations"] == MAX_WARM_UP_BATCHES


def test_langgraph_graph_reinterrupts_until_an_exact_option(tmp_path: Path) -> None:
    import sqlite3

    from langgraph.checkpoint.sqlite import SqliteSaver
    from langgraph.types import Command

    conn = sqlite3.connect(tmp_path / "lg.db", check_same_thread=False)
    try:
        graph = langgraph_vs.build_graph(SqliteSaver(conn))
        config = {"configurable": {"thread_id": "t"}}
        first = graph.invoke({"prompt": "?", "options": ["A", "B", "C"], "misses": 0}, config)
        assert "__interrupt__" in first
        assert "__interrupt__" in graph.invoke(Command(resume="the second"), config)
        done = graph.invoke(Command(resume="2"), config)
        assert "__interrupt__" not in done and done["selected"] == "B" and done["misses"] == 1
    finally:
        conn.close()


def _check_scale(result: dict[str, Any], levels: tuple[int, ...]) -> None:
    probes = result["probes"]
    assert [p["level"] for p in probes] == list(levels)
    assert all(v == 1.0 for v in probes[0]["growth"].values())
    for p in probes:
        assert p["samples"] > 0 and p["peak_rss_kib"] > 0
        assert {"audit_oldest_100_ms", "handle_p50_ms", "expiry_read_p50_ms", "peak_rss_kib"} <= set(p["growth"])
        assert "asks_open_by_conversation" in p["query_plans"]["open_ask_by_conversation"] or (
            result["store"] == "postgres"  # a tiny table may be read through the other partial index
        )
    assert all(rate > 0 for rate in result["load_rows_per_s"])


def test_scale_on_sqlite(tmp_path: Path) -> None:
    target = StoreTarget("sqlite", f"sqlite:///{tmp_path / 'scale.db'}")
    reference = StoreTarget("sqlite", f"sqlite:///{tmp_path / 'reference.db'}")
    result = scale.run_engine(target, (30, 60), batch=250, samples=5, log=lambda _: None, reference=reference)
    _check_scale(result, (30, 60))
    for probe in result["probes"]:
        assert probe["reference"]["handle_p50_ms"] > 0
        assert probe["handle_p50_ms_vs_reference"] == pytest.approx(
            probe["handle_p50_ms"] / probe["reference"]["handle_p50_ms"]
        )
    from parkgate import Gateway

    with Gateway(store=target.open()) as gateway:
        # Every conversation is still parked: expiry reads re-park what they closed.
        assert len(gateway.audit()) == 60


@pytest.mark.postgres
def test_scale_on_postgres(pg_url: str) -> None:
    schema = new_schema(pg_url, "bsmoke")
    try:
        result = scale.run_engine(StoreTarget("postgres", pg_url, schema), (20, 40), 15, 4, log=lambda _: None)
    finally:
        drop_schema(pg_url, schema)
    _check_scale(result, (20, 40))


@pytest.mark.postgres
@pytest.mark.parametrize("generator", http_load.GENERATORS)
def test_http_through_parkgate_serve(pg_url: str, tmp_path: Path, generator: str) -> None:
    """Both load generators: wrk (Debian's package; ./dev test installs it as root) and httpx."""
    if generator == "wrk":
        assert shutil.which("wrk"), "wrk is not installed: `apt-get install wrk` (./dev test does it as root)"
    tiny = dataclasses.replace(SMOKE, http_requests=24, http_seconds=8.0, http_concurrency=3)
    result = http_load.run_workers(pg_url, 1, tiny, tmp_path, log=lambda _: None, generator=generator)
    assert result["load_generator"] == generator
    messages = result["messages"]
    # Every request answered 200 with a reply kind of a parked menu, within the bounds:
    # at most the count (plus what was in flight when a wrk thread stopped) and the time.
    assert messages["statuses"] == {"200": messages["requests"]}
    assert 0 < messages["requests"] <= tiny.http_requests + 2 * tiny.http_concurrency
    assert sum(messages["kinds"].values()) == messages["requests"]
    assert set(messages["kinds"]) <= {"retry", "escalated", "reshown"}
    assert 0 < messages["wall_s"] <= tiny.http_seconds + 2
    assert result["healthz"]["statuses"] == {"200": result["healthz"]["requests"]}
    assert result["messages_vs_healthz"] > 0 and result["messages_vs_in_process"] > 0


#: The reply kinds each floor cell's messages must get from parkgate serve.
FLOOR_KINDS = {"pass": {"pass"}, "pass_id": {"pass"}, "retry": {"retry", "escalated"}, "select": {"selected"}}


def _check_floor(floor: dict[str, Any], engine: str) -> None:
    assert [(c["store"], c["cell"]) for c in floor["cells"]] == [(engine, cell) for cell in http_floor.CELLS]
    for c in floor["cells"]:
        for side in ("parkgate", "bare"):
            figures = c[side]
            # Every request answered 200, at most the count (plus what was in flight) a round.
            assert figures["statuses"] == {"200": figures["requests"]}, (c["cell"], side, figures)
            assert 0 < figures["requests"] <= SMOKE.floor_rounds * (SMOKE.floor_requests + SMOKE.http_concurrency)
            assert figures["requests_per_s"] > 0
        kinds = c["parkgate"]["kinds"]  # a reply each, of the cell's kinds (a retry may escalate)
        assert sum(kinds.values()) == c["parkgate"]["requests"] and set(kinds) <= FLOOR_KINDS[c["cell"]], c
        assert c["bare"]["kinds"] == {"pass": c["bare"]["requests"]}  # the bare app's one answer
        assert c["ratio"] == pytest.approx(c["parkgate"]["requests_per_s"] / c["bare"]["requests_per_s"])
        assert len(c["ratio_per_round"]) == SMOKE.floor_rounds
        assert (c["goal_met"] is None) == (c["cell"] not in http_floor.GOALS)
    # Issue 41's goals: the pass against the bare app, the pass_id against the same run's pass.
    cells = {c["cell"]: c for c in floor["cells"]}
    assert cells["pass"]["goal_met"] == (cells["pass"]["ratio"] >= http_floor.PASS_OF_BARE)
    of_pass = cells["pass_id"]["parkgate"]["requests_per_s"] / cells["pass"]["parkgate"]["requests_per_s"]
    assert cells["pass_id"]["of_pass"] == pytest.approx(of_pass)
    fast = cells["pass_id"]["parkgate"]["p99_ms"] <= http_floor.PASS_ID_P99_MS
    assert cells["pass_id"]["goal_met"] == (fast and of_pass >= http_floor.PASS_ID_OF_PASS)
    table = "\n".join(http_floor.render_floor(floor))
    assert table.startswith("4a. HTTP floor") and "a selection" in table


def _check_workers(table: dict[str, Any], engine: str, counts: tuple[int, ...]) -> None:
    assert table["counts"] == list(counts) and table["stores"] == [engine]
    for row in table["rows"]:
        names = {f"{target} {mode}" for target in ("bare", engine) for mode in http_floor.WORKER_MODES}
        assert set(row["cells"]) == names
        for cell in row["cells"].values():
            assert cell["statuses"] == {"200": sum(cell["statuses"].values())} and cell["requests_per_s"] > 0
            assert set(cell["kinds"]) == {"pass"}
            assert cell["vs_bare"] > 0 and cell["vs_first_count"] > 0
    assert all(cell["vs_first_count"] == 1.0 for cell in table["rows"][0]["cells"].values())
    assert "4b. Workers" in "\n".join(http_workers.render_workers(table))


def test_http_floor_and_workers_on_sqlite(tmp_path: Path) -> None:
    """wrk drives the bare app and parkgate serve (one SQLite file per server), 1 and 2 workers."""
    assert shutil.which("wrk"), "wrk is not installed: `apt-get install wrk` (./dev test does it as root)"
    _check_floor(http_floor.measure_floor(SMOKE, tmp_path, None, lambda _: None, ("sqlite",)), "sqlite")
    table = http_workers.measure_workers(SMOKE, tmp_path, None, lambda _: None, (1, 2), ("sqlite",))
    _check_workers(table, "sqlite", (1, 2))


@pytest.mark.postgres
def test_http_floor_and_workers_on_postgres(pg_url: str, tmp_path: Path) -> None:
    assert shutil.which("wrk"), "wrk is not installed: `apt-get install wrk` (./dev test does it as root)"
    _check_floor(http_floor.measure_floor(SMOKE, tmp_path, pg_url, lambda _: None, ("postgres",)), "postgres")
    table = http_workers.measure_workers(SMOKE, tmp_path, pg_url, lambda _: None, (2,), ("postgres",))
    _check_workers(table, "postgres", (2,))


def test_http_floor_without_postgres_says_so(tmp_path: Path) -> None:
    floor = http_floor.measure_floor(SMOKE, tmp_path, None, lambda _: None, ("postgres",))
    assert floor["cells"] == [] and "PostgreSQL is not reachable" in floor["skipped"]


def test_bench_workers_option_takes_counts_of_at_least_one(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        bench_main.main(["--only", "http", "--workers", "0,2"])
    assert "--workers" in capsys.readouterr().err


def _check_waiting(result: dict[str, Any], engine: str) -> None:
    samples, asks = SMOKE.waiting_samples, SMOKE.due_asks
    assert [(c["store"], c["topology"]) for c in result["wake"]] == [
        (engine, "one process"),
        (engine, "two processes"),
    ]
    for cell in result["wake"]:
        for figure in ("wake", "answer_post", "floor"):
            assert cell[figure]["count"] == samples
            assert cell[figure]["p99_ms"] >= cell[figure]["p50_ms"] > 0
        # The long-poll's answer comes after the answering POST was sent (it may beat its response).
        assert cell["after_answer_returned"]["count"] == samples
        assert cell["wake"]["p50_ms"] > cell["after_answer_returned"]["p50_ms"]
        assert cell["wake_over_floor_p50"] > 0 and cell["wake_over_floor_p99"] > 0
        # The floor is a round trip and a commit: every one of its messages left its reply stored.
        assert cell["floor_replies_stored"] == cell["floor_messages"] >= 2 * samples
    assert isinstance(result["wake"][1]["goal_met"], bool)  # across processes: judged against its goal
    [callback] = result["callback"]
    assert callback["store"] == engine and isinstance(callback["goal_met"], bool)
    for figure in ("answer_post", "after_post_returned", "after_post_sent", "floor"):
        assert callback[figure]["count"] == samples
    assert callback["after_post_sent"]["p50_ms"] > 0
    assert [(row["parking"], row["servers"]) for row in result["due"]] == list(waiting.DUE_CELLS)
    for row in result["due"]:
        assert isinstance(row["goal_met"], bool)
        for r in row["rounds"]:
            # Every ask expired and sent its callback once, and none before its due time.
            assert r["callbacks"] == r["asks"] == asks
            assert r["statuses"] == {"expired": asks}
            assert r["lateness"]["min_s"] > 0 and r["due_read_delay"]["min_s"] > 0
            assert r["lateness"]["p99_s"] >= r["lateness"]["p50_s"]
            assert r["callbacks_per_s"] > 0 and r["parked_within_s"] > 0
    assert result["callback_duplicates"] == 0
    [cost] = result["due_cost"]
    assert cost["mode"] == "single" and cost["unexpected"] == []
    assert cost["conversations_per_variant"] == SMOKE.reply_conversations * SMOKE.due_cost_repeats
    assert set(cost["variants"]) == set(waiting.VARIANTS)
    for row in cost["variants"].values():
        assert row["ratio"] > 0 and row["wall_us_per_op"] > 0 and row["client_cpu_us_per_op"] >= 0
        assert row["handle"]["p50_ms"] > 0 and row["ask"]["p50_ms"] > 0
        assert len(row["ratio_per_round"]) == cost["rounds"]
        assert (row["server_cpu_us_per_op"] is not None) == (engine == "postgres")
    assert cost["variants"]["plain"]["ratio_vs_plain"] == 1.0
    table = "\n".join(bench_main.render_waiting(result))
    assert table.startswith("5. Waiting side") and "due reads" in table and "asks carry" in table


def test_waiting_on_sqlite(tmp_path: Path) -> None:
    result = waiting.run(SMOKE, tmp_path, None, log=lambda _: None, engines=("sqlite",))
    _check_waiting(result, "sqlite")


@pytest.mark.postgres
def test_waiting_on_postgres(pg_url: str, tmp_path: Path) -> None:
    result = waiting.run(SMOKE, tmp_path, pg_url, log=lambda _: None, engines=("postgres",))
    _check_waiting(result, "postgres")


def test_waiting_without_postgres_says_so(tmp_path: Path) -> None:
    result = waiting.run(SMOKE, tmp_path, None, log=lambda _: None, engines=("postgres",), parts=("cost",))
    assert result["skipped"].startswith("PostgreSQL is not reachable") and result["due_cost"] == []


def test_python_m_bench_writes_json_and_prints_the_table(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "latest.json"
    assert bench_main.main(["--scale", "smoke", "--only", "langgraph", "--no-postgres", "--out", str(out)]) == 0
    data = json.loads(out.read_text())
    assert data["scale_name"] == "smoke"
    assert {"date", "cpu", "cores", "python", "sqlite"} <= set(data["machine"])
    # Both durabilities, each the same on both sides, the store's default first.
    assert [side["synchronous"] for side in data["langgraph"]] == ["full", "normal"]
    assert all(side["ratio"] > 0 for side in data["langgraph"])
    printed = capsys.readouterr().out
    assert "vs LangGraph" in printed and f"wrote {out}" in printed
    assert "synchronous=full" in printed and "synchronous=normal" in printed


def test_instructions_counts_a_real_child_run_under_valgrind() -> None:
    """The valgrind path itself: a child process runs the gateway side and is counted (its
    warm-up cut from 100 conversations to 2: a smoke run's size)."""
    from bench import instructions

    counted = instructions.count("gateway", "sqlite", 2, "postgresql://unused", warm_up=2)
    assert counted > 10_000_000  # an interpreter's start-up alone is tens of millions


def test_instructions_per_message_is_the_difference_of_two_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    from bench import instructions

    # Start-up costs 1,000 on both sides; a message costs 300 (gateway) and 60 (raw).
    cost = {"gateway": 300, "raw": 60}
    monkeypatch.setattr(
        instructions,
        "count",
        lambda side, engine, conversations, url, variant: 1_000 + cost[side] * conversations * 5,
    )
    result = instructions.measure("sqlite", 10, 30, "postgresql://unused")
    assert result["instructions_per_message"] == {"gateway": 300, "raw": 60}
    assert result["raw_over_gateway"] == pytest.approx(0.2)
    with pytest.raises(ValueError, match="--large"):
        instructions.measure("sqlite", 30, 30, "postgresql://unused")


def test_profile_reply_samples_the_measured_mix_with_py_spy() -> None:
    from bench import profile_reply

    text = profile_reply.sample("sqlite", 150, 10, "postgresql://unused", rate=500)
    assert "on-CPU samples in the measured mix" in text, text
    assert "Gateway.handle (parkgate/gateway/calls.py)" in text, text


def test_profile_reply_counts_only_stacks_through_the_measured_mix() -> None:
    from bench import profile_reply

    lines = [
        "<module> (x.py:1);warm_up (x.py:2);handle (parkgate/gateway.py:9) 50",  # outside: ignored
        "<module> (x.py:1);measured_mix (bench/profile_reply.py:4);handle (parkgate/gateway.py:9) 30",
        "<module> (x.py:1);measured_mix (bench/profile_reply.py:4);handle (parkgate/gateway.py:12);"
        "Connection.wait (psycopg/connection.py:495) 60",
        "<module> (x.py:1);measured_mix (bench/profile_reply.py:4);step (parkgate/core/machine.py:3) 10",
    ]
    text = profile_reply.summarise_samples(lines, 5)
    assert text.startswith("100 on-CPU samples")
    assert "60% in the store's I/O" in text
    inclusive, own = text.split("self")
    assert "90.0%  handle (parkgate/gateway.py)" in inclusive  # its two lines add up; counted once a stack
    assert "<module>" not in text and "measured_mix" not in text  # only what the mix called
    assert "60.0%  Connection.wait (psycopg/connection.py)" in own
    assert "30.0%  handle (parkgate/gateway.py)" in own
    assert profile_reply.summarise_samples(lines[:1], 5).startswith("no samples")


def test_profile_reply_cprofile_still_counts_calls() -> None:
    from bench import profile_reply

    text = profile_reply.profile("sqlite", 10, "ncalls", 5, "postgresql://unused")
    assert "function calls" in text


@pytest.mark.postgres
def test_cpu_split_reads_the_local_servers_processes(pg_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from bench import cpu_split

    monkeypatch.setenv("PARKGATE_BENCH_POSTGRES_URL", pg_url)
    result = cpu_split.measure(conversations=60, rounds=1, pg_url=pg_url)
    assert result["messages_per_side"] == 300
    for side in cpu_split.SIDES:
        row = result["cpu_us_per_message"][side]
        # The server is on this machine: its share is read, not unknown.
        assert row["server_user"] is not None and row["server_system"] is not None, row
        assert row["total"] == pytest.approx(
            row["client_user"] + row["client_system"] + row["server_user"] + row["server_system"]
        )
    table = cpu_split.render(result)
    assert "server user" in table.splitlines()[1] and table.splitlines()[-1].startswith("raw / gateway (total) ")
    assert result["cpu_us_per_message"]["gateway"]["client_user"] > 0  # ~0.1 s of the mix: counted


def test_cpu_split_never_counts_a_process_that_is_not_postgres() -> None:
    """A remote server's pid may name some other process here: it is not read."""
    import os

    from bench import cpu_split

    assert cpu_split.process_ticks(os.getpid()) is None  # this is python, not postgres
    assert cpu_split.process_ticks(2**22 + 7) is None  # no such process
    unknown = cpu_split.measured(lambda: None, [os.getpid()])
    assert unknown.server_user is None and unknown.total is None
    result = {
        "messages_per_side": 10,
        "cpu_us_per_message": {
            side: dict.fromkeys(("client_user", "client_system"), 1.0)
            | dict.fromkeys(("server_user", "server_system", "total"))
            for side in cpu_split.SIDES
        },
        "raw_over_gateway": None,
    }
    assert "unknown: the server is not on this machine" in cpu_split.render(result)


def test_parser_linear_reports_every_shape_against_its_goal(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from bench import parser_linear

    out = tmp_path / "parser.json"
    code = parser_linear.main(
        ["--length", "6000", "--largest", "8000", "--http", "--http-length", "8000", "--json", str(out)]
    )
    cases = json.loads(out.read_text())
    shapes = len(parser_linear.OPTION_LINES) + len(parser_linear.MARKER_LINES)
    http = len(parser_linear.HTTP_LINES)
    assert [case["kind"] for case in cases] == ["same length"] * shapes + ["four times the input"] * 5 + [
        "POST /v1/asks"
    ] * http
    assert all(case["ratio"] > 0 and case["met"] == (case["ratio"] < case["goal"]) for case in cases)
    assert code == (0 if all(case["met"] for case in cases) else 1)  # the exit status is the verdict
    printed = capsys.readouterr().out.splitlines()
    assert len(printed) == len(cases) and all("goal <" in line for line in printed)
