"""What one step did, observed from the reply and the ask's state afterwards.

:func:`pure_outcome` runs the gateway's decision path without a store: refuse input
that is not text, then one step of the machine. The store run observes the same
fields through a real :class:`~parkgate.Gateway`, so the two compare field by field.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from parkgate.core import machine
from parkgate.core.kinds import AskStatus, ReplyKind
from parkgate.core.model import Ask
from parkgate.errors import InputError
from parkgate.gateway.checks import check_inbound_text

#: The result column's word for input refused before the machine.
REFUSED = "refused"


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
    #: The stored ask's who-fields after the step: its votes as (sender, option index)
    #: pairs in the order cast, ``answered_by`` and ``closed_by``.
    votes: tuple[tuple[str, int], ...] = ()
    answered_by: str | None = None
    closed_by: str | None = None

    @property
    def kind_name(self) -> str:
        """The reply kind's value, or ``refused``."""
        return REFUSED if self.kind is None else self.kind.value


#: The fields a store run and the pure machine must agree on.
COMPARED_FIELDS = (
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
    "votes",
    "answered_by",
    "closed_by",
)


def vote_pairs(ask: Ask) -> tuple[tuple[str, int], ...]:
    """The ask's votes as an :class:`Outcome` holds them: (sender, option index) pairs."""
    return tuple((vote.sender, vote.option_index) for vote in ask.votes)


def refused_outcome(before: Ask, after: Ask) -> Outcome:
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
        votes=vote_pairs(after),
        answered_by=after.answered_by,
        closed_by=after.closed_by,
    )


def pure_outcome(
    ask: Ask, message: str | bytes, now: datetime, escalate_after: int, sender: str | None = None
) -> Outcome:
    """The gateway's pipeline without a store: refuse non-text, then one machine step."""
    try:
        text = check_inbound_text(message)
    except InputError:
        return refused_outcome(ask, ask)
    step = machine.step(ask, text, now, escalate_after, sender)
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
        votes=vote_pairs(after),
        answered_by=after.answered_by,
        closed_by=after.closed_by,
    )
