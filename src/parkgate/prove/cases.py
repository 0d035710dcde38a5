"""The enumeration: every state of an open ask, and every class of input sent to it.

A state is an ask's kind (``choice`` or ``text``), whether a label collides with a
control word, its mismatch count (0 to N+2) and whether it has expired. One (state,
input) pair is a :class:`Case`: one transition of the machine.
"""

from __future__ import annotations

import enum
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from parkgate.core import machine
from parkgate.core.kinds import AskKind, AskStatus
from parkgate.core.model import Ask
from parkgate.core.phrases import CANCEL_WORDS, CONTROL_WORDS, RESHOW_WORDS

#: The moment every enumerated ask was last touched.
T0 = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
#: The TTL of every enumerated ask.
TTL = timedelta(hours=6)
#: How far past the TTL an "expired" state is: the smallest step a store keeps.
PAST_TTL = timedelta(microseconds=1)

#: The first cancel word and the first re-show word, as labels a menu might really use.
CANCEL_LABEL = min(CANCEL_WORDS).title()
RESHOW_LABEL = min(RESHOW_WORDS).title()
#: A menu whose labels are not control words, and one where two of them are.
PLAIN_OPTIONS: tuple[str, ...] = ("Red", "Green", "Blue")
COLLIDING_OPTIONS: tuple[str, ...] = ("Red", CANCEL_LABEL, RESHOW_LABEL)
CHOICE_PROMPT = "Which colour?"
TEXT_PROMPT = "Describe the change."

#: Free text: a sentence, and a sentence with a control word inside it.
FREE_TEXT: tuple[str, ...] = ("a sequence diagram please", f"please {min(CANCEL_WORDS)} it")
#: Empty and whitespace-only input (ASCII and Unicode spaces).
BLANK: tuple[str, ...] = ("", " \t\n ", "\u00a0\u3000")
#: Not text at all: bytes that are not UTF-8, and a slash cancel with a NUL in it.
NON_TEXT: tuple[str | bytes, ...] = (b"\xff\xfe" + min(RESHOW_WORDS).encode(), "/" + min(CANCEL_WORDS) + "\x00")


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
    def prompt(self) -> str:
        """The ask's question."""
        return CHOICE_PROMPT if self.ask_kind is AskKind.CHOICE else TEXT_PROMPT

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

    def open_ask(self) -> Ask:
        """The open ask this case starts from, last touched at :data:`T0`."""
        return Ask(
            id="prove",
            conversation_id="prove",
            run_id="prove",
            kind=self.ask_kind,
            prompt=self.prompt,
            options=self.options,
            status=AskStatus.OPEN,
            asked_at=T0 - timedelta(minutes=self.mismatches),
            last_touched=T0,
            ttl_seconds=TTL.total_seconds(),
            mismatches=self.mismatches,
        )

    def moment(self, last_touched: datetime) -> datetime:
        """The last alive moment for an unexpired case; one step past the TTL otherwise."""
        return last_touched + TTL + (PAST_TTL if self.expired else timedelta(0))


def inputs(kind: AskKind, collision: bool) -> Iterator[tuple[InputClass, str | bytes]]:
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
                    for input_class, message in inputs(kind, collision):
                        cases.append(Case(kind, collision, input_class, message, mismatches, expired))
    return cases
