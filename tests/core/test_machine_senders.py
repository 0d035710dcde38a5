"""The state machine with senders, as properties: every input from anyone ends in a named
kind, nothing but ``pass`` routes onward, an ask with responders is never changed by
anyone else, and a quorum ask closes once, when ``quorum`` responders agree."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from parkgate.core.kinds import AskKind, AskStatus, ReplyKind
from parkgate.core.machine import step
from parkgate.core.model import Ask

T0 = datetime(2026, 1, 1, 9, 0, tzinfo=UTC)
TTL = timedelta(hours=6)
OPTIONS = ("Deploy", "Hold", "Menu")
RESPONDERS = ("U_A", "U_B", "U_C")
NAMED_KINDS = {kind for kind in ReplyKind if kind is not ReplyKind.ASKED}
INPUTS = st.one_of(
    st.sampled_from(["1", "2", "3", "4", "deploy", "hold", "menu", "/menu", "cancel", "/stop", "quit", "", " "]),
    st.text(max_size=12),
)
SENDERS = st.one_of(st.none(), st.sampled_from([*RESPONDERS, "U_Z", "u_a"]))


def open_ask(kind: AskKind, responders: tuple[str, ...], quorum: int) -> Ask:
    return Ask(
        id="ask-1",
        conversation_id="conv-1",
        run_id="run-1",
        kind=kind,
        prompt="Deploy?",
        options=OPTIONS if kind is AskKind.CHOICE else (),
        status=AskStatus.OPEN,
        asked_at=T0,
        last_touched=T0,
        ttl_seconds=TTL.total_seconds(),
        responders=responders,
        quorum=quorum,
    )


ASKS = st.one_of(
    st.builds(open_ask, st.just(AskKind.CHOICE), st.just(()), st.just(1)),
    st.builds(open_ask, st.just(AskKind.TEXT), st.just(()), st.just(1)),
    st.builds(open_ask, st.just(AskKind.TEXT), st.just(RESPONDERS[:2]), st.just(1)),
    st.builds(open_ask, st.just(AskKind.CHOICE), st.just(RESPONDERS), st.sampled_from([1, 2, 3])),
)


@settings(max_examples=300, deadline=None)
@given(ASKS, st.lists(st.tuples(INPUTS, SENDERS, st.integers(0, 8 * 3600)), max_size=12))
def test_every_input_from_anyone_ends_in_a_named_kind_and_others_change_nothing(
    start: Ask, messages: list[tuple[str, str | None, int]]
) -> None:
    ask, now = start, T0
    for text, sender, seconds in messages:
        now += timedelta(seconds=seconds)
        result = step(ask, text, now, sender=sender)
        assert result.kind in NAMED_KINDS and (result.kind is not ReplyKind.PASS or result.expired)
        if result.expired:
            assert result.ask.status is AskStatus.EXPIRED and result.ask.votes == ask.votes
            return
        if ask.responders and sender not in ask.responders:
            assert result.kind is ReplyKind.NOT_YOURS and result.ask == ask and result.parked
            assert result.text.startswith("This question is for ")
        else:
            assert result.kind is not ReplyKind.NOT_YOURS
        voters = {vote.sender for vote in result.ask.votes}
        assert voters <= set(ask.responders) and len(voters) == len(result.ask.votes)  # one current vote each
        if result.kind is ReplyKind.SELECTED and ask.responders:
            agreeing = [vote for vote in result.ask.votes if vote.option_index == result.option_index]
            assert len(agreeing) == ask.quorum and result.ask.answered_by == sender
        if result.kind is ReplyKind.VOTED:
            assert result.parked and result.ask.status is AskStatus.OPEN and ask.quorum > 1
        if not result.parked:
            assert result.ask.closed_by in (None, sender) and result.ask.answered_by in (None, sender)
            return
        ask = result.ask


@settings(max_examples=100, deadline=None)
@given(st.permutations(RESPONDERS), st.sampled_from(["1", "2", "3"]))
def test_quorum_responders_agreeing_close_it_at_the_quorumth_vote(order: list[str], choice: str) -> None:
    ask, now = open_ask(AskKind.CHOICE, RESPONDERS, 3), T0
    kinds = []
    for minute, sender in enumerate(order, start=1):
        result = step(ask, choice, now + timedelta(minutes=minute), sender=sender)
        kinds.append(result.kind)
        ask = result.ask
    assert kinds == [ReplyKind.VOTED, ReplyKind.VOTED, ReplyKind.SELECTED]
    assert [vote.sender for vote in ask.votes] == order and ask.answered_by == order[-1]
