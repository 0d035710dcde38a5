"""Who may answer: an ask with ``responders`` is answered, cancelled and
touched only by them; anyone else's message is ``not_yours`` and changes nothing; who
answered and who closed it are kept with the ask, in the database.
"""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import pytest

from parkgate import Gateway, InputError, ManualClock, ReplyKind, ask_to_dict
from parkgate.core.kinds import AskStatus
from parkgate.store import Store

StoreLocation = MakeGateway = Any
HOOK = "http://hooks.test/who"
FOR_BOTH = "This question is for U_ALICE or U_BOB."


def _state(gateway: Gateway, ask_id: str) -> tuple[Any, ...]:
    ask = gateway.get(ask_id)
    return (ask.status, ask.mismatches, ask.last_touched, ask.votes, ask.answered_by, ask.closed_by)


def test_an_ask_for_alice_is_not_bobs_and_alice_selects_it(gateway: Gateway, clock: ManualClock) -> None:
    parked = gateway.ask("c-who", "Deploy?", ["Deploy", "Hold"], responders=["U_ALICE"])
    ask_id = parked.ask_id or ""
    before = _state(gateway, ask_id)
    clock.advance(timedelta(minutes=5))
    bounced = gateway.handle("c-who", "1", sender="U_BOB")
    assert (bounced.kind, bounced.text, bounced.parked, bounced.ask_id) == (
        ReplyKind.NOT_YOURS,
        "This question is for U_ALICE.",
        True,
        ask_id,
    )
    assert not bounced.routes_onward
    assert _state(gateway, ask_id) == before  # status, mismatches and last_touched untouched
    clock.advance(timedelta(minutes=5))
    chosen = gateway.handle("c-who", "1", sender="U_ALICE")
    assert (chosen.kind, chosen.answer, chosen.option_index) == (ReplyKind.SELECTED, "Deploy", 1)
    ask = gateway.get(ask_id)
    answered = (ask.status, ask.outcome, ask.answered_by, ask.closed_by)
    assert answered == (AskStatus.ANSWERED, "selected", "U_ALICE", None)


def test_bobs_cancel_is_not_yours_and_alices_cancel_closes_it_by_her(gateway: Gateway) -> None:
    ask_id = gateway.ask("c-veto", "Deploy?", ["Deploy", "Hold"], responders=["U_ALICE"]).ask_id or ""
    assert gateway.handle("c-veto", "cancel", sender="U_BOB").kind is ReplyKind.NOT_YOURS
    assert gateway.get(ask_id).is_open
    cancelled = gateway.handle("c-veto", "cancel", sender="U_ALICE")
    assert cancelled.kind is ReplyKind.CANCELLED and not cancelled.parked
    ask = gateway.get(ask_id)
    assert (ask.status, ask.closed_by, ask.answered_by) == (AskStatus.CANCELLED, "U_ALICE", None)
    run = gateway.run(ask.run_id)
    assert run is not None and run.outcome == "cancelled"


@pytest.mark.parametrize("text", ["1", "Deploy", "hold", "menu", "/menu", "cancel", "/stop", "garbage", "", "  "])
@pytest.mark.parametrize("sender", ["U_BOB", None, "u_alice", "U_ALICE "])
def test_anyone_elses_message_is_not_yours_whatever_it_says(
    gateway: Gateway, clock: ManualClock, text: str, sender: str | None
) -> None:
    ask_id = gateway.ask("c-any", "Deploy?", ["Deploy", "Hold"], responders=["U_ALICE", "U_BOB"]).ask_id or ""
    if sender == "U_BOB":
        sender = "U_CAROL"
    gateway.handle("c-any", "nonsense", sender="U_ALICE")  # one miss, so the counter has a value to keep
    before = _state(gateway, ask_id)
    clock.advance(timedelta(minutes=1))
    reply = gateway.handle("c-any", text, sender=sender)
    assert (reply.kind, reply.text, reply.parked) == (ReplyKind.NOT_YOURS, FOR_BOTH, True)
    assert (reply.answer, reply.option_index, reply.expired_ask_id) == (None, None, None)
    assert _state(gateway, ask_id) == before
    assert before[1] == 1  # not a miss: the responder's one miss is all there is


def test_a_responders_misses_count_as_today(gateway: Gateway) -> None:
    gateway.ask("c-miss", "Deploy?", ["Deploy", "Hold"], responders=["U_ALICE"])
    kinds = [gateway.handle("c-miss", "what", sender="U_ALICE").kind for _ in range(3)]
    assert kinds == [ReplyKind.RETRY, ReplyKind.RETRY, ReplyKind.ESCALATED]
    assert gateway.handle("c-miss", "menu", sender="U_ALICE").kind is ReplyKind.RESHOWN


