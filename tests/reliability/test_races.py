"""Races: 2, 4 and 8 workers (threads, and processes with their own Gateway) on 50 conversations.

Each worker sends its share of every conversation's messages; all workers walk the
conversations in the same order, meeting at a barrier before every 5th conversation,
so they collide on one conversation at the same moment. The result must be
explained by one sequential history, the order the database committed: see
:func:`._support.check_against_replay`.
"""

from __future__ import annotations

import pytest

from ._support import (
    StoreSpec,
    check_against_replay,
    interleaved_plan,
    park_conversations,
    run_in_processes,
    run_in_threads,
)

CONVERSATIONS = 50
LOCKSTEP = 5  # all workers meet at a barrier before every 5th conversation


@pytest.mark.parametrize("workers", [2, 4, 8])
def test_threads_on_one_gateway_match_a_sequential_replay(spec: StoreSpec, workers: int) -> None:
    gateway = spec.gateway()
    try:
        spec.instrument_commit_order()
        initial = park_conversations(gateway, CONVERSATIONS, f"t{workers}")
        plans = interleaved_plan(initial, workers, seed=100 + workers)
        sent = run_in_threads(gateway, plans, lockstep=LOCKSTEP)
        report = check_against_replay(spec, gateway, initial, plans, sent)
    finally:
        gateway.close()
    # The race was real: messages to one conversation were in flight at the same time.
    assert report.overlaps > 0
    assert sum(report.outcomes.values()) == CONVERSATIONS


@pytest.mark.parametrize("workers", [2, 4, 8])
def test_processes_with_their_own_gateways_match_a_sequential_replay(spec: StoreSpec, workers: int) -> None:
    gateway = spec.gateway()
    try:
        spec.instrument_commit_order()
        initial = park_conversations(gateway, CONVERSATIONS, f"p{workers}")
        plans = interleaved_plan(initial, workers, seed=200 + workers)
        sent = run_in_processes(spec, plans, lockstep=LOCKSTEP)
        report = check_against_replay(spec, gateway, initial, plans, sent)
    finally:
        gateway.close()
    assert report.overlaps > 0
    assert sum(report.outcomes.values()) == CONVERSATIONS
