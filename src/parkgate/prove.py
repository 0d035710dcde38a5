"""Check the two properties over every state of the parked-ask machine, not a sample.

The machine is small enough to enumerate. A *state* is an open ask described by:

- its kind (``choice`` or ``text``);
- whether a label collides with a control word (a ``choice`` menu whose options are
  ``Red / Cancel / Menu``; a ``text`` ask has no labels, so there "collision" means the
  answer typed is itself a control word);
- its mismatch count, every value from 0 to N+2 (N = ``escalate_after``);
- expired or not (``now`` is exactly the TTL after ``last_touched``, the last moment an
  ask is still alive, or one microsecond later).

Every state receives every input class: an exact digit in range, a digit out of range
(0 and n+1), an exact label, a label that is also a control word, each control word
bare and with one leading slash, free text (including a sentence that contains a
control word), empty or whitespace-only input, and non-text (bytes that are not UTF-8,
a string with NUL). One (state, input) pair is a :class:`Case`, i.e. one transition.

For every case the result is compared with what the behaviour contract
(docs/contract.md) says it must be (an oracle written from the rules, not from the
matcher), and these properties are asserted:

1. no path returns ``pass`` while the ask is open and unexpired;
2. ``/cancel`` (every slash cancel word) leaves from every state, both kinds, with
   collisions: the ask closes and the conversation is unparked;
3. a miss gets ``retry`` below miss N and ``escalated`` from miss N on (exactly at N);
4. ``menu``/``options`` never advance the mismatch count;
5. every closed ask is closed as exactly one of answered/cancelled/expired, and it is
   open exactly when the reply says it is parked;
6. an expired ask returns ``pass`` (through a gateway: with ``expired_ask_id``) and
   never selects;

and non-text input is refused with :class:`~parkgate.errors.InputError` before the
machine runs, leaving the ask exactly as it was.

:func:`check` runs the pure machine; :func:`check_store` drives the same enumeration
through a real :class:`~parkgate.Gateway` on a store (one transaction per step: the
ask is parked and its misses are sent as real messages) and also compares every step
with the pure machine's result for the same stored ask and time.
"""

from __future__ import annotations

import enum
import uuid
from collections.abc import Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from parkgate.checks import check_message
from parkgate.clock import ManualClock
from parkgate.core import machine
from parkgate.core import phrases as P
from parkgate.core.model import Ask
from parkgate.core.phrases import CANCEL_WORDS, CONTROL_WORDS, RESHOW_WORDS, AskKind, AskStatus, ReplyKind
from parkgate.errors import InputError
from parkgate.gateway import Gateway
from parkgate.store import Run, Store, open_store
from parkgate.store.sqlite import SQLiteStore

#: The moment every enumerated ask was last touched.
T0 = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
#: The TTL of every enumerated ask.
TTL = timedelta(hours=6)
#: How far past the TTL an "expired" state is: the smallest step a store keeps.
PAST_TTL = timedelta(microseconds=1)

#: The first cancel word and the first re-show word, as labels a menu might really use.
_CANCEL_LABEL = min(CANCEL_WORDS).title()
_RESHOW_LABEL = min(RESHOW_WORDS).title()
#: A menu whose labels are not control words, and one where two of them are.
PLAIN_OPTIONS: tuple[str, ...] = ("Red", "Green", "Blue")
COLLIDING_OPTIONS: tuple[str, ...] = ("Red", _CANCEL_LABEL, _RESHOW_LABEL)
CHOICE_PROMPT = "Which colour?"
TEXT_PROMPT = "Describe the change."

#: Free text: a sentence, and a sentence with a control word inside it.
FREE_TEXT: tuple[str, ...] = ("a sequence diagram please", f"please {min(CANCEL_WORDS)} it")
#: Empty and whitespace-only input (ASCII and Unicode spaces).
BLANK: tuple[str, ...] = ("", " \t\n ", "\u00a0\u3000")
#: Not text at all: bytes that are not UTF-8, and a slash cancel with a NUL in it.
NON_TEXT: tuple[str | bytes, ...] = (b"\xff\xfe" + min(RESHOW_WORDS).encode(), "/" + min(CANCEL_WORDS) + "\x00")
#: What the store run sends to build up a mismatch count.
_JUNK: dict[AskKind, str] = {AskKind.CHOICE: "not an option", AskKind.TEXT: ""}

