"""A tiny run of ``bench/mcp_gateway.py``: both sides answer every call as the server does,
and the result carries the figures the goal is read from (no speed asserted)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # `bench` lives at the repository root, beside src/
    sys.path.insert(0, str(ROOT))

from bench import mcp_gateway  # noqa: E402


def test_the_gateway_overhead_is_measured_against_the_direct_call(tmp_path: Path) -> None:
    out = tmp_path / "mcp.json"
    code = mcp_gateway.main(["--calls", "20", "--rounds", "2", "--json", str(out)])
    result = json.loads(out.read_text())
    for side in ("direct", "gateway"):
        assert result[side]["count"] == 40
        assert result[side]["p99_ms"] >= result[side]["p50_ms"] > 0
    assert result["added_p50_ms"] == pytest.approx(result["gateway"]["p50_ms"] - result["direct"]["p50_ms"])
    assert len(result["per_round"]) == 2
    assert result["goal_met"] == (result["added_p50_ms"] <= mcp_gateway.GOAL_ADDED_P50_MS)
    assert code == (0 if result["goal_met"] else 1)  # the exit status is the verdict
    assert "added at p50" in mcp_gateway.render(result)
