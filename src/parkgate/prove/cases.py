"""The enumeration: every state of an open ask, and every input from every sender class.

A state is an ask's kind (``choice`` or ``text``), whether a label collides with a
control word, who may answer it (:class:`Who`: anyone, responders with quorum 1, or
responders with quorum 2 before and after a first vote), its mismatch count (0 to N+2)
and whether it has expired. One (state, sender, input) triple is a :class:`Case`: one
transition of the machine.
"""

from __future__ import annotations

import enum
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from parkgate.core import machine
from parkgate.core.kinds import AskKind, AskStatus
from parkgate.core.model import Ask, Vote
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


#: The responders of an ask that names them: the first two are the sender classes
#: "a responder" and "a second responder"; the third makes a quorum of 2 one of 3.
RESPONDER, SECOND_RESPONDER, THIRD_RESPONDER = "U_ALICE", "U_BOB", "U_CAROL"
#: The sender class "a non-responder".
NON_RESPONDER = "U_MALLORY"


class Who(enum.Enum):
    """Who may answer an enumerated ask (values are the table's wording)."""

    ANYONE = "anyone"
    RESPONDERS = "2 responders, quorum 1"
    QUORUM = "3 responders, quorum 2"
    QUORUM_VOTED = "quorum 2, 1 vote cast"

    @property
    def responders(self) -> tuple[str, ...]:
        """The ask's responders (none: anyone answers)."""
        if self is Who.ANYONE:
            return ()
        if self is Who.RESPONDERS:
            return (RESPONDER, SECOND_RESPONDER)
        return (RESPONDER, SECOND_RESPONDER, THIRD_RESPONDER)

    @property
    def quorum(self) -> int:
        """How many responders must agree on one option."""
        return 2 if self in (Who.QUORUM, Who.QUORUM_VOTED) else 1

    @property
    def voted(self) -> bool:
        """The first responder has voted for option 1 (and nobody else has voted)."""
        return self is Who.QUORUM_VOTED

    def applies_to(self, kind: AskKind) -> bool:
        """A text ask takes quorum 1 only."""
        return kind is AskKind.CHOICE or self.quorum == 1


class Sender(enum.Enum):
    """The classes of sender every input comes from (values are the table's wording)."""

    NONE = "no sender"
    RESPONDER = "a responder"
    NON_RESPONDER = "a non-responder"
    SECOND_RESPONDER = "a second responder"

    @property
    def id(self) -> str | None:
        """The ``sender`` a message of this class carries (the names are responders' only
        on an ask that names responders: on anyone's ask they are just named senders)."""
        return _SENDER_IDS[self]


_SENDER_IDS: dict[Sender, str | None] = {
    Sender.NONE: None,
    Sender.RESPONDER: RESPONDER,
    Sender.NON_RESPONDER: NON_RESPONDER,
    Sender.SECOND_RESPONDER: SECOND_RESPONDER,
}


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
    """One transition: an open ask in one state, and one input sent to it by one sender."""

    ask_kind: AskKind
    collision: bool
    input_class: InputClass
    message: str | bytes
    mismatches: int
    expired: bool
    who: Who = Who.ANYONE
    sender: Sender = Sender.NONE

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
    def state(self) -> tuple[AskKind, bool, Who, int, bool]:
        """The state this case starts from (kind, collision, who, mismatches, expired)."""
        return (self.ask_kind, self.collision, self.who, self.mismatches, self.expired)

    @property
    def votes(self) -> tuple[Vote, ...]:
        """The votes the ask holds before the input: the first responder's for option 1, or none."""
        return (Vote(RESPONDER, 1, self.options[0], T0),) if self.who.voted else ()

    def describe(self) -> str:
        """A one-line name for failure messages."""
        who = "" if self.who is Who.ANYONE and self.sender is Sender.NONE else f"for {self.who.value}, "
        sent = "" if self.who is Who.ANYONE and self.sender is Sender.NONE else f" from {self.sender.value}"
        return (
            f"{self.ask_kind.value} ask, collision={'yes' if self.collision else 'no'}, {who}"
            f"mismatches={self.mismatches}, expired={'yes' if self.expired else 'no'}, "
            f"input {self.input_class.value} {self.message!r}{sent}"
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
            responders=self.who.responders,
            quorum=self.who.quorum,
            votes=self.votes,
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
    """Every combination: kind x collision x who x mismatch count 0..N+2 x expired x
    sender x input (a text ask is anyone's or its responders' with quorum 1)."""
    if escalate_after < 1:
        raise ValueError("escalate_after must be at least 1")
    cases: list[Case] = []
    for kind in (AskKind.CHOICE, AskKind.TEXT):
        for collision in (False, True):
            for who in (who for who in Who if who.applies_to(kind)):
                for mismatches in range(escalate_after + 3):
                    for expired in (False, True):
                        for sender in Sender:
                            for input_class, message in inputs(kind, collision):
                                case = Case(kind, collision, input_class, message, mismatches, expired, who, sender)
                                cases.append(case)
    return cases


#: The inputs a store run sends from each sender class: one of each thing the door can
#: do with a message (a digit selects, votes or answers, and a second digit votes for
#: another option or changes a vote; a cancel word and a re-show word, with the slash
#: that makes them control words in every ask; a blank miss; and non-text, refused).
#: Which message an input class holds is the matcher's concern, which the store run
#: covers input by input with no sender.
STORE_INPUTS: tuple[tuple[InputClass, str], ...] = (
    (InputClass.DIGIT, "1"),
    (InputClass.DIGIT, "2"),  # on a quorum ask: a vote for another option, or a changed vote
    (InputClass.SLASH_CONTROL, "/" + min(CANCEL_WORDS)),
    (InputClass.SLASH_CONTROL, "/" + min(RESHOW_WORDS)),
    (InputClass.BLANK, BLANK[0]),
)


def store_cases(escalate_after: int = machine.DEFAULT_ESCALATE_AFTER) -> list[Case]:
    """The cases a store run sends: every case of an ask anyone may answer, sent with no
    sender (the matcher's table, input by input); and for every other (who, sender)
    pair, every state with each of :data:`STORE_INPUTS` and a non-text input (past its
    TTL, where any text expires the ask whoever sends it: the digit and the non-text)."""
    return [case for case in enumerate_cases(escalate_after) if _on_store(case)]


def _on_store(case: Case) -> bool:
    """Whether :func:`store_cases` sends ``case``."""
    if case.who is Who.ANYONE and case.sender is Sender.NONE:
        return True
    if case.input_class is InputClass.NON_TEXT:
        return case.message == NON_TEXT[0]
    return (case.input_class, case.message) in STORE_INPUTS[: 1 if case.expired else None]