_CLOSED_STATUS: dict[ReplyKind, AskStatus] = {
    ReplyKind.SELECTED: AskStatus.ANSWERED,
    ReplyKind.ANSWERED: AskStatus.ANSWERED,
    ReplyKind.CANCELLED: AskStatus.CANCELLED,
    ReplyKind.PASS: AskStatus.EXPIRED,
}
REFUSED = "refused"


class InputClass(enum.Enum):
    """The classes of input every state receives (values are the table's wording)."""

    DIGIT = "digit in range"
    DIGIT_OUT = "digit out of range"
    LABEL = "exact label"
    LABEL_CONTROL = "label = control word"
    BARE_CONTROL = "bare control word"
    SLASH_CONTROL = "/control word"
    FREE_TEXT = "free text"
    BLANK = "empty/whitespace"
    NON_TEXT = "non-text"


@dataclass(frozen=True, slots=True)
class Case:
    """One transition: an open ask in one state, and one input sent to it."""

    ask_kind: AskKind
    collision: bool
    input_class: InputClass
    message: str | bytes
    mismatches: int
    expired: bool

    @property
    def options(self) -> tuple[str, ...]:
        """The ask's options (none for a text ask)."""
        if self.ask_kind is AskKind.TEXT:
            return ()
        return COLLIDING_OPTIONS if self.collision else PLAIN_OPTIONS

    @property
    def state(self) -> tuple[AskKind, bool, int, bool]:
        """The state this case starts from (kind, collision, mismatches, expired)."""
        return (self.ask_kind, self.collision, self.mismatches, self.expired)

    def describe(self) -> str:
        """A one-line name for failure messages."""
        return (
            f"{self.ask_kind.value} ask, collision={'yes' if self.collision else 'no'}, "
            f"mismatches={self.mismatches}, expired={'yes' if self.expired else 'no'}, "
            f"input {self.input_class.value} {self.message!r}"
        )


def _inputs(kind: AskKind, collision: bool) -> Iterator[tuple[InputClass, str | bytes]]:
    """Every input class with its concrete inputs, for an ask of this kind."""
    labels = COLLIDING_OPTIONS if collision else PLAIN_OPTIONS
    n = len(labels)  # text asks get the same digits: to them a digit is data
    for index in range(1, n + 1):
        yield InputClass.DIGIT, str(index)
    yield InputClass.DIGIT_OUT, "0"
    yield InputClass.DIGIT_OUT, str(n + 1)
    if kind is AskKind.CHOICE:
        for label in labels:
            if label.casefold() not in CONTROL_WORDS:
                yield InputClass.LABEL, label
    if collision:  # choice: the colliding labels as written; text: an answer that is a control word
        for label in labels:
            if label.casefold() in CONTROL_WORDS:
                yield InputClass.LABEL_CONTROL, label
    for word in sorted(CONTROL_WORDS):
        yield InputClass.BARE_CONTROL, word
    for word in sorted(CONTROL_WORDS):
        yield InputClass.SLASH_CONTROL, "/" + word
    for text in FREE_TEXT:
        yield InputClass.FREE_TEXT, text
    for text in BLANK:
        yield InputClass.BLANK, text
    for raw in NON_TEXT:
        yield InputClass.NON_TEXT, raw


def enumerate_cases(escalate_after: int = machine.DEFAULT_ESCALATE_AFTER) -> list[Case]:
    """Every combination: kind x collision x mismatch count 0..N+2 x expired x input."""
    if escalate_after < 1:
        raise ValueError("escalate_after must be at least 1")
    cases: list[Case] = []
    for kind in (AskKind.CHOICE, AskKind.TEXT):
        for collision in (False, True):
            for mismatches in range(escalate_after + 3):
                for expired in (False, True):
                    for input_class, message in _inputs(kind, collision):
                        cases.append(Case(kind, collision, input_class, message, mismatches, expired))
    return cases


