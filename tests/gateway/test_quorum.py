"""M-of-N quorum: a responder's selection is a vote (``voted``) until
``quorum`` distinct responders agree on one option, which closes the ask once as
``selected``; a later vote replaces an earlier one; any responder's cancel is a veto.
"""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

from parkgate import Gateway, ManualClock, ReplyKind
from parkgate.core.kinds import AskStatus

StoreLocation = Any
HOOK = "http://hooks.test/quorum"
ABC = ["U_A", "U_B", "U_C"]


def _votes(gateway: Gateway, ask_id: str) -> list[tuple[str, int, str]]:
    return [(vote.sender, vote.option_index, vote.answer) for vote in gateway.get(ask_id).votes]


def test_two_of_three_a_and_c_agree_and_select(gateway: Gateway, clock: ManualClock) -> None:
    ask_id = gateway.ask("c-q", "Deploy?", ["Deploy", "Hold"], responders=ABC, quorum=2).ask_id or ""
    first = gateway.handle("c-q", "1", sender="U_A")
    assert (first.kind, first.parked, first.text) == (
        ReplyKind.VOTED,
        True,
        'Vote taken: 1 of 2 votes for "Deploy" (option 1).',
    )
    clock.advance(timedelta(minutes=1))
    second = gateway.handle("c-q", "2", sender="U_B")
    assert (second.kind, second.text) == (ReplyKind.VOTED, 'Vote taken: 1 of 2 votes for "Hold" (option 2).')
    assert gateway.get(ask_id).is_open
    clock.advance(timedelta(minutes=1))
    third = gateway.handle("c-q", "1", sender="U_C")
    assert (third.kind, third.answer, third.option_index, third.parked) == (ReplyKind.SELECTED, "Deploy", 1, False)
    ask = gateway.get(ask_id)
    assert (ask.status, ask.outcome, ask.answer, ask.answered_by) == (AskStatus.ANSWERED, "selected", "Deploy", "U_C")
    assert _votes(gateway, ask_id) == [("U_A", 1, "Deploy"), ("U_B", 2, "Hold"), ("U_C", 1, "Deploy")]
    run = gateway.run(ask.run_id)
    assert run is not None and run.pending_ask_id is None


def test_a_changed_vote_replaces_the_earlier_one(gateway: Gateway) -> None:
    ask_id = gateway.ask("c-change", "Deploy?", ["Deploy", "Hold"], responders=ABC, quorum=2).ask_id or ""
    assert gateway.handle("c-change", "1", sender="U_A").kind is ReplyKind.VOTED
    assert gateway.handle("c-change", "Hold", sender="U_A").kind is ReplyKind.VOTED  # A now votes 2
    assert _votes(gateway, ask_id) == [("U_A", 2, "Hold")]
    # A's earlier vote for 1 no longer counts: B's 1 is one of two, not two.
    assert gateway.handle("c-change", "1", sender="U_B").kind is ReplyKind.VOTED
    assert gateway.handle("c-change", "1", sender="U_B").kind is ReplyKind.VOTED  # the same vote twice is one
    assert _votes(gateway, ask_id) == [("U_A", 2, "Hold"), ("U_B", 1, "Deploy")]
    closed = gateway.handle("c-change", "2", sender="U_C")
    assert (closed.kind, closed.answer) == (ReplyKind.SELECTED, "Hold")


def test_a_non_responder_neither_votes_nor_closes(gateway: Gateway) -> None:
    ask_id = gateway.ask("c-out", "Deploy?", ["Deploy", "Hold"], responders=ABC, quorum=2).ask_id or ""
    gateway.handle("c-out", "1", sender="U_A")
    for sender in ("U_Z", None):
        assert gateway.handle("c-out", "1", sender=sender).kind is ReplyKind.NOT_YOURS
    assert _votes(gateway, ask_id) == [("U_A", 1, "Deploy")]
    assert gateway.get(ask_id).is_open


