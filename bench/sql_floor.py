"""The SQL floor of benchmark 1 on SQLite: the statements the gateway runs, replayed alone.

``python -m bench.sql_floor [--conversations N] [--synchronous full|normal] [--out PATH]``

Benchmark 1 compares the reply path with the raw single-row ``UPDATE`` that commits
itself. This splits the gap in two. Benchmark 1's mix (:mod:`bench.reply_path`: park, two
bounces, ``menu``, select, with its cancel and text shares; a ``message_id`` on every
message) runs through a gateway while every statement it sends is recorded (the
``BEGIN IMMEDIATE`` and ``COMMIT`` included). The same statements, with the same
parameters and in the same order, are then replayed on a copy of the database as it was
before the mix: one connection with the store's settings, no Python between them but
the loop, the WAL grown first to the size it is reused at and checkpointed every
:data:`~parkgate.store.sqlite.CHECKPOINT_EVERY_COMMITS` commits as the store's
background checkpointer does (outside the timing). The raw ``UPDATE`` runs on the same
copy afterwards.

So ``raw / floor`` is the most the gateway/raw ratio could be if the gateway's Python
cost nothing: a goal above it needs fewer statements or fewer pages written a message,
not faster code. Reported: the gateway's, the replay's and the raw loop's time per op,
both ratios, and the replay's time by statement.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sqlite3
import sys
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.common import RESULTS_DIR, machine_info, ratio, workdir
from bench.reply_path import checked_ops, script

#: A statement as sent: its SQL and its parameters.
Sent = tuple[str, tuple[Any, ...]]
#: Statements run by ``Connection.execute`` (no cursor, nothing to fetch).
CONTROL = ("BEGIN", "COMMIT", "ROLLBACK", "SAVEPOINT", "RELEASE")
#: The WAL is grown to about this many pages before the replay (the reused size of a run's WAL).
WAL_PAGES = 6000
RAW_UPDATES = 1000


@contextmanager
def recording(into: list[Sent]) -> Iterator[None]:
    """Every connection opened in this process inside the block records what it sends to ``into``.

    The measurement's own hook (``sqlite3.connect`` is given a connection class that
    appends to ``into``), gone when the block ends.
    """
    real_connect = sqlite3.connect

    class RecordingCursor(sqlite3.Cursor):
        def execute(self, sql: str, parameters: Any = (), /) -> sqlite3.Cursor:
            into.append((sql, tuple(parameters)))
            return super().execute(sql, parameters)

    class RecordingConnection(sqlite3.Connection):
        def cursor(self, factory: Any = RecordingCursor) -> Any:
            return super().cursor(factory)

        def execute(self, sql: str, parameters: Any = (), /) -> sqlite3.Cursor:
            into.append((sql, tuple(parameters)))
            return super().execute(sql, parameters)

    def connect(*args: Any, **kwargs: Any) -> sqlite3.Connection:
        kwargs.setdefault("factory", RecordingConnection)
        return real_connect(*args, **kwargs)

    sqlite3.connect = connect  # type: ignore[assignment]
    try:
        yield
    finally:
        sqlite3.connect = real_connect


def statement_kind(sql: str) -> str:
    """A statement's label: its verb and the table it writes (``INSERT ask_events``)."""
    words = sql.split()
    verb = words[0].upper()
    if verb == "INSERT" and len(words) > 2:
        return f"INSERT {words[2]}"
    if verb in ("UPDATE", "DELETE") and len(words) > 1:
        return f"{verb} {words[1] if verb == 'UPDATE' else words[2]}"
    if verb == "BEGIN":
        return " ".join(words[:2]).upper()
    return verb


def prepared_copy(path: Path, synchronous: str) -> sqlite3.Connection:
    """A connection to ``path`` with the store's settings, its WAL grown and checkpointed,
    so the replay overwrites a reused WAL as a running store does."""
    conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute(f"PRAGMA synchronous = {synchronous.upper()}")
    conn.execute("PRAGMA foreign_keys = ON")
    conn.execute("PRAGMA wal_autocheckpoint = 0")
    conn.execute("CREATE TEMP TABLE IF NOT EXISTS scratch (x BLOB)")  # temp: not in the WAL
    conn.execute("CREATE TABLE IF NOT EXISTS bench_grow (x BLOB)")
    conn.execute("BEGIN")
    for _ in range(WAL_PAGES):
        conn.execute("INSERT INTO bench_grow VALUES (zeroblob(3500))")
    conn.execute("COMMIT")
    conn.execute("DROP TABLE bench_grow")
    conn.execute("PRAGMA wal_checkpoint(PASSIVE)")
    return conn


