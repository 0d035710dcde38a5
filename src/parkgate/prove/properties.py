"""Every failure of one observed step against the oracle and the six properties.

The properties (docs/contract.md, "The two properties", checked transition by
transition):

1. no path returns ``pass`` while the ask is open and unexpired;
2. ``/cancel`` (every slash cancel word) leaves from every state, both kinds, with
   collisions: the ask closes and the conversation is unparked;
3. a miss gets ``retry`` below miss N and ``escalated`` from miss N on (exactly at N);
4. ``menu``/``options`` never advance the mismatch count;
5. every closed ask is closed as exactly one of answered/cancelled/expired, and it is
   open exactly when the reply says it is parked;
6. an expired ask returns ``pass`` (through a gateway: with ``expired_ask_id``) and
   never selects;
7. an ask with responders is never answered, cancelled or touched by anyone else: a
   message from a non-responder, or with no sender, gets ``not_yours`` (a line naming
   the responders) and leaves the ask exactly as it was (status, mismatches,
   ``last_touched``, votes), unless the ask has expired, which any read enforces;
8. a quorum ask keeps one current vote per responder, and only responders' votes; it
   is ``voted`` and open until ``quorum`` votes agree, and ``selected`` exactly then; and
   it always closes (:func:`quorum_closes`, over a whole run): a responder's cancel
   word vetoes it, a second agreeing vote selects it, and past its TTL it expires;

and input refused before the machine leaves the ask exactly as it was.
"""

from __future__ import annotations

from collections.abc import Iterable

from parkgate.core import phrases
from parkgate.core.kinds import AskKind, AskStatus, ReplyKind
from parkgate.core.phrases import CANCEL_WORDS, CONTROL_WORDS

from .cases import Case, Sender, Who
from .oracle import CLOSING_STATUS, Expected, expected
from .outcome import REFUSED, Outcome


def differs(label: str, field_name: str, want: object, got: object) -> list[str]:
    """A one-item failure list when ``got`` is not ``want``, else nothing."""
    if want == got:
        return []
    return [f"{label}: {field_name} expected {want!r}, got {got!r}"]


def verify(case: Case, got: Outcome, escalate_after: int) -> list[str]:
    """Every failure of ``got`` against the oracle and the properties of one transition."""
    label = case.describe()
    return [
        *_against_oracle(case, got, escalate_after, label),
        *_no_pass_while_open(case, got, label),
        *_slash_cancel_leaves(case, got, label),
        *_misses_escalate_at_n(case, got, escalate_after, label),
        *_closed_exactly_once(case, got, label),
        *_expired_passes(case, got, label),
        *_text_control_word_is_data(case, got, label),
        *_others_change_nothing(case, got, label),
        *_votes_are_responders(case, got, label),
    ]


def may_answer(case: Case) -> bool:
    """The case's sender may act on its ask: anyone may on an ask without responders."""
    return not case.who.responders or case.sender.id in case.who.responders


def oracle_for(case: Case, escalate_after: int) -> Expected:
    """What the oracle says the case's input must do to the case's ask."""
    return expected(
        case.options,
        case.message,
        mismatches=case.mismatches,
        escalate_after=escalate_after,
        expired=case.expired,
        responders=case.who.responders,
        quorum=case.who.quorum,
        votes=[(vote.sender, vote.option_index) for vote in case.votes],
        sender=case.sender.id,
    )


def _against_oracle(case: Case, got: Outcome, escalate_after: int, label: str) -> list[str]:
    want = oracle_for(case, escalate_after)
    want_kind = REFUSED if want.kind is None else want.kind.value
    failures = differs(label, "reply kind", want_kind, got.kind_name)
    failures += differs(label, "status", want.status.value, got.status.value)
    failures += differs(label, "mismatches", want.mismatches, got.mismatches)
    if want.kind is not None:
        failures += differs(label, "answer", want.answer, got.answer)
        failures += differs(label, "option_index", want.option_index, got.option_index)
    failures += differs(label, "votes", want.votes, got.votes)
    failures += differs(label, "answered_by", want.answered_by, got.answered_by)
    failures += differs(label, "closed_by", want.closed_by, got.closed_by)
    if want.unchanged and not got.unchanged:
        failures.append(f"{label}: the ask changed, and the oracle says it must stay exactly as it was")
    if got.kind is None and not got.unchanged:
        failures.append(f"{label}: a refused input changed the ask")
    return failures