def test_any_responders_cancel_is_a_veto(gateway: Gateway) -> None:
    ask_id = gateway.ask("c-veto", "Deploy?", ["Deploy", "Hold"], responders=ABC, quorum=3).ask_id or ""
    gateway.handle("c-veto", "1", sender="U_A")
    gateway.handle("c-veto", "1", sender="U_B")
    vetoed = gateway.handle("c-veto", "stop", sender="U_C")
    assert (vetoed.kind, vetoed.parked) == (ReplyKind.CANCELLED, False)
    ask = gateway.get(ask_id)
    assert (ask.status, ask.closed_by, ask.answered_by) == (AskStatus.CANCELLED, "U_C", None)
    assert len(ask.votes) == 2  # the votes cast before the veto are kept


def test_menu_reshows_with_the_vote_count_and_misses_count(gateway: Gateway) -> None:
    gateway.ask("c-menu", "Deploy?", ["Deploy", "Hold"], responders=ABC, quorum=2)
    empty = gateway.handle("c-menu", "menu", sender="U_A")
    assert empty.kind is ReplyKind.RESHOWN and empty.text.endswith("Votes so far (2 needed): none yet.")
    gateway.handle("c-menu", "2", sender="U_A")
    gateway.handle("c-menu", "1", sender="U_B")
    shown = gateway.handle("c-menu", "/menu", sender="U_C")
    assert shown.text.startswith("Deploy?\n\n1. Deploy\n2. Hold")
    assert shown.text.endswith("Votes so far (2 needed): 1. Deploy: 1; 2. Hold: 1.")
    kinds = [gateway.handle("c-menu", "maybe", sender="U_C").kind for _ in range(3)]
    assert kinds == [ReplyKind.RETRY, ReplyKind.RETRY, ReplyKind.ESCALATED]


def test_expiry_with_partial_votes_closes_expired_and_keeps_them(gateway: Gateway, clock: ManualClock) -> None:
    ask_id = gateway.ask("c-exp", "Deploy?", ["Deploy", "Hold"], ttl=60, responders=ABC, quorum=2).ask_id or ""
    gateway.handle("c-exp", "1", sender="U_A")
    clock.advance(timedelta(seconds=30))
    gateway.handle("c-exp", "2", sender="U_B")  # a vote touches the ask: its TTL runs from here
    clock.advance(timedelta(seconds=59))
    assert gateway.get(ask_id).is_open
    clock.advance(timedelta(seconds=2))
    ask = gateway.get(ask_id)
    assert (ask.status, ask.answered_by, ask.closed_by, ask.answer) == (AskStatus.EXPIRED, None, None, None)
    assert _votes(gateway, ask_id) == [("U_A", 1, "Deploy"), ("U_B", 2, "Hold")]


def test_a_quorum_close_is_one_close(gateway: Gateway, store_location: StoreLocation) -> None:
    ask_id = gateway.ask("c-once", "Deploy?", ["Deploy", "Hold"], responders=ABC, quorum=2, callback_url=HOOK).ask_id
    gateway.handle("c-once", "1", sender="U_A")
    assert store_location.raw_query("SELECT count(*) FROM outbox")[0][0] == 0  # a vote closes nothing
    gateway.handle("c-once", "1", sender="U_B")
    assert gateway.handle("c-once", "1", sender="U_C").kind is ReplyKind.PASS  # closed: nothing parked
    rows = store_location.raw_query("SELECT ask_id, payload FROM outbox")
    assert [row[0] for row in rows] == [ask_id]
    payload = json.loads(rows[0][1])["data"]
    assert (payload["status"], payload["answered_by"], payload["quorum"]) == ("answered", "U_B", 2)
    assert [vote["sender"] for vote in payload["votes"]] == ["U_A", "U_B"]


def test_redelivered_votes_return_the_first_reply_and_do_not_count_twice(gateway: Gateway) -> None:
    ask_id = gateway.ask("c-redo", "Deploy?", ["Deploy", "Hold"], responders=ABC, quorum=2).ask_id or ""
    first = gateway.handle("c-redo", "1", message_id="m-a", sender="U_A")
    assert gateway.handle("c-redo", "2", message_id="m-a", sender="U_A") == first
    assert _votes(gateway, ask_id) == [("U_A", 1, "Deploy")]
