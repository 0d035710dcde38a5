"""A thread's pending interrupts, question by question, and what resumes them.

Pure: no gateway, no graph. Pending interrupts are ``(id, value)`` pairs; each is an
ordinary payload (:mod:`.questions`) or a middleware review request (:mod:`.review`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from parkgate.adapters.langgraph import review
from parkgate.adapters.langgraph.questions import ANSWER, UNASKABLE, Answer, Closed, Question, parse_payload
from parkgate.core import phrases as P
from parkgate.core.kinds import AskStatus

Pending = Sequence[tuple[str, Any]]


def check_askable(interrupts: Pending) -> None:
    """Raise :class:`~parkgate.StoppingPointError` naming what is wrong with the first of
    ``interrupts`` that cannot be asked, so that no question is put to the person while
    another interrupt resumed with them cannot be."""
    for _, value in interrupts:
        if review.is_review_request(value):
            review.review_actions(value)
        else:
            parse_payload(value)


def next_question(interrupts: Pending, answers: Sequence[Answer]) -> Question | None:
    """The first question of ``interrupts`` not answered yet, or ``None`` when every one is.
    Raises :class:`~parkgate.StoppingPointError` for a value that cannot be asked."""
    done = {answer.key: answer for answer in answers}
    for interrupt_id, value in interrupts:
        if review.is_review_request(value):
            question = review.next_review_question(interrupt_id, value, done)
            if question is not None:
                return question
        elif (interrupt_id, 0, ANSWER) not in done:
            return Question(interrupt_id, 0, ANSWER, parse_payload(value))
    return None


def resume_values(interrupts: Pending, answers: Sequence[Answer], value_of: Callable[[Answer], Any]) -> dict[str, Any]:
    """What each interrupt is resumed with once every question is answered (``value_of``
    turns an ordinary payload's answer into the value ``interrupt()`` returns)."""
    done = {answer.key: answer for answer in answers}
    values: dict[str, Any] = {}
    for interrupt_id, value in interrupts:
        if review.is_review_request(value):
            values[interrupt_id] = review.decisions(interrupt_id, value, done)
        else:
            values[interrupt_id] = value_of(done[(interrupt_id, 0, ANSWER)])
    return values


def closed_reason(closed: Closed) -> str:
    """What a review request's rejection says when the person's side closed without a decision."""
    if closed.outcome == UNASKABLE:
        return P.HITL_UNASKABLE.format(reason=closed.reason)
    if closed.outcome == AskStatus.EXPIRED.value:
        return P.HITL_EXPIRED
    return P.HITL_CANCELLED


def closed_values(interrupts: Pending, closed: Closed) -> dict[str, Any]:
    """What each interrupt is resumed with when the person's side closed without a decision:
    a :class:`Closed`, or for a review request a ``reject`` per tool call saying why (so
    the agent's model hears "not approved", never a success). Review requests that do
    not allow ``reject`` are left out: they are closed by :func:`closed_by_state`."""
    values: dict[str, Any] = {}
    for interrupt_id, value in interrupts:
        if not review.is_review_request(value):
            values[interrupt_id] = closed
        elif review.rejects_all(value):
            values[interrupt_id] = review.rejected(value, closed_reason(closed))
    return values


def closed_by_state(interrupts: Pending) -> list[tuple[str, Any]]:
    """The review requests no decision closes without running a tool (a tool allows no
    ``reject``): they are closed by writing the rejection as the middleware's node."""
    return [
        (interrupt_id, value)
        for interrupt_id, value in interrupts
        if review.is_review_request(value) and not review.rejects_all(value)
    ]