def _no_pass_while_open(case: Case, got: Outcome, label: str) -> list[str]:
    if not case.expired and got.kind is ReplyKind.PASS:
        return [f"{label}: property 1: pass while the ask was open and unexpired"]
    return []


def _slash_cancel_leaves(case: Case, got: Outcome, label: str) -> list[str]:
    message = case.message
    if not (isinstance(message, str) and message.startswith("/") and message[1:] in CANCEL_WORDS):
        return []
    if not may_answer(case):  # property 7's: someone else's cancel word leaves nothing
        return []
    failures = []
    if got.parked or got.status is AskStatus.OPEN:
        failures.append(f"{label}: property 2: a slash cancel left the conversation parked")
    if not case.expired and got.kind is not ReplyKind.CANCELLED:
        failures.append(f"{label}: property 2: a slash cancel replied {got.kind_name}, not cancelled")
    return failures


def _misses_escalate_at_n(case: Case, got: Outcome, escalate_after: int, label: str) -> list[str]:
    failures = []
    if got.kind in (ReplyKind.RETRY, ReplyKind.ESCALATED):
        miss = case.mismatches + 1
        right = ReplyKind.ESCALATED if miss >= escalate_after else ReplyKind.RETRY
        if got.kind is not right:
            failures.append(f"{label}: property 3: miss {miss} of N={escalate_after} got {got.kind_name}")
        if got.mismatches != miss:
            failures.append(f"{label}: property 3: a miss left the count at {got.mismatches}, not {miss}")
        named = got.text is not None and phrases.EXITS_HINT in got.text and str(miss) in got.text
        if got.kind is ReplyKind.ESCALATED and got.text is not None and not named:
            failures.append(f"{label}: property 3: the escalated line does not count {miss} tries and name the exits")
    if got.kind is ReplyKind.RESHOWN and got.mismatches != case.mismatches:
        failures.append(f"{label}: property 4: menu moved the count {case.mismatches} -> {got.mismatches}")
    return failures


def _closed_exactly_once(case: Case, got: Outcome, label: str) -> list[str]:
    failures = []
    if got.parked != (got.status is AskStatus.OPEN):
        failures.append(f"{label}: property 5: parked={got.parked} but the ask is {got.status.value}")
    if got.kind in CLOSING_STATUS and got.status is not CLOSING_STATUS[got.kind]:
        failures.append(f"{label}: property 5: reply {got.kind_name} closed the ask as {got.status.value}")
    if got.kind is not None and got.kind not in CLOSING_STATUS and got.status is not AskStatus.OPEN:
        failures.append(f"{label}: property 5: reply {got.kind_name} but the ask is {got.status.value}")
    return failures


def _expired_passes(case: Case, got: Outcome, label: str) -> list[str]:
    failures = []
    if case.expired and got.kind is not None:
        if got.kind is not ReplyKind.PASS or not got.expired:
            failures.append(f"{label}: property 6: an expired ask replied {got.kind_name} (expired={got.expired})")
        if got.option_index is not None or got.stored_option_index is not None:
            failures.append(
                f"{label}: property 6: an expired ask selected an option "
                f"(reply {got.option_index!r}, stored {got.stored_option_index!r})"
            )
    if not case.expired and got.expired:
        failures.append(f"{label}: property 6: an unexpired ask was reported expired")
    return failures


def _text_control_word_is_data(case: Case, got: Outcome, label: str) -> list[str]:
    """A text answer that is a bare control word is taken as data, and the door is named."""
    message = case.message
    if got.kind is not ReplyKind.ANSWERED or not isinstance(message, str):
        return []
    if " ".join(message.split()).casefold() not in CONTROL_WORDS:
        return []
    taken = phrases.TEXT_CONTROL_WORD_TAKEN.format(answer=message.strip())
    return differs(label, "answered line", taken, got.text)