@dataclass(frozen=True, slots=True)
class Outcome:
    """What one step did, observed from the reply and the ask's state afterwards."""

    kind: ReplyKind | None  # None: refused before the machine (InputError)
    text: str | None
    parked: bool
    expired: bool  # pure: the step expired the ask; gateway: expired_ask_id names it
    answer: str | None
    option_index: int | None
    status: AskStatus
    mismatches: int
    stored_answer: str | None
    stored_option_index: int | None
    unchanged: bool  # the ask after the step equals the ask before it

    @property
    def kind_name(self) -> str:
        """The reply kind's value, or ``refused``."""
        return REFUSED if self.kind is None else self.kind.value


@dataclass(frozen=True, slots=True)
class _Expected:
    kind: ReplyKind | None
    status: AskStatus
    mismatches: int
    answer: str | None = None
    option_index: int | None = None


def _expected(case: Case, escalate_after: int) -> _Expected:
    """What docs/contract.md says this case must do: written from the rules, not the matcher."""
    k = case.mismatches
    if case.input_class is InputClass.NON_TEXT:
        return _Expected(None, AskStatus.OPEN, k)
    if case.expired:
        return _Expected(ReplyKind.PASS, AskStatus.EXPIRED, k)
    assert isinstance(case.message, str)
    message = case.message
    miss = _Expected(ReplyKind.ESCALATED if k + 1 >= escalate_after else ReplyKind.RETRY, AskStatus.OPEN, k + 1)
    cls = case.input_class
    if cls is InputClass.SLASH_CONTROL:
        word = message[1:]
        if word in RESHOW_WORDS:
            return _Expected(ReplyKind.RESHOWN, AskStatus.OPEN, k)
        return _Expected(ReplyKind.CANCELLED, AskStatus.CANCELLED, k)
    if cls is InputClass.BLANK:
        return miss
    if case.ask_kind is AskKind.TEXT:  # everything else is the answer, as typed
        return _Expected(ReplyKind.ANSWERED, AskStatus.ANSWERED, 0, answer=message)
    labels = case.options
    if cls is InputClass.DIGIT:
        index = int(message)
        return _Expected(ReplyKind.SELECTED, AskStatus.ANSWERED, 0, labels[index - 1], index)
    if cls in (InputClass.LABEL, InputClass.LABEL_CONTROL):
        index = labels.index(message) + 1
        return _Expected(ReplyKind.SELECTED, AskStatus.ANSWERED, 0, message, index)
    if cls is InputClass.BARE_CONTROL:
        folded = [label.casefold() for label in labels]
        if message in folded:  # an option always beats a control word
            index = folded.index(message) + 1
            return _Expected(ReplyKind.SELECTED, AskStatus.ANSWERED, 0, labels[index - 1], index)
        if message in RESHOW_WORDS:
            return _Expected(ReplyKind.RESHOWN, AskStatus.OPEN, k)
        return _Expected(ReplyKind.CANCELLED, AskStatus.CANCELLED, k)
    return miss  # digit out of range, free text


def _compare(label: str, field_name: str, expected: object, actual: object) -> list[str]:
    if expected == actual:
        return []
    return [f"{label}: {field_name} expected {expected!r}, got {actual!r}"]


