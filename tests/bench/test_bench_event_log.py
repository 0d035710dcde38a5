"""A tiny run of ``bench/event_log.py``: both sides run benchmark 1's script (every reply
the kind it expects), the side without the log writes no event while the product's
writes them all, and the growth figures come from events that were written (no speed
asserted)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # `bench` lives at the repository root, beside src/
    sys.path.insert(0, str(ROOT))

from bench import event_log, reply_path  # noqa: E402
from bench.common import StoreTarget, drop_schema, new_schema  # noqa: E402
from parkgate import Gateway  # noqa: E402


def _check_cell(cell: dict[str, object], conversations: int, rounds: int) -> None:
    assert cell["unexpected"] == []
    kinds = cell["kinds"]
    assert isinstance(kinds, dict) and kinds["with"] == kinds["without"]
    assert sum(kinds["with"].values()) == 5 * conversations * rounds
    assert cell["with_ops_per_s"] > 0 and cell["without_ops_per_s"] > 0 and cell["raw_ops_per_s"] > 0  # type: ignore[operator]
    assert cell["with_over_without"] == pytest.approx(cell["without_ops_per_s"] / cell["with_ops_per_s"])  # type: ignore[operator]
    assert len(cell["with_over_without_per_round"]) == rounds  # type: ignore[arg-type]


def test_without_events_writes_none_and_the_product_writes_them_all(tmp_path: Path) -> None:
    gateway = Gateway(store=StoreTarget("sqlite", f"sqlite:///{tmp_path / 'e.db'}").open())
    try:
        with event_log.without_events():
            bare = gateway.ask("a", "Deploy?", ["Go", "Hold"])
            gateway.handle("a", "2", "m1")
        logged = gateway.ask("b", "Deploy?", ["Go", "Hold"])
        gateway.handle("b", "2", "m2")
        assert bare.ask_id is not None and logged.ask_id is not None
        assert gateway.events(bare.ask_id) == []
        assert [e.type.value for e in gateway.events(logged.ask_id)] == ["parked", "touched", "closed"]
    finally:
        gateway.close()


def test_time_with_and_without_the_log_on_sqlite(tmp_path: Path) -> None:
    # ``normal``: the warm-up that grows a ``full`` WAL costs a minute of syncs on a busy disk.
    target = StoreTarget("sqlite", f"sqlite:///{tmp_path / 'time.db'}", synchronous="normal")
    _check_cell(event_log.measure_time(target, conversations=6, rounds=2), 6, 2)
    assert reply_path.EXPECTED  # the script the cell ran is benchmark 1's


@pytest.mark.postgres
def test_time_and_growth_on_postgres(pg_url: str) -> None:
    schema = new_schema(pg_url, "bsmoke")
    try:
        _check_cell(event_log.measure_time(StoreTarget("postgres", pg_url, schema), 6, 2), 6, 2)
    finally:
        drop_schema(pg_url, schema)
    schema = new_schema(pg_url, "bsmoke")
    try:
        row = event_log.measure_growth(StoreTarget("postgres", pg_url, schema), "escalated", 10)
        assert row["events_per_ask"] == 6 and row["ask_events_bytes_per_ask"] > 0
    finally:
        drop_schema(pg_url, schema)


@pytest.mark.parametrize("script", sorted(event_log.SCRIPTS))
def test_growth_on_sqlite(tmp_path: Path, script: str) -> None:
    with_log = event_log.measure_growth(StoreTarget("sqlite", f"sqlite:///{tmp_path / 'g.db'}"), script, 20)
    bare = event_log.measure_growth(StoreTarget("sqlite", f"sqlite:///{tmp_path / 'b.db'}"), script, 20, False)
    assert with_log["ask_events_bytes_per_ask"] > 0 and bare["ask_events_bytes_per_ask"] == 0