def _others_change_nothing(case: Case, got: Outcome, label: str) -> list[str]:
    """Property 7: on an ask with responders, anyone else's message is ``not_yours`` and changes nothing."""
    if may_answer(case):
        if got.kind is ReplyKind.NOT_YOURS:
            return [f"{label}: property 7: not_yours for {case.sender.value}, who may answer"]
        return []
    if got.kind is None or case.expired:  # refused before the read; or the read expires it
        return []
    failures = []
    if got.kind is not ReplyKind.NOT_YOURS:
        failures.append(f"{label}: property 7: {case.sender.value} got {got.kind_name}, not not_yours")
    if not got.unchanged or not got.parked:
        failures.append(f"{label}: property 7: {case.sender.value}'s message changed the ask")
    named = got.text is not None and all(responder in got.text for responder in case.who.responders)
    if got.kind is ReplyKind.NOT_YOURS and not named:
        failures.append(f"{label}: property 7: the not_yours line does not name every responder: {got.text!r}")
    return failures


def _votes_are_responders(case: Case, got: Outcome, label: str) -> list[str]:
    """Property 8: one current vote per responder, only responders', and the quorum kept."""
    failures = []
    voters = [voter for voter, _ in got.votes]
    if len(set(voters)) != len(voters) or not set(voters) <= set(case.who.responders):
        failures.append(f"{label}: property 8: votes {got.votes!r} are not one each from the responders")
    if got.kind is ReplyKind.VOTED and (case.who.quorum < 2 or not got.parked):
        failures.append(f"{label}: property 8: voted on a quorum {case.who.quorum} ask (parked={got.parked})")
    if got.kind is ReplyKind.SELECTED and case.who.responders:
        agreeing = sum(1 for _, index in got.votes if index == got.option_index)
        if agreeing != case.who.quorum:
            failures.append(f"{label}: property 8: selected with {agreeing} agreeing votes, quorum {case.who.quorum}")
    sender = case.sender.id
    if got.answered_by not in (None, sender) or got.closed_by not in (None, sender):
        failures.append(f"{label}: property 8: closed by {got.answered_by or got.closed_by!r}, not by {sender!r}")
    return failures


def quorum_closes(results: Iterable[tuple[Case, Outcome]]) -> list[str]:
    """Property 8, over a run: every open quorum state has a way out that a responder takes.

    From every unexpired quorum state a responder's cancel word closes the ask (a veto);
    with no vote yet a responder's selection is a vote that leaves one vote on the ask
    (the state with a vote cast), and from that state a second responder's agreeing
    selection closes it as selected. (Past its TTL, property 6: it expires.)
    """
    exits: dict[tuple[AskKind, bool, Who, int, bool], set[str]] = {}
    for case, got in results:
        if case.who.quorum < 2 or case.expired:
            continue
        ways = exits.setdefault(case.state, set())
        if case.sender is Sender.NON_RESPONDER or not may_answer(case):
            continue
        if got.kind is ReplyKind.CANCELLED and got.status is AskStatus.CANCELLED:
            ways.add("veto")
        if got.kind is ReplyKind.VOTED and len(got.votes) == 1 and case.who is Who.QUORUM:
            ways.add("vote")
        if got.kind is ReplyKind.SELECTED and case.who is Who.QUORUM_VOTED:
            ways.add("quorum")
    failures = []
    for state, ways in exits.items():
        needed = {"veto", "vote" if state[2] is Who.QUORUM else "quorum"}
        if not needed <= ways:
            kind, collision, who, mismatches, _ = state
            failures.append(
                f"{kind} ask, collision={'yes' if collision else 'no'}, for {who.value}, mismatches={mismatches}: "
                f"property 8: no {', no '.join(sorted(needed - ways))} closes or advances it"
            )
    return failures
