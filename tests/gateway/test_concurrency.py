"""Two gateways racing on the same conversations: the store serialises them.

Each test opens two :class:`Gateway` objects with stores of their own (two PostgreSQL
pools on one schema, or two SQLite stores on one file) and drives them from several
threads at once. The workloads are chosen so the outcome can be checked without
knowing the commit order:

- the same ``message_id`` sent by both at once is applied exactly once, and both get
  the first reply;
- racing asks on one conversation park exactly one; racing replacements leave one open;
- a message racing a workflow step meets the phase that step parked;
- a read that sees an ask expired never overwrites an answer given meanwhile.

Messages racing on one conversation (misses counted once, one of several selections
wins) are checked against a replay of the database's commit order, with 2, 4 and 8
threads or processes, in ``tests/reliability/test_races.py``.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from functools import partial
from typing import TYPE_CHECKING, Any

import pytest

from parkgate import AskAlreadyOpen, AskStatus, Gateway, ManualClock, Reply, ReplyKind

if TYPE_CHECKING:
    from conftest import MakeGateway, StoreLocation

CONVERSATIONS = 6
THREADS_PER_GATEWAY = 2
JUNK_PER_THREAD = 8
RACE_ROUNDS = 12


def _race(calls: Sequence[Callable[[], Any]], timeout: float = 120.0) -> list[Any]:
    """Run ``calls`` in threads released together; their results (or exceptions), in order."""
    barrier = threading.Barrier(len(calls))
    results: list[Any] = [None] * len(calls)

    def run(index: int, call: Callable[[], Any]) -> None:
        barrier.wait(timeout)
        try:
            results[index] = call()
        except BaseException as error:
            results[index] = error

    threads = [threading.Thread(target=run, args=(i, call)) for i, call in enumerate(calls)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout)
    assert not any(thread.is_alive() for thread in threads), "a worker hung"
    return results


def _no_errors(results: Sequence[Any]) -> None:
    errors = [r for r in results if isinstance(r, BaseException)]
    assert not errors, f"workers failed: {errors!r}"


pytestmark = pytest.mark.engines(
    "two gateways with connections of their own race on one database: the engine's locking serialises them"
)


@pytest.fixture
def two_gateways(store_location: StoreLocation, clock: ManualClock, make_gateway: MakeGateway) -> list[Gateway]:
    """Two gateways, each with its own store (pool / connections), on one database."""
    return [make_gateway(store_location, clock) for _ in range(2)]


def test_the_same_message_id_sent_by_both_at_once_is_applied_once(two_gateways: list[Gateway]) -> None:
    first, second = two_gateways
    for round_ in range(RACE_ROUNDS):
        conversation = f"race-dup-{round_}"
        parked = first.ask(conversation, "Deploy?", ["Yes", "No"])
        text = "junk" if round_ % 2 == 0 else "2"
        message_id = f"delivery-{round_}"
        replies = _race([partial(gw.handle, conversation, text, message_id=message_id) for gw in two_gateways * 2])
        _no_errors(replies)
        assert all(r == replies[0] for r in replies), f"round {round_}: deliveries got different replies"
        ask = first.get(parked.ask_id or "")
        if text == "junk":
            assert replies[0].kind is ReplyKind.RETRY
            assert ask.mismatches == 1 and ask.is_open  # applied once, not four times
        else:
            assert replies[0].kind is ReplyKind.SELECTED and replies[0].answer == "No"
            assert ask.status is AskStatus.ANSWERED
        # Later deliveries of the same id still get the first reply.
        assert second.handle(conversation, "whatever", message_id=message_id) == replies[0]


def test_racing_asks_on_one_conversation_park_exactly_one(two_gateways: list[Gateway]) -> None:
    first, second = two_gateways
    for round_ in range(RACE_ROUNDS):
        conversation = f"race-park-{round_}"
        results = _race(
            [
                partial(first.ask, conversation, "From the first?", ["A", "B"]),
                partial(second.ask, conversation, "From the second?", ["C", "D"]),
            ]
        )
        parked = [r for r in results if isinstance(r, Reply)]
        refused = [r for r in results if isinstance(r, AskAlreadyOpen)]
        assert len(parked) == 1 and len(refused) == 1, f"round {round_}: {results!r}"
        assert refused[0].ask_id == parked[0].ask_id
        open_here = [a for a in first.audit() if a.conversation_id == conversation]
        assert [a.id for a in open_here] == [parked[0].ask_id]


def test_racing_replacements_leave_one_open_ask(two_gateways: list[Gateway]) -> None:
    first, second = two_gateways
    conversation = "race-replace"
    first.ask(conversation, "Original?", ["A", "B"])
    results = _race(
        [
            partial(gw.ask, conversation, f"Replacement {n}?", ["A", "B"], replace=True)
            for n, gw in enumerate(two_gateways * 2)
        ]
    )
    _no_errors(results)
    open_here = [a for a in second.audit() if a.conversation_id == conversation]
    assert len(open_here) == 1
    assert open_here[0].id in {r.ask_id for r in results}
    closed = [first.get(r.ask_id) for r in results if r.ask_id != open_here[0].id]
    assert all((a.status, a.outcome) == (AskStatus.CANCELLED, "replaced") for a in closed)


def test_a_message_racing_a_workflow_step_meets_the_next_phase(two_gateways: list[Gateway]) -> None:
    """A message ordered after a selection must see the ask that selection parked, never ``pass``."""
    first, second = two_gateways
    outcomes: Counter[tuple[ReplyKind, ReplyKind]] = Counter()
    for round_ in range(RACE_ROUNDS * 2):
        conversation = f"race-flow-{round_}"
        first.start(conversation, "uml")
        chose, said = _race(
            [
                partial(first.handle, conversation, "1"),
                partial(second.handle, conversation, "A user logs in"),
            ]
        )
        _no_errors([chose, said])
        outcomes[(chose.kind, said.kind)] += 1
        # Either order is fine; a message that found nothing parked is not.
        assert chose.kind is ReplyKind.SELECTED, (round_, chose.kind, said.kind)
        assert said.kind in (ReplyKind.RETRY, ReplyKind.ANSWERED), (round_, chose.kind, said.kind)
        open_here = [a for a in first.audit() if a.conversation_id == conversation]
        if said.kind is ReplyKind.ANSWERED:  # the text came second: it answered the describe phase
            assert open_here == [] and "@startuml" in said.text
        else:  # the text came first: a miss on the diagram menu, then the selection parked phase 2
            assert [a.phase for a in open_here] == ["describe"]


def test_an_audit_read_never_overwrites_an_answer_given_meanwhile(
    store_location: StoreLocation, make_gateway: MakeGateway
) -> None:
    """Two workers whose clocks disagree: one sees the ask expired, the other answers it.

    Whichever commits first wins, and the other must see that: an answered ask is never
    turned into an expired one afterwards (and an expired one is never answered).
    """
    start = datetime(2026, 2, 1, 12, 0, tzinfo=UTC)
    behind = make_gateway(store_location, ManualClock(start + timedelta(hours=1)))
    ahead = make_gateway(store_location, ManualClock(start + timedelta(hours=7)))
    setter = make_gateway(store_location, ManualClock(start))
    for round_ in range(RACE_ROUNDS * 2):
        conversation = f"race-expire-{round_}"
        parked = setter.ask(conversation, "Deploy?", ["Yes", "No"], ttl=timedelta(hours=6))
        reply, _ = _race([partial(behind.handle, conversation, "yes"), ahead.open_asks])
        _no_errors([reply])
        ask = setter.get(parked.ask_id or "")
        if reply.kind is ReplyKind.SELECTED:
            assert (ask.status, ask.answer) == (AskStatus.ANSWERED, "Yes"), f"round {round_}: answer lost"
        else:
            assert reply.kind is ReplyKind.PASS and ask.status is AskStatus.EXPIRED, f"round {round_}"
