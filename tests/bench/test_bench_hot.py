"""``python -m bench --hot`` runs the hot-path set, and ``bench.compare`` sets runs side by side."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # `bench` lives at the repository root, beside src/
    sys.path.insert(0, str(ROOT))

from bench import __main__ as bench_main  # noqa: E402
from bench import compare  # noqa: E402


def test_hot_runs_the_hot_path_benchmarks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    asked: dict[str, Any] = {}

    def run_all(scale_name: str, only: tuple[str, ...], *args: Any, **kwargs: Any) -> dict[str, Any]:
        asked.update(scale=scale_name, only=only)
        return {"scale_name": scale_name, "machine": bench_main.machine_info(), "notes": []}

    monkeypatch.setattr(bench_main, "run_all", run_all)
    assert bench_main.main(["--hot", "--out", str(tmp_path / "hot.json")]) == 0
    assert asked == {"scale": "small", "only": ("reply", "http", "waiting")}


def _results(ratio: float, lateness: float) -> dict[str, Any]:
    due_round = {"parking": "gateway", "lateness": {"p99_s": lateness}, "callbacks_per_s": 500.0}
    return {
        "reply_path": {"cells": [{"store": "postgres", "label": "4 processes", "ratio": ratio}]},
        "waiting": {"due": [{"store": "sqlite", "servers": 1, "rounds": [due_round]}]},
    }


def test_compare_prints_each_figure_once_per_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    before, after = tmp_path / "before.json", tmp_path / "after.json"
    before.write_text(json.dumps(_results(0.48, 2.1)))
    after.write_text(json.dumps({**_results(0.61, 0.9), "http": {"configs": []}}))
    assert compare.main([str(before), str(after)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["before", "after"]
    assert "1. postgres, 4 processes: gateway/raw" in lines[1] and lines[1].split()[-2:] == ["0.480", "0.610"]
    late = next(line for line in lines if "lateness p99" in line)
    assert late.split()[-2:] == ["2.100", "0.900"]
    cpu = next(line for line in lines if "server CPU" in line)
    assert cpu.split()[-2:] == ["-", "-"]  # not measured in these runs


def test_compare_sets_the_floor_and_worker_ratios_side_by_side(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def http(floor: float, workers: float) -> dict[str, Any]:
        return {
            "http_floor": {"cells": [{"store": "sqlite", "cell": "pass_id", "ratio": floor}]},
            "http_workers": {
                "rows": [
                    {"workers": 8, "cells": {"bare pass": {"vs_bare": 1.0}, "postgres pass": {"vs_bare": workers}}}
                ]
            },
        }

    runs = [tmp_path / "before.json", tmp_path / "after.json", tmp_path / "none.json"]
    for path, results in zip(runs, (http(0.19, 0.31), http(0.52, 0.74), {}), strict=True):
        path.write_text(json.dumps(results))
    assert compare.main([str(path) for path in runs]) == 0
    lines = capsys.readouterr().out.splitlines()
    floor = next(line for line in lines if line.startswith("4a. floor sqlite, pass_id: vs the bare app"))
    assert floor.split()[-3:] == ["0.190", "0.520", "-"]
    workers = next(line for line in lines if line.startswith("4b. 8 worker(s), postgres pass: vs the bare app"))
    assert workers.split()[-3:] == ["0.310", "0.740", "-"]
    assert not any("bare pass" in line for line in lines)  # the baseline is not compared with itself