def _verify(case: Case, got: Outcome, escalate_after: int) -> list[str]:
    """Every failure of ``got`` against the oracle and the six properties."""
    label = case.describe()
    want = _expected(case, escalate_after)
    failures: list[str] = []
    want_kind = REFUSED if want.kind is None else want.kind.value
    failures += _compare(label, "reply kind", want_kind, got.kind_name)
    failures += _compare(label, "status", want.status.value, got.status.value)
    failures += _compare(label, "mismatches", want.mismatches, got.mismatches)
    if want.kind is not None:
        failures += _compare(label, "answer", want.answer, got.answer)
        failures += _compare(label, "option_index", want.option_index, got.option_index)
    # 1. no pass while the ask is open and unexpired
    if not case.expired and got.kind is ReplyKind.PASS:
        failures.append(f"{label}: property 1: pass while the ask was open and unexpired")
    # 2. /cancel leaves from every state
    if isinstance(case.message, str) and case.message.startswith("/") and case.message[1:] in CANCEL_WORDS:
        if got.parked or got.status is AskStatus.OPEN:
            failures.append(f"{label}: property 2: a slash cancel left the conversation parked")
        if not case.expired and got.kind is not ReplyKind.CANCELLED:
            failures.append(f"{label}: property 2: a slash cancel replied {got.kind_name}, not cancelled")
    # 3. retry below miss N, escalated from miss N on
    if got.kind in (ReplyKind.RETRY, ReplyKind.ESCALATED):
        miss = case.mismatches + 1
        right = ReplyKind.ESCALATED if miss >= escalate_after else ReplyKind.RETRY
        if got.kind is not right:
            failures.append(f"{label}: property 3: miss {miss} of N={escalate_after} got {got.kind_name}")
        if got.mismatches != miss:
            failures.append(f"{label}: property 3: a miss left the count at {got.mismatches}, not {miss}")
        named = got.text is not None and P.EXITS_HINT in got.text and str(miss) in got.text
        if got.kind is ReplyKind.ESCALATED and got.text is not None and not named:
            failures.append(f"{label}: property 3: the escalated line does not count {miss} tries and name the exits")
    # 4. menu never advances the count
    if got.kind is ReplyKind.RESHOWN and got.mismatches != case.mismatches:
        failures.append(f"{label}: property 4: menu moved the count {case.mismatches} -> {got.mismatches}")
    # 5. closed as exactly one of answered/cancelled/expired; open exactly when parked
    if got.parked != (got.status is AskStatus.OPEN):
        failures.append(f"{label}: property 5: parked={got.parked} but the ask is {got.status.value}")
    if got.kind in _CLOSED_STATUS and got.status is not _CLOSED_STATUS[got.kind]:
        failures.append(f"{label}: property 5: reply {got.kind_name} closed the ask as {got.status.value}")
    if got.kind is not None and got.kind not in _CLOSED_STATUS and got.status is not AskStatus.OPEN:
        failures.append(f"{label}: property 5: reply {got.kind_name} but the ask is {got.status.value}")
    # 6. the expired path is pass with expired_ask_id and never selects
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
    # refusal leaves the ask exactly as it was
    if got.kind is None and not got.unchanged:
        failures.append(f"{label}: a refused input changed the ask")
    # a text answer that is a bare control word is taken as data, and the door is named
    if (
        got.kind is ReplyKind.ANSWERED
        and isinstance(case.message, str)
        and " ".join(case.message.split()).casefold() in CONTROL_WORDS
    ):
        taken = P.TEXT_CONTROL_WORD_TAKEN.format(answer=case.message.strip())
        failures += _compare(label, "answered line", taken, got.text)
    return failures


def _ask_for(case: Case) -> Ask:
    """The open ask a case starts from, last touched at :data:`T0`."""
    return Ask(
        id="prove",
        conversation_id="prove",
        run_id="prove",
        kind=case.ask_kind,
        prompt=CHOICE_PROMPT if case.ask_kind is AskKind.CHOICE else TEXT_PROMPT,
        options=case.options,
        status=AskStatus.OPEN,
        asked_at=T0 - timedelta(minutes=case.mismatches),
        last_touched=T0,
        ttl_seconds=TTL.total_seconds(),
        mismatches=case.mismatches,
    )


def _now_for(case: Case, last_touched: datetime) -> datetime:
    """The last alive moment for an unexpired case; one step past the TTL otherwise."""
    return last_touched + TTL + (PAST_TTL if case.expired else timedelta(0))


