"""A tiny run of ``bench/sql_floor.py``: the statements recorded from benchmark 1's mix,
replayed alone on a copy of the database, leave it as the gateway left its own (the
replay is the mix's SQL, all of it), and the report's figures come from that replay (no
speed asserted)."""

from __future__ import annotations

import shutil
import sqlite3
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # `bench` lives at the repository root, beside src/
    sys.path.insert(0, str(ROOT))

from bench import sql_floor  # noqa: E402
from bench.reply_path import checked_ops, script  # noqa: E402
from parkgate import Gateway  # noqa: E402
from parkgate.store.sqlite import SQLiteStore  # noqa: E402

TABLES = ("asks", "runs", "ask_events", "inbound_messages")


def _rows(path: Path) -> dict[str, list[tuple[object, ...]]]:
    conn = sqlite3.connect(path)
    try:
        return {table: sorted(conn.execute(f"SELECT * FROM {table}").fetchall(), key=repr) for table in TABLES}
    finally:
        conn.close()


def test_the_replay_leaves_the_copy_as_the_gateway_left_its_database(tmp_path: Path) -> None:
    path = tmp_path / "g.db"
    sent: list[sql_floor.Sent] = []
    with sql_floor.recording(sent):
        gateway = Gateway(store=SQLiteStore(f"sqlite:///{path}", synchronous="normal"))
        try:
            checked_ops(gateway, script(range(20, 30)))
            gateway.store.close()  # every connection closed: the file holds all of it
            shutil.copy(path, tmp_path / "copy.db")
            gateway = Gateway(store=SQLiteStore(f"sqlite:///{path}", synchronous="normal"))
            sent.clear()
            checked_ops(gateway, script(range(10)))
        finally:
            gateway.close()
    mix = [item for item in sent if not item[0].lstrip().upper().startswith("PRAGMA")]
    assert any(sql.startswith("INSERT INTO ask_events") for sql, _ in mix)
    conn = sql_floor.prepared_copy(tmp_path / "copy.db", "normal")
    try:
        seconds, spent = sql_floor.replay(conn, mix, every=7)
    finally:
        conn.close()
    assert seconds > 0 and spent["COMMIT"] > 0
    assert _rows(tmp_path / "copy.db") == _rows(path)


def test_the_report_splits_the_gateways_time_from_its_sqls() -> None:
    result = sql_floor.measure(8, "normal")
    assert result["ops"] == 40 and result["statements_per_op"] > 3
    assert 0 < result["floor_us"] < result["gateway_us"]
    assert set(result["by_statement_us"]) >= {"COMMIT", "BEGIN IMMEDIATE", "INSERT ask_events", "UPDATE asks"}
    lines = sql_floor.render(result)
    assert "raw/SQL alone" in lines[2] and any("INSERT ask_events" in line for line in lines)
