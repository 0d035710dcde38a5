"""PostgreSQL stopped and restarted under a live Gateway (library level).

Runs on a throwaway cluster of its own (``parkgate_faults``, port 54329), never on
the shared server. While the database is away every call raises
``StoreUnavailable`` within the pool timeout (never a raw psycopg error, never a
half-applied message); when it is back, the same Gateway object works again.
"""

from __future__ import annotations

import threading
import time

import psycopg

from parkgate import Gateway
from parkgate.clock import ManualClock
from parkgate.core.kinds import AskStatus, ReplyKind
from parkgate.store import StoreUnavailable

from ._support import (
    T0,
    StoreSpec,
    bounded,
    check_against_replay,
    interleaved_plan,
    park_conversations,
    run_in_threads,
    until_ok,
    wait_for_rows,
)
from .conftest import FaultsCluster


def test_stopped_postgres_gives_store_unavailable_and_the_same_gateway_recovers(
    faults_spec: StoreSpec, faults_lock: FaultsCluster, clock: ManualClock
) -> None:
    gateway = Gateway(store=faults_spec.store(timeout=1.5), clock=clock)
    try:
        asked = gateway.ask("pg-1", "Deploy?", ["Deploy", "Hold"], run_id="run-pg-1")
        assert asked.ask_id
        assert gateway.handle("pg-1", "nope", message_id="m-0").kind is ReplyKind.RETRY
        faults_lock.ctl("stop")
        try:
            for call in (
                lambda: gateway.handle("pg-1", "1", message_id="m-1"),
                lambda: gateway.get(asked.ask_id or ""),
                lambda: gateway.ask("pg-2", "Other?", ["A", "B"]),
            ):
                error = bounded(call)
                assert isinstance(error, StoreUnavailable), repr(error)
                assert not isinstance(error, psycopg.Error) and "unreachable" in str(error)
        finally:
            faults_lock.ctl("start")
        faults_lock.wait_ready()
        reply = until_ok(lambda: gateway.handle("pg-1", "1", message_id="m-1"))
        assert reply.kind is ReplyKind.SELECTED and reply.answer == "Deploy"
        assert gateway.handle("pg-1", "2", message_id="m-1") == reply  # applied once
        stored = gateway.get(asked.ask_id)
        assert (stored.status, stored.answer, stored.mismatches) == (AskStatus.ANSWERED, "Deploy", 0)
        rows = faults_spec.query("SELECT message_id FROM inbound_messages ORDER BY message_id")
        assert rows == [("m-0",), ("m-1",)]
    finally:
        gateway.close()


def test_a_postgres_restart_mid_stream_loses_and_duplicates_nothing(
    faults_spec: StoreSpec, faults_lock: FaultsCluster
) -> None:
    """4 clients stream messages; the cluster restarts under them; they re-send on 503-like refusals."""
    gateway = Gateway(store=faults_spec.store(timeout=1.5), clock=ManualClock(T0))
    try:
        faults_spec.instrument_commit_order()
        initial = park_conversations(gateway, 50, "pgr")
        plans = interleaved_plan(initial, 4, seed=77)
        window: list[float] = []

        def restart() -> None:
            wait_for_rows(faults_spec, "inbound_messages", 20)
            window.append(time.monotonic())
            faults_lock.ctl("restart")
            window.append(time.monotonic())

        restarter = threading.Thread(target=restart, daemon=True)
        restarter.start()
        sent = run_in_threads(gateway, plans, pace=0.04)
        restarter.join(120)
        assert len(window) == 2, "the restart did not finish"
        finishes = [s.finished for worker in sent for s in worker]
        assert min(finishes) < window[0] and max(finishes) > window[1], "the stream did not span the restart"
        check_against_replay(faults_spec, gateway, initial, plans, sent)
    finally:
        gateway.close()