def _refused(before: Ask, after: Ask) -> Outcome:
    """The outcome of an input refused before the machine: no reply, the ask as found."""
    return Outcome(
        kind=None,
        text=None,
        parked=after.is_open,
        expired=False,
        answer=None,
        option_index=None,
        status=after.status,
        mismatches=after.mismatches,
        stored_answer=after.answer,
        stored_option_index=after.option_index,
        unchanged=after == before,
    )


def _pure_outcome(ask: Ask, message: str | bytes, now: datetime, escalate_after: int) -> Outcome:
    """The gateway's pipeline without a store: refuse non-text, then one machine step."""
    try:
        text = check_message(message)
    except InputError:
        return _refused(ask, ask)
    step = machine.step(ask, text, now, escalate_after)
    after = step.ask
    return Outcome(
        kind=step.kind,
        text=step.text,
        parked=step.parked,
        expired=step.expired,
        answer=step.answer,
        option_index=step.option_index,
        status=after.status,
        mismatches=after.mismatches,
        stored_answer=after.answer,
        stored_option_index=after.option_index,
        unchanged=after == ask,
    )


@dataclass(slots=True)
class Report:
    """What a check covered and what it found. ``rows`` is the summary table."""

    states: int
    transitions: int
    failures: list[str] = field(default_factory=list)
    rows: list[tuple[str, ...]] = field(default_factory=list)

    HEADER = ("ask", "collision", "input class", "expired", "mismatches", "result")
    #: Failures listed in full by :meth:`render`; the rest are counted.
    SHOWN_FAILURES = 50

    def render(self) -> str:
        """A plain-text table of what was checked, the failures, and a closing count line."""
        table = [self.HEADER, *self.rows]
        widths = [max(len(row[i]) for row in table) for i in range(len(self.HEADER))]

        def line(row: tuple[str, ...]) -> str:
            return "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()

        out = [line(self.HEADER), "  ".join("-" * width for width in widths)]
        out.extend(line(row) for row in self.rows)
        if self.failures:
            out.append("")
            out.append("failures:")
            out.extend(f"  {failure}" for failure in self.failures[: self.SHOWN_FAILURES])
            if len(self.failures) > self.SHOWN_FAILURES:
                out.append(f"  ... and {len(self.failures) - self.SHOWN_FAILURES} more")
        out.append("")
        out.append(f"checked {self.states} states, {self.transitions} transitions, {len(self.failures)} failures")
        return "\n".join(out)


def _span(values: Iterable[int]) -> str:
    ordered = sorted(set(values))
    low, high = ordered[0], ordered[-1]
    return str(low) if low == high else f"{low}-{high}"


def _summarise(results: list[tuple[Case, Outcome]]) -> list[tuple[str, ...]]:
    """One row per (kind, collision, input class, expired): counts seen and results."""
    groups: dict[tuple[AskKind, bool, InputClass, bool], list[tuple[Case, Outcome]]] = {}
    for case, outcome in results:
        groups.setdefault((case.ask_kind, case.collision, case.input_class, case.expired), []).append((case, outcome))
    rows: list[tuple[str, ...]] = []
    for (kind, collision, input_class, expired), members in groups.items():
        by_kind: dict[str, list[int]] = {}
        for case, outcome in members:
            by_kind.setdefault(outcome.kind_name, []).append(case.mismatches)
        ordered = sorted(by_kind.items(), key=lambda item: (min(item[1]), item[0]))
        if len(ordered) == 1:
            result = ordered[0][0]
        else:
            result = ", ".join(f"{name} at {_span(counts)}" for name, counts in ordered)
        rows.append(
            (
                kind.value,
                "yes" if collision else "no",
                input_class.value,
                "yes" if expired else "no",
                _span(case.mismatches for case, _ in members),
                result,
            )
        )
    return rows


def _report(results: list[tuple[Case, Outcome]], failures: list[str]) -> Report:
    states = len({case.state for case, _ in results})
    return Report(states=states, transitions=len(results), failures=failures, rows=_summarise(results))


