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

and input refused before the machine leaves the ask exactly as it was.
"""

from __future__ import annotations

from parkgate.core import phrases
from parkgate.core.kinds import AskStatus, ReplyKind
from parkgate.core.phrases import CANCEL_WORDS, CONTROL_WORDS

from .cases import Case
from .oracle import CLOSING_STATUS, expected
from .outcome import REFUSED, Outcome


def differs(label: str, field_name: str, want: object, got: object) -> list[str]:
    """A one-item failure list when ``got`` is not ``want``, else nothing."""
    if want == got:
        return []
    return [f"{label}: {field_name} expected {want!r}, got {got!r}"]


def verify(case: Case, got: Outcome, escalate_after: int) -> list[str]:
    """Every failure of ``got`` against the oracle and the six properties."""
    label = case.describe()
    return [
        *_against_oracle(case, got, escalate_after, label),
        *_no_pass_while_open(case, got, label),
        *_slash_cancel_leaves(case, got, label),
        *_misses_escalate_at_n(case, got, escalate_after, label),
        *_closed_exactly_once(case, got, label),
        *_expired_passes(case, got, label),
        *_text_control_word_is_data(case, got, label),
    ]


def _against_oracle(case: Case, got: Outcome, escalate_after: int, label: str) -> list[str]:
    want = expected(
        case.options, case.message, mismatches=case.mismatches, escalate_after=escalate_after, expired=case.expired
    )
    want_kind = REFUSED if want.kind is None else want.kind.value
    failures = differs(label, "reply kind", want_kind, got.kind_name)
    failures += differs(label, "status", want.status.value, got.status.value)
    failures += differs(label, "mismatches", want.mismatches, got.mismatches)
    if want.kind is not None:
        failures += differs(label, "answer", want.answer, got.answer)
        failures += differs(label, "option_index", want.option_index, got.option_index)
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