def replay(conn: sqlite3.Connection, sent: Sequence[Sent], every: int) -> tuple[float, Counter[str]]:
    """Run ``sent`` on ``conn``; the seconds it took (checkpoints every ``every`` commits
    left out) and the nanoseconds spent on each statement kind."""
    cursor = conn.cursor()
    spent: Counter[str] = Counter()
    clock = time.perf_counter_ns
    total = commits = 0
    for sql, parameters in sent:
        began = clock()
        if sql.startswith(CONTROL):
            conn.execute(sql)
        else:
            cursor.execute(sql, parameters)
            cursor.fetchall()
        took = clock() - began
        total += took
        spent[statement_kind(sql)] += took
        if sql == "COMMIT":
            commits += 1
            if commits % every == 0:
                conn.execute("PRAGMA wal_checkpoint(PASSIVE)")
    return total / 1e9, spent


def raw_updates(conn: sqlite3.Connection, count: int) -> float:
    """Seconds per raw autocommitted ``UPDATE`` of an ask (benchmark 1's baseline)."""
    ids = [row[0] for row in conn.execute("SELECT id FROM asks LIMIT ?", (count,))]
    statement = "UPDATE asks SET last_touched = ?, mismatches = mismatches + 1 WHERE id = ?"
    began = time.perf_counter()
    for ask_id in ids:
        conn.execute(statement, (datetime.now(UTC).isoformat(), ask_id))
    return (time.perf_counter() - began) / max(1, len(ids))


def measure(conversations: int, synchronous: str) -> dict[str, Any]:
    """The gateway, its replayed SQL and the raw ``UPDATE``, per op, on one SQLite file."""
    from parkgate import Gateway
    from parkgate.store.sqlite import CHECKPOINT_EVERY_COMMITS, SQLiteStore

    sent: list[Sent] = []
    with workdir() as work:
        path = work / "floor.db"
        with recording(sent):
            gateway = Gateway(store=SQLiteStore(f"sqlite:///{path}", synchronous=synchronous))
            try:
                checked_ops(gateway, script(range(conversations, 2 * conversations)))  # warm: caches, WAL
                checkpoint = sqlite3.connect(path)
                checkpoint.execute("PRAGMA wal_checkpoint(TRUNCATE)")
                checkpoint.close()
                shutil.copy(path, work / "copy.db")
                calls = script(range(conversations))
                sent.clear()
                began = time.perf_counter()
                checked_ops(gateway, calls)
                gateway_s = (time.perf_counter() - began) / len(calls)
                mix = [item for item in sent if not item[0].lstrip().upper().startswith("PRAGMA")]
            finally:
                gateway.close()
        conn = prepared_copy(work / "copy.db", synchronous)
        try:
            floor_total, spent = replay(conn, mix, CHECKPOINT_EVERY_COMMITS)
            raw_s = raw_updates(conn, RAW_UPDATES)
        finally:
            conn.close()
    ops = len(calls)
    floor_s = floor_total / ops
    return {
        "synchronous": synchronous,
        "ops": ops,
        "statements_per_op": round(len(mix) / ops, 2),
        "gateway_us": round(gateway_s * 1e6, 1),
        "floor_us": round(floor_s * 1e6, 1),
        "raw_us": round(raw_s * 1e6, 1),
        "gateway_ratio": ratio(raw_s, gateway_s),
        "floor_ratio": ratio(raw_s, floor_s),
        "by_statement_us": {kind: round(ns / ops / 1e3, 1) for kind, ns in spent.most_common()},
        "count_per_op": {
            kind: round(n / ops, 2) for kind, n in Counter(statement_kind(sql) for sql, _ in mix).most_common()
        },
    }


def render(result: dict[str, Any]) -> list[str]:
    """The floor's lines: per op, the three times and both ratios, then the replay by statement."""
    lines = [
        f"sqlite ({result['synchronous']}): {result['ops']} ops, {result['statements_per_op']} statements an op",
        f"  gateway {result['gateway_us']} us/op, its SQL alone {result['floor_us']} us/op, "
        f"raw UPDATE {result['raw_us']} us/op",
        f"  gateway/raw {result['gateway_ratio']:.2f}; the most with no Python at all (raw/SQL alone) "
        f"{result['floor_ratio']:.2f}",
    ]
    for kind, micros in result["by_statement_us"].items():
        lines.append(f"    {micros:7.1f} us/op  {kind} ({result['count_per_op'][kind]}/op)")
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--conversations", type=int, default=1000)
    parser.add_argument("--synchronous", choices=("full", "normal"), action="append")
    parser.add_argument("--out", type=Path, default=RESULTS_DIR / "sql_floor.json")
    args = parser.parse_args(argv)
    results = [measure(args.conversations, sync) for sync in args.synchronous or ("full", "normal")]
    for result in results:
        print("\n".join(render(result)))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"machine": machine_info(), "results": results}, indent=2))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