def check(escalate_after: int = machine.DEFAULT_ESCALATE_AFTER) -> Report:
    """Run the pure machine over every case of :func:`enumerate_cases` and verify each."""
    results: list[tuple[Case, Outcome]] = []
    failures: list[str] = []
    for case in enumerate_cases(escalate_after):
        ask = _ask_for(case)
        try:
            outcome = _pure_outcome(ask, case.message, _now_for(case, ask.last_touched), escalate_after)
        except Exception as error:  # a crash is a failure of this case, not of the checker
            failures.append(f"{case.describe()}: the machine raised {type(error).__name__}: {error}")
            continue
        results.append((case, outcome))
        failures.extend(_verify(case, outcome, escalate_after))
    return _report(results, failures)


def _read(gateway: Gateway, ask_id: str) -> tuple[Ask, Run | None]:
    """The ask and its run exactly as stored (a raw read: closes nothing, even past its TTL)."""
    with gateway.store.transaction() as tx:
        ask = tx.ask(ask_id)
        run = tx.run(ask.run_id) if ask is not None else None
    if ask is None:
        raise LookupError(f"ask {ask_id} vanished from the store")
    return ask, run


_COMPARED = (
    "kind",
    "text",
    "parked",
    "expired",
    "answer",
    "option_index",
    "status",
    "mismatches",
    "stored_answer",
    "stored_option_index",
    "unchanged",
)


def _store_case(
    gateway: Gateway, clock: ManualClock, case: Case, conversation_id: str, escalate_after: int
) -> tuple[Outcome, list[str]]:
    """Park, send ``mismatches`` real misses, move the clock, send the input; compare."""
    label = case.describe() + " [store]"
    failures: list[str] = []
    clock.set(T0)
    prompt = CHOICE_PROMPT if case.ask_kind is AskKind.CHOICE else TEXT_PROMPT
    options = list(case.options) if case.ask_kind is AskKind.CHOICE else None
    parked = gateway.ask(conversation_id, prompt, options, kind=case.ask_kind)
    if parked.kind is not ReplyKind.ASKED or parked.ask_id is None:
        raise RuntimeError(f"{label}: parking replied {parked.kind.value}")
    ask_id = parked.ask_id
    for miss in range(1, case.mismatches + 1):
        bounce = gateway.handle(conversation_id, _JUNK[case.ask_kind])
        right = ReplyKind.ESCALATED if miss >= escalate_after else ReplyKind.RETRY
        if bounce.kind is not right:
            failures.append(f"{label}: setting up, miss {miss} replied {bounce.kind.value}, not {right.value}")
    before, _ = _read(gateway, ask_id)
    failures += _compare(label, "mismatches after set-up", case.mismatches, before.mismatches)
    now = _now_for(case, before.last_touched)
    clock.set(now)
    pure = _pure_outcome(before, case.message, now, escalate_after)
    try:
        reply = gateway.handle(conversation_id, case.message)
    except InputError:
        after, run = _read(gateway, ask_id)
        outcome = _refused(before, after)
    else:
        after, run = _read(gateway, ask_id)
        outcome = Outcome(
            kind=reply.kind,
            text=reply.text,
            parked=reply.parked,
            expired=reply.expired_ask_id == ask_id,
            answer=reply.answer,
            option_index=reply.option_index,
            status=after.status,
            mismatches=after.mismatches,
            stored_answer=after.answer,
            stored_option_index=after.option_index,
            unchanged=after == before,
        )
        if reply.expired_ask_id not in (None, ask_id):
            failures.append(f"{label}: expired_ask_id names another ask {reply.expired_ask_id}")
        if reply.parked != after.is_open:
            failures.append(f"{label}: the reply says parked={reply.parked} but the stored ask is {after.status.value}")
    for name in _COMPARED:
        mine, theirs = getattr(pure, name), getattr(outcome, name)
        if mine != theirs:
            failures.append(f"{label}: store and pure machine disagree on {name}: machine {mine!r}, store {theirs!r}")
    failures += _run_failures(label, after, run)
    # Leave no parked ask behind in the caller's store.
    if after.is_open and gateway.cancel(ask_id).is_open:
        failures.append(f"{label}: an operator cancel left the ask open")
    return outcome, failures


