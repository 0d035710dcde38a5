"""The state machine: (open ask, input, now) -> (reply kind, text, next ask state).

:func:`match` classifies the input (by the rules of :mod:`parkgate.core.menu` for a
menu, and an expected form's for a text ask); :func:`step` decides what it does to the
ask. Pure: the caller supplies ``now``; nothing here reads a clock or touches storage.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from functools import lru_cache
from typing import Any

from parkgate.core import phrases as P
from parkgate.core.events import EventKind, NewEvent
from parkgate.core.expect import Expect, describe, numbered_options, value_of
from parkgate.core.kinds import AskKind, AskStatus, ReplyKind
from parkgate.core.menu import MENUS_REMEMBERED, Match, Verdict, choose, normalise, slash_command
from parkgate.core.model import Ask, Step, Vote

#: Misses 1..N-1 get the plain retry line; miss N and later the escalated one.
DEFAULT_ESCALATE_AFTER = 3


def match(kind: AskKind, options: tuple[str, ...] | list[str], text: str, expect: Expect | None = None) -> Match:
    """Decide what ``text`` means to an ask of ``kind`` with ``options``: pure and total,
    every input gets a verdict (the rules: :mod:`parkgate.core.menu`, docs/matching.md).

    The slash form (``/stop``) is always the control word. A text ask takes any non-empty
    text; with ``expect`` only an answer of that form (anything else, a bare control word
    included, is a mismatch). A choice ask's reply is read against its menu.
    """
    word = normalise(text)
    command = slash_command(word)
    if command is not None:  # the slash door is never shadowed, not even by a label "／stop"
        return Match(command)
    if kind is AskKind.TEXT:
        if not word or (expect is not None and value_of(expect, text) is None):
            return Match(Verdict.MISMATCH)
        return Match(Verdict.ANSWER, bare_control_word=word in P.CONTROL_WORDS)
    return choose(options, word)


def render_question(ask: Ask, footer: bool = True) -> str:
    """What a person is shown for ``ask``: the prompt, the numbered options, the exits.

    ``footer=False`` leaves the exits line out, for a reply whose own line names every
    exit already (the escalated line).
    """
    return _render_question(ask.kind, ask.prompt, tuple(ask.options), ask.expect, footer)


@lru_cache(maxsize=MENUS_REMEMBERED)
def _render_question(
    kind: AskKind, prompt: str, options: tuple[str, ...], expect: Expect | None = None, footer: bool = True
) -> str:
    # Every miss and re-show renders the question again; an ask's question never changes.
    if kind is AskKind.TEXT:
        if expect is not None and expect.options:  # the several-options form shows its menu
            listed = [prompt, "", *numbered_options(expect)]
            if footer:
                listed.extend(["", P.TEXT_EXPECT_QUESTION_FOOTER.format(wanted=describe(expect))])
            return "\n".join(listed)
        if not footer:
            return prompt
        if expect is not None:
            return f"{prompt}\n{P.TEXT_EXPECT_QUESTION_FOOTER.format(wanted=describe(expect))}"
        return f"{prompt}\n{P.TEXT_QUESTION_FOOTER}"
    lines = [prompt, ""]
    lines.extend(f"{i}. {label}" for i, label in enumerate(options, start=1))
    if footer:
        lines.extend(["", P.CHOICE_MENU_FOOTER if _bare_exits_work(kind, options) else P.CHOICE_MENU_FOOTER_SLASHED])
    return "\n".join(lines)


def bare_exits_work(ask: Ask) -> bool:
    """True when the bare ``menu`` and ``cancel`` still leave this ask.

    An option label beats a bare control word, so in a menu with an option "Menu" (or
    "CANCEL", or any label equal to one after normalisation) the bare word selects that
    option; only the slash forms still leave, and the footer must name those.
    """
    return _bare_exits_work(ask.kind, ask.options)


@lru_cache(maxsize=MENUS_REMEMBERED)
def _bare_exits_work(kind: AskKind, options: tuple[str, ...]) -> bool:
    # Asked by the matcher itself, so the footer can never disagree with what a reply does.
    return (
        match(kind, options, P.MENU_WORD).verdict is Verdict.RESHOW
        and match(kind, options, P.CANCEL_WORD).verdict is Verdict.CANCEL
    )


def expire(ask: Ask, now: datetime) -> Step:
    """Close ``ask`` as expired. It records its default, if it has one, as the answer.

    Its ``closed_at`` is its due time (``last_touched + ttl``), not ``now``: a read that
    finds the ask lapsed long after its TTL does not move its close. Closed before it fell
    due (an operator's expiry), it closed at ``now``. Nobody answered: ``answered_at``
    stays ``None``.
    """
    closed = ask.evolve(
        status=AskStatus.EXPIRED,
        outcome=AskStatus.EXPIRED.value,
        answer=ask.default,
        option_index=_index_of(ask, ask.default),
        answered_at=None,
        closed_at=min(ask.due_at, now),
    )
    return Step(ReplyKind.PASS, P.PHRASES[ReplyKind.PASS], closed, expired=True)


def on_read(ask: Ask, now: datetime) -> Step | None:
    """Expiry on read, decided in one place: the expiry of an ask a read at ``now`` finds
    open past its TTL (see :func:`expire`), or ``None`` when the ask stands as it is.

    Every read of an ask enforces the clock this way; there is no sweeper.
    """
    return expire(ask, now) if ask.is_expired(now) else None


def _index_of(ask: Ask, answer: str | None) -> int | None:
    if answer is None or ask.kind is AskKind.TEXT:
        return None
    return ask.options.index(answer) + 1 if answer in ask.options else None


def step(
    ask: Ask, text: str, now: datetime, escalate_after: int = DEFAULT_ESCALATE_AFTER, sender: str | None = None
) -> Step:
    """Decide what ``text`` from ``sender`` does to the open ``ask`` at ``now``.

    An ask idle past its TTL is expired first (reply ``pass``), whoever reads it. On an
    ask with responders, a message from anyone else (or with no sender) is ``not_yours``
    and changes nothing. Otherwise the input selects (on a quorum ask: votes), answers,
    re-shows, cancels or counts as a miss. Every path has a kind.
    """
    if not ask.is_open:
        raise ValueError(f"ask {ask.id} is {ask.status.value}, not open")
    if escalate_after < 1:
        raise ValueError("escalate_after must be at least 1")
    expiry = on_read(ask, now)
    if expiry is not None:
        return expiry
    if not may_answer(ask, sender):
        return Step(ReplyKind.NOT_YOURS, not_yours_line(ask), ask)
    verdict = match(ask.kind, ask.options, text, ask.expect)
    # Every branch touches the ask (last_touched = now) in the one copy it makes.
    if verdict.verdict is Verdict.SELECT:
        assert verdict.option_index is not None
        return _selected(ask, verdict.option_index, now, sender)
    if verdict.verdict is Verdict.ANSWER:
        return _answered(ask, text, now, sender, bare_control_word=verdict.bare_control_word)
    if verdict.verdict is Verdict.RESHOW:
        touched = ask.evolve(last_touched=now)
        return Step(ReplyKind.RESHOWN, P.PHRASES[ReplyKind.RESHOWN].format(menu=_reshown_menu(ask)), touched)
    if verdict.verdict is Verdict.CANCEL:
        closed = ask.evolve(
            last_touched=now,
            status=AskStatus.CANCELLED,
            outcome=AskStatus.CANCELLED.value,
            closed_at=now,
            closed_by=sender,
        )
        return Step(ReplyKind.CANCELLED, cancelled_line(ask), closed)
    misses = ask.mismatches + 1
    missed = ask.evolve(last_touched=now, mismatches=misses)
    kind = ReplyKind.ESCALATED if misses >= escalate_after else ReplyKind.RETRY
    # The escalated line names every exit itself: the question follows it without its footer.
    question = render_question(ask, footer=kind is not ReplyKind.ESCALATED)
    return Step(kind, _miss_line(ask, kind, misses, question), missed)


def may_answer(ask: Ask, sender: str | None) -> bool:
    """Whether a message from ``sender`` may act on ``ask``: anyone's may when the ask
    names no responders; otherwise only a responder's (a message with no sender never)."""
    return not ask.responders or sender in ask.responders


def joined_names(names: Sequence[str], name: Callable[[str], str] = str) -> str:
    """``names`` as a line lists people: "a", "a or b", "a, b or c", each as ``name`` shows it
    (a surface's own name for a sender: a mention, a display name)."""
    shown = [name(each) for each in names]
    return shown[0] if len(shown) == 1 else P.RESPONDERS_JOIN.join(shown[:-1]) + P.RESPONDERS_LAST_JOIN + shown[-1]


def not_yours_line(ask: Ask, name: Callable[[str], str] = str) -> str:
    """The one line a message from someone the ask is not for gets: who it is for, each
    responder as ``name`` shows them (a channel passes its mention)."""
    return P.PHRASES[ReplyKind.NOT_YOURS].format(responders=joined_names(ask.responders, name))


def _reshown_menu(ask: Ask) -> str:
    """The question a ``menu`` re-shows: on a quorum ask, followed by the votes so far."""
    menu = render_question(ask)
    if ask.quorum <= 1:
        return menu
    counts = _tally(ask.votes)
    items = [
        P.VOTE_TALLY_ITEM.format(index=index, answer=ask.options[index - 1], count=counts[index])
        for index in sorted(counts)
    ]
    tally = P.VOTE_TALLY_JOIN.join(items) if items else P.VOTES_NONE_YET
    return f"{menu}\n\n{P.VOTES_SO_FAR.format(quorum=ask.quorum, tally=tally)}"


def _tally(votes: tuple[Vote, ...]) -> dict[int, int]:
    """Option index -> how many current votes it has."""
    counts: dict[int, int] = {}
    for vote in votes:
        counts[vote.option_index] = counts.get(vote.option_index, 0) + 1
    return counts


def _selected(ask: Ask, option_index: int, now: datetime, sender: str | None) -> Step:
    label = ask.options[option_index - 1]
    votes = ask.votes
    if ask.responders:  # a responder's selection is a vote, replacing their earlier one
        assert sender is not None  # may_answer let only a responder through
        votes = (*(vote for vote in votes if vote.sender != sender), Vote(sender, option_index, label, now))
        count = _tally(votes)[option_index]
        if count < ask.quorum:
            voted = ask.evolve(last_touched=now, votes=votes, mismatches=0)
            line = P.PHRASES[ReplyKind.VOTED].format(count=count, quorum=ask.quorum, index=option_index, answer=label)
            return Step(ReplyKind.VOTED, line, voted)
    closed = ask.evolve(
        last_touched=now,
        status=AskStatus.ANSWERED,
        outcome="selected",
        answer=label,
        option_index=option_index,
        answered_at=now,
        closed_at=now,
        mismatches=0,
        votes=votes,
        answered_by=sender,
    )
    line = P.PHRASES[ReplyKind.SELECTED].format(index=option_index, answer=label)
    return Step(ReplyKind.SELECTED, line, closed, label, option_index)


def _answered(ask: Ask, text: str, now: datetime, sender: str | None, *, bare_control_word: bool) -> Step:
    closed = ask.evolve(
        last_touched=now,
        status=AskStatus.ANSWERED,
        outcome="answered",
        answer=text,
        answered_at=now,
        closed_at=now,
        mismatches=0,
        answered_by=sender,
    )
    # A text answer that is just a control word is taken, and the line says so.
    line = P.TEXT_CONTROL_WORD_TAKEN.format(answer=text.strip()) if bare_control_word else P.PHRASES[ReplyKind.ANSWERED]
    return Step(ReplyKind.ANSWERED, line, closed, text)


def cancelled_line(ask: Ask) -> str:
    """What a person's cancel of ``ask`` says: it dropped a menu, or a question."""
    return P.TEXT_CANCELLED if ask.kind is AskKind.TEXT else P.PHRASES[ReplyKind.CANCELLED]


def _miss_line(ask: Ask, kind: ReplyKind, misses: int, question: str) -> str:
    if ask.kind is AskKind.TEXT and ask.expect is not None:
        template = P.TEXT_EXPECT_ESCALATED if kind is ReplyKind.ESCALATED else P.TEXT_EXPECT_RETRY
        return template.format(wanted=describe(ask.expect), tries=_tries(misses), menu=question)
    if ask.kind is AskKind.TEXT:
        template = P.TEXT_ESCALATED if kind is ReplyKind.ESCALATED else P.TEXT_RETRY
        return template.format(tries=_tries(misses), menu=question)
    return P.PHRASES[kind].format(n=len(ask.options), tries=_tries(misses), menu=question)


def _tries(count: int) -> str:
    return (P.TRIES_ONE if count == 1 else P.TRIES_MANY).format(count=count)


def cancel(ask: Ask, now: datetime, outcome: str = AskStatus.CANCELLED.value, closed_by: str | None = None) -> Ask:
    """Close ``ask`` as cancelled (an operator's cancel, ``closed_by`` ``operator``, or a
    replaced ask, ``closed_by`` ``None``), closed at ``now``."""
    return ask.evolve(status=AskStatus.CANCELLED, outcome=outcome, closed_at=now, closed_by=closed_by)


#: The reply kinds whose message is an answer: the only ones whose text the log keeps.
ANSWER_KINDS = frozenset({ReplyKind.SELECTED, ReplyKind.ANSWERED, ReplyKind.VOTED})


def message_event(before: Ask, after: Ask, kind: ReplyKind, text: str, sender: str | None, at: datetime) -> NewEvent:
    """A message from ``sender`` that the open ask ``before`` answered with ``kind`` (leaving ``after``).

    A refusal is ``refused``; a responder's choice on an ask that needs several is
    ``voted``; anything else ``touched``. Only an answer or a vote keeps ``text``.
    """
    if kind is ReplyKind.NOT_YOURS:
        return _event(before, EventKind.REFUSED, at, sender, {"kind": kind.value})
    if before.quorum > 1 and kind in (ReplyKind.VOTED, ReplyKind.SELECTED):
        vote = next((v for v in after.votes if v.sender == sender), None)
        option = vote.option_index if vote is not None else after.option_index
        counted = sum(1 for v in after.votes if v.option_index == option) if after.votes else after.quorum
        data: dict[str, Any] = {
            "text": text,
            "answer": vote.answer if vote is not None else after.answer,
            "option_index": option,
            "votes": counted,
            "quorum": after.quorum,
        }
        return _event(before, EventKind.VOTED, at, sender, data)
    data = {"kind": kind.value}
    if kind in ANSWER_KINDS:
        data.update(text=text, answer=after.answer, option_index=after.option_index)
    return _event(before, EventKind.TOUCHED, at, sender, data)


def _event(ask: Ask, kind: EventKind, at: datetime, sender: str | None, data: dict[str, Any]) -> NewEvent:
    # Made here, not by parkgate.core.events: a message's path stays in this module.
    return NewEvent(ask.id, kind, at, sender, ask.owner, data)