def test_an_ask_without_responders_is_anyones_and_records_the_sender(gateway: Gateway) -> None:
    first = gateway.ask("c-open", "Deploy?", ["Deploy", "Hold"]).ask_id or ""
    assert gateway.handle("c-open", "2", sender="U_ZED").kind is ReplyKind.SELECTED
    ask = gateway.get(first)
    assert (ask.answered_by, ask.responders, ask.quorum, ask.votes) == ("U_ZED", (), 1, ())
    second = gateway.ask("c-open", "Name?", kind="text").ask_id or ""
    assert gateway.handle("c-open", "Ada").kind is ReplyKind.ANSWERED  # no sender: still anyone's
    assert gateway.get(second).answered_by is None
    third = gateway.ask("c-open", "Deploy?", ["Deploy", "Hold"]).ask_id or ""
    assert gateway.handle("c-open", "/stop", sender="U_ZED").kind is ReplyKind.CANCELLED
    assert gateway.get(third).closed_by == "U_ZED"


def test_a_text_ask_takes_its_responders_answer_only(gateway: Gateway) -> None:
    ask_id = gateway.ask("c-text", "Why?", kind="text", responders=["U_ALICE"]).ask_id or ""
    assert gateway.handle("c-text", "because", sender="U_BOB").kind is ReplyKind.NOT_YOURS
    answered = gateway.handle("c-text", "because", sender="U_ALICE")
    assert (answered.kind, answered.answer) == (ReplyKind.ANSWERED, "because")
    assert gateway.get(ask_id).answered_by == "U_ALICE"


def test_a_redelivered_not_yours_returns_the_same_reply(gateway: Gateway) -> None:
    ask_id = gateway.ask("c-redo", "Deploy?", ["Deploy", "Hold"], responders=["U_ALICE", "U_BOB"]).ask_id or ""
    first = gateway.handle("c-redo", "1", message_id="m-1", sender="U_EVE")
    assert first.kind is ReplyKind.NOT_YOURS
    assert gateway.handle("c-redo", "1", message_id="m-1", sender="U_EVE") == first
    gateway.handle("c-redo", "1", sender="U_BOB")  # closes it
    assert gateway.handle("c-redo", "1", message_id="m-1", sender="U_EVE") == first  # still the first reply
    assert gateway.get(ask_id).answered_by == "U_BOB"


def test_an_expired_ask_read_by_anyone_closes_as_expired(gateway: Gateway, clock: ManualClock) -> None:
    ask_id = gateway.ask("c-late", "Deploy?", ["Deploy", "Hold"], ttl=60, responders=["U_ALICE"]).ask_id or ""
    clock.advance(timedelta(seconds=61))
    reply = gateway.handle("c-late", "1", sender="U_BOB")  # the read enforces the TTL for everyone
    assert (reply.kind, reply.expired_ask_id, reply.parked) == (ReplyKind.PASS, ask_id, False)
    ask = gateway.get(ask_id)
    assert (ask.status, ask.answered_by, ask.closed_by) == (AskStatus.EXPIRED, None, None)


def test_an_operators_cancel_is_closed_by_operator(gateway: Gateway) -> None:
    ask_id = gateway.ask("c-op", "Deploy?", ["Deploy", "Hold"], responders=["U_ALICE"]).ask_id or ""
    closed = gateway.cancel(ask_id)
    assert (closed.status, closed.closed_by) == (AskStatus.CANCELLED, "operator")
    assert gateway.get(ask_id).closed_by == "operator"
    replaced = gateway.ask("c-op", "Deploy?", ["Deploy", "Hold"]).ask_id or ""
    gateway.ask("c-op", "Deploy again?", ["Deploy", "Hold"], replace=True)
    assert gateway.get(replaced).closed_by is None  # a replaced ask was closed by no one's message


def test_the_who_fields_are_in_the_asks_json_and_its_callback(gateway: Gateway, store_location: StoreLocation) -> None:
    ask_id = gateway.ask("c-json", "Deploy?", ["Deploy", "Hold"], responders=["U_ALICE"], callback_url=HOOK).ask_id
    gateway.handle("c-json", "2", sender="U_ALICE")
    shown = ask_to_dict(gateway.get(ask_id or ""))
    assert shown["responders"] == ["U_ALICE"] and shown["quorum"] == 1
    assert (shown["answered_by"], shown["closed_by"]) == ("U_ALICE", None)
    assert [(vote["sender"], vote["option_index"], vote["answer"]) for vote in shown["votes"]] == [
        ("U_ALICE", 2, "Hold")
    ]
    rows = store_location.raw_query("SELECT payload FROM outbox")
    payload = json.loads(rows[0][0])["data"]
    assert {key: payload[key] for key in ("responders", "quorum", "votes", "answered_by", "closed_by")} == {
        key: shown[key] for key in ("responders", "quorum", "votes", "answered_by", "closed_by")
    }