def _run_failures(label: str, ask: Ask, run: Run | None) -> list[str]:
    """A closed ask is no longer the run's pending ask; a cancel or expiry completes the run."""
    if run is None:
        return [f"{label}: the ask's run {ask.run_id} is missing"]
    if ask.is_open:
        return [] if run.pending_ask_id == ask.id else [f"{label}: the open ask is not its run's pending ask"]
    failures: list[str] = []
    if run.pending_ask_id == ask.id:
        failures.append(f"{label}: the run still waits on the {ask.status.value} ask")
    if ask.status in (AskStatus.CANCELLED, AskStatus.EXPIRED) and run.status != "complete":
        failures.append(f"{label}: a {ask.status.value} ask left its run {run.status}")
    return failures


def check_store(
    store_url: str, escalate_after: int = machine.DEFAULT_ESCALATE_AFTER, *, schema: str | None = None
) -> Report:
    """Run every case through a real :class:`~parkgate.Gateway` on ``store_url``.

    Each case gets its own conversation: the ask is parked, its mismatch count is built
    by sending real misses, the injected clock is moved to the case's moment, and the
    input is sent, each message its own transaction. The reply and the stored ask are
    verified like :func:`check`'s, and compared field by field with the pure machine's
    step from the same stored ask at the same moment. ``schema`` selects a PostgreSQL
    schema. The store must be writable. The asks made (conversations ``prove-...``) stay
    in it closed, like every closed ask; one that a case leaves open is cancelled after
    it, so no parked ask is left behind.
    """
    cases = enumerate_cases(escalate_after)
    store = open_store(store_url, schema=schema) if schema is not None else open_store(store_url)
    # Cases are independent (one conversation each), so a server store runs them on a few
    # workers at once, as several gateway processes would; each worker has its own clock.
    workers = 1 if isinstance(store, SQLiteStore) else SERVER_WORKERS
    run_tag = uuid.uuid4().hex[:12]  # a rerun on the same store uses new conversations
    numbered = list(enumerate(cases))
    shares = [numbered[start::workers] for start in range(workers)]
    try:
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="prove") as pool:
            done = list(pool.map(lambda share: _store_share(store, share, run_tag, escalate_after), shares))
    finally:
        store.close()
    results: list[tuple[Case, Outcome]] = []
    failures: list[str] = []
    for _number, case, outcome, found in sorted((item for share in done for item in share), key=lambda i: i[0]):
        if outcome is not None:
            results.append((case, outcome))
        failures.extend(found)
    return _report(results, failures)


#: How many cases run at once on a PostgreSQL store (SQLite serialises writers anyway).
SERVER_WORKERS = 4

_Done = tuple[int, Case, Outcome | None, list[str]]


def _store_share(store: Store, share: list[tuple[int, Case]], run_tag: str, escalate_after: int) -> list[_Done]:
    """Run one worker's cases in order through its own gateway and clock on ``store``."""
    clock = ManualClock(T0)
    # Not closed here: the store is shared by the workers and closed once by the caller.
    gateway = Gateway(store=store, ttl=TTL, clock=clock, escalate_after=escalate_after, surface="prove")
    done: list[_Done] = []
    for number, case in share:
        conversation_id = f"prove-{run_tag}-{number}"
        try:
            outcome, found = _store_case(gateway, clock, case, conversation_id, escalate_after)
        except Exception as error:  # report the case; go on with the others
            done.append((number, case, None, [f"{case.describe()} [store]: raised {type(error).__name__}: {error}"]))
            continue
        found.extend(f"{failure} [store]" for failure in _verify(case, outcome, escalate_after))
        done.append((number, case, outcome, found))
    return done


__all__ = [
    "Case",
    "InputClass",
    "Outcome",
    "Report",
    "check",
    "check_store",
    "enumerate_cases",
]