def test_another_gateway_on_the_database_sees_the_same(
    make_gateway: MakeGateway, store_location: StoreLocation, clock: ManualClock
) -> None:
    one, two = make_gateway(store_location, clock), make_gateway(store_location, clock)
    ask_id = one.ask("c-two", "Deploy?", ["Deploy", "Hold"], responders=["A", "B", "C"], quorum=2).ask_id or ""
    assert one.handle("c-two", "1", sender="A").kind is ReplyKind.VOTED
    seen = two.get(ask_id)
    assert (seen.responders, seen.quorum, [(v.sender, v.option_index) for v in seen.votes]) == (
        ("A", "B", "C"),
        2,
        [("A", 1)],
    )
    assert two.handle("c-two", "1", sender="Z").kind is ReplyKind.NOT_YOURS
    assert two.handle("c-two", "Deploy", sender="B").kind is ReplyKind.SELECTED
    assert one.get(ask_id).answered_by == "B"


def test_a_workflows_phases_are_for_its_responders(gateway: Gateway) -> None:
    started = gateway.start("c-flow", "uml", responders=["U_ALICE"])
    assert gateway.get(started.ask_id or "").responders == ("U_ALICE",)
    assert gateway.handle("c-flow", "1", sender="U_BOB").kind is ReplyKind.NOT_YOURS
    moved = gateway.handle("c-flow", "1", sender="U_ALICE")
    assert moved.next_ask is not None
    following = gateway.get(moved.next_ask.ask_id or "")
    assert (following.responders, following.is_open) == (("U_ALICE",), True)


@pytest.mark.parametrize(
    ("sender", "names"),
    [
        ("", "sender is empty"),
        ("x" * 201, "sender is 201 characters"),
        ("U\x00A", "sender contains a control character"),
        ("U\x07A", "sender contains a control character"),
        ("U\ud800", "sender is not valid Unicode"),
        (42, "sender must be a string"),
    ],
)
def test_a_bad_sender_is_refused_before_anything_is_read_or_written(
    gateway: Gateway, clock: ManualClock, sender: object, names: str
) -> None:
    gateway.ask("c-bad", "Deploy?", ["Deploy", "Hold"], ttl=60)
    clock.advance(timedelta(seconds=61))  # a read would close it as expired
    with pytest.raises(InputError, match=names):
        gateway.handle("c-bad", "1", sender=sender)  # type: ignore[arg-type]
    assert gateway.parked("c-bad") is not None  # nothing was read: it is still open as stored


@pytest.mark.parametrize(
    ("options", "names"),
    [
        ({"responders": []}, "responders is empty"),
        ({"responders": "U_ALICE"}, "responders must be a list"),
        ({"responders": ["U_ALICE", "U_ALICE"]}, "responders names 'U_ALICE' twice"),
        ({"responders": ["U_ALICE", ""]}, "responders item 2 is empty"),
        ({"responders": ["U\x00"]}, "responders item 1 contains a control character"),
        ({"responders": [f"U{n}" for n in range(101)]}, "the limit is 100"),
        ({"quorum": 2}, "quorum needs responders"),
        ({"quorum": 1}, "quorum needs responders"),
        ({"responders": ["A", "B"], "quorum": 0}, "quorum must be at least 1"),
        ({"responders": ["A", "B"], "quorum": 3}, "quorum of 3 is more than the 2 responders"),
        ({"responders": ["A", "B"], "quorum": True}, "quorum must be a whole number"),
        ({"responders": ["A", "B"], "quorum": 1.0}, "quorum must be a whole number"),
    ],
)
def test_bad_responders_or_quorum_park_nothing(gateway: Gateway, store: Store, options: Any, names: str) -> None:
    with pytest.raises(InputError, match=names):
        gateway.ask("c-opt", "Deploy?", ["Deploy", "Hold"], **options)
    assert gateway.parked("c-opt") is None
    with pytest.raises(InputError, match=names):
        gateway.ask_from_text("c-opt", "[[ask]]\nDeploy?\n1. Yes\n2. No\n[[/ask]]", **options)
    with pytest.raises(InputError, match=names):
        gateway.start("c-opt", "uml", **options)
    assert gateway.parked("c-opt") is None


def test_a_text_ask_takes_quorum_1_only(gateway: Gateway) -> None:
    with pytest.raises(InputError, match="a text ask takes quorum 1"):
        gateway.ask("c-tq", "Why?", kind="text", responders=["A", "B"], quorum=2)
    with pytest.raises(InputError, match="a text ask takes quorum 1"):
        gateway.ask_from_text("c-tq", '{"prompt": "Why?", "kind": "text"}', responders=["A", "B"], quorum=2)
    assert gateway.parked("c-tq") is None
    assert gateway.ask("c-tq", "Why?", kind="text", responders=["A", "B"], quorum=1).kind is ReplyKind.ASKED
