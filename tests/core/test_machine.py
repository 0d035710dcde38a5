"""The state machine: (open ask, input, now) -> (reply kind, text, next ask state)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from parkgate.core import phrases as P
from parkgate.core.kinds import AskKind, AskStatus, ReplyKind
from parkgate.core.machine import DEFAULT_ESCALATE_AFTER, cancel, expire, render_question, step
from parkgate.core.model import Ask
from parkgate.core.phrases import CANCEL_WORDS, CONTROL_WORDS, RESHOW_WORDS

T0 = datetime(2026, 1, 1, 9, 0, tzinfo=UTC)
TTL = timedelta(hours=6)
UML = ("Sequence", "Class", "Activity")
MISSES = ("pick the right diagram", "did it run?", "huh", "what", "¿", "4", "0")


def make_ask(
    options: Sequence[str] = UML,
    *,
    kind: AskKind | None = None,
    mismatches: int = 0,
    last_touched: datetime = T0,
    ttl: timedelta = TTL,
    default: str | None = None,
) -> Ask:
    """An open ask as the store would hand it to the machine (the core never reads a clock)."""
    chosen = kind if kind is not None else (AskKind.CHOICE if options else AskKind.TEXT)
    return Ask(
        id="ask-1",
        conversation_id="conv-1",
        run_id="run-1",
        kind=chosen,
        prompt="Which UML diagram?" if chosen is AskKind.CHOICE else "Describe the diagram.",
        options=tuple(options) if chosen is AskKind.CHOICE else (),
        status=AskStatus.OPEN,
        asked_at=T0,
        last_touched=last_touched,
        ttl_seconds=ttl.total_seconds(),
        mismatches=mismatches,
        default=default,
    )


def text_ask(**kw: object) -> Ask:
    return make_ask((), kind=AskKind.TEXT, **kw)  # type: ignore[arg-type]


def feed(ask: Ask, inputs: Sequence[str], escalate_after: int = DEFAULT_ESCALATE_AFTER) -> list[tuple[ReplyKind, str]]:
    """Send ``inputs`` one minute apart; the (kind, text) of each reply."""
    out: list[tuple[ReplyKind, str]] = []
    now = T0
    for text in inputs:
        now += timedelta(minutes=1)
        result = step(ask, text, now, escalate_after)
        out.append((result.kind, result.text))
        ask = result.ask
    return out


def words_in(line: str) -> set[str]:
    """The control words a line names (bare or slashed), as a person would read them."""
    return {word for word in re.findall(r"/?([a-z]+)", line.casefold()) if word in CONTROL_WORDS}


# -- escalation ------------------------------------------------------------------------------


def test_escalated_line_appears_exactly_from_miss_three() -> None:
    kinds = [kind for kind, _ in feed(make_ask(), MISSES)]
    assert kinds == [ReplyKind.RETRY, ReplyKind.RETRY] + [ReplyKind.ESCALATED] * (len(MISSES) - 2)


@pytest.mark.parametrize("after", [1, 2, 4, 7])
def test_escalation_threshold_is_configurable(after: int) -> None:
    kinds = [kind for kind, _ in feed(make_ask(), MISSES * 2, escalate_after=after)]
    assert kinds == [ReplyKind.RETRY] * (after - 1) + [ReplyKind.ESCALATED] * (len(MISSES) * 2 - after + 1)


def test_escalate_after_below_one_is_refused() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        step(make_ask(), "huh", T0, escalate_after=0)


def test_the_reply_changes_shape_at_escalation() -> None:
    replies = feed(make_ask(), MISSES[:3])
    assert replies[0][1] == replies[1][1]  # the plain retry line repeats as it is
    assert replies[2][1] != replies[1][1]
    assert replies[0][1].startswith(P.PHRASES[ReplyKind.RETRY].split("{")[0])


@pytest.mark.parametrize(("kind", "ask"), [("choice", make_ask(("Yes", "No"))), ("text", text_ask())])
def test_escalated_line_counts_the_tries(kind: str, ask: Ask) -> None:
    misses = [""] * 6 if kind == "text" else list(MISSES[:6])
    escalated = [text for reply, text in feed(ask, misses) if reply is ReplyKind.ESCALATED]
    assert len(escalated) == 4
    for tries, line in enumerate(escalated, start=3):
        first_line = line.split("\n")[0]
        assert re.search(rf"\b{tries}\b", first_line), f"{line!r} does not count {tries} tries"
    assert len(set(escalated)) == 4  # each try shows a new count


def test_choice_escalated_line_names_every_exit_and_each_named_exit_works() -> None:
    ask = make_ask()
    _, line = feed(ask, MISSES[:3])[-1]
    named = words_in(line.split("\n")[0])
    assert named & RESHOW_WORDS, f"escalated line names no menu word: {line!r}"
    assert named & CANCEL_WORDS, f"escalated line names no cancel word: {line!r}"
    assert P.EXITS_HINT in line
    assert re.search(r"\b1\b.*\b3\b", line.split("\n")[0]), "the line names the valid numbers 1..n"
    for word in named:
        expected = ReplyKind.RESHOWN if word in RESHOW_WORDS else ReplyKind.CANCELLED
        assert step(ask.evolve(mismatches=3), word, T0).kind is expected, word
    # The menu is shown again after a blank line, without its footer: the line names every exit.
    assert line.endswith("\n\n" + render_question(ask, footer=False))
    assert P.CHOICE_MENU_FOOTER not in line and line.endswith("3. Activity")


def test_text_escalated_line_names_the_slash_exits_and_they_work() -> None:
    ask = text_ask()
    _, line = feed(ask, ["", " ", "\n"])[-1]
    assert "/cancel" in line and "/menu" in line
    assert step(ask, "/cancel", T0).kind is ReplyKind.CANCELLED
    assert step(ask, "/menu", T0).kind is ReplyKind.RESHOWN


def test_text_retry_line_names_the_slash_exits_too() -> None:
    kind, line = feed(text_ask(), [""])[0]
    assert kind is ReplyKind.RETRY
    assert "/cancel" in line


@pytest.mark.parametrize("kind", ["text", "choice"])
def test_a_miss_names_the_exits_once_and_a_blank_line_sets_the_question_apart(kind: str) -> None:
    ask = text_ask() if kind == "text" else make_ask()
    misses = [""] * 4 if kind == "text" else list(MISSES[:4])
    for reply, line in feed(ask, misses):
        _head, question = line.split("\n\n", 1)
        assert question.startswith(ask.prompt), line  # the miss line, a blank line, the question
        assert len(re.findall(r"\bcancel\b", line)) == 1, f"{reply.value} names cancel more than once: {line!r}"
        if reply is ReplyKind.ESCALATED:  # it names every exit: the question follows without its footer
            assert question == render_question(ask, footer=False)
        else:
            assert question == render_question(ask)


@pytest.mark.parametrize("word", ["/cancel", "/stop"])
def test_a_cancel_says_what_it_dropped_a_menu_or_a_question(word: str) -> None:
    assert step(text_ask(), word, T0).text == P.TEXT_CANCELLED
    assert step(make_ask(), word, T0).text == P.PHRASES[ReplyKind.CANCELLED]
    assert "menu" not in P.TEXT_CANCELLED and "menu" in P.PHRASES[ReplyKind.CANCELLED]


def test_miss_counter_is_kept_on_the_ask() -> None:
    ask = make_ask()
    for expected in range(1, 5):
        result = step(ask, "nope", T0 + timedelta(minutes=expected))
        ask = result.ask
        assert ask.mismatches == expected and ask.is_open and result.parked


# -- selection, menu, cancel -----------------------------------------------------------------


def test_selection_closes_the_ask_with_label_and_index_and_resets_the_counter() -> None:
    ask = step(step(make_ask(), "nope", T0).ask, "nope again", T0).ask
    assert ask.mismatches == 2
    now = T0 + timedelta(minutes=3)
    result = step(ask, "2", now)
    assert result.kind is ReplyKind.SELECTED
    assert (result.answer, result.option_index) == ("Class", 2)
    assert result.text == P.PHRASES[ReplyKind.SELECTED].format(index=2, answer="Class")
    assert result.ask.status is AskStatus.ANSWERED and not result.parked
    assert result.ask.mismatches == 0
    assert result.ask.answered_at == result.ask.closed_at == now and result.ask.last_touched == now


def test_selection_by_label() -> None:
    result = step(make_ask(), "  activity ", T0)
    assert (result.kind, result.answer, result.option_index) == (ReplyKind.SELECTED, "Activity", 3)


def test_two_misses_then_a_selection_then_a_fresh_ask_starts_from_retry() -> None:
    # A selection resets the counter: the next ask's first miss is a plain retry again.
    done = step(step(step(make_ask(), "x", T0).ask, "y", T0).ask, "1", T0).ask
    fresh = make_ask(mismatches=done.mismatches)
    assert step(fresh, "z", T0).kind is ReplyKind.RETRY


@pytest.mark.parametrize("word", [*sorted(RESHOW_WORDS), "/menu", "/options", " MENU "])
def test_menu_reshows_without_advancing_the_counter(word: str) -> None:
    ask = make_ask(mismatches=2)
    result = step(ask, word, T0 + timedelta(minutes=1))
    assert result.kind is ReplyKind.RESHOWN
    assert result.ask.mismatches == 2 and result.parked
    assert result.text == render_question(ask)
    # ...and the next miss is the third, not the fourth
    following = step(result.ask, "huh", T0 + timedelta(minutes=2))
    assert following.kind is ReplyKind.ESCALATED and following.ask.mismatches == 3


def test_menu_between_misses_never_changes_when_escalation_starts() -> None:
    kinds = [kind for kind, _ in feed(make_ask(), ["a", "menu", "b", "options", "/menu", "c"])]
    assert kinds == [
        ReplyKind.RETRY,
        ReplyKind.RESHOWN,
        ReplyKind.RETRY,
        ReplyKind.RESHOWN,
        ReplyKind.RESHOWN,
        ReplyKind.ESCALATED,
    ]


@pytest.mark.parametrize("word", sorted(CANCEL_WORDS) + [f"/{w}" for w in sorted(CANCEL_WORDS)])
def test_cancel_words_close_the_ask_as_cancelled_with_the_fixed_line(word: str) -> None:
    now = T0 + timedelta(minutes=5)
    result = step(make_ask(mismatches=4), word, now)
    assert result.kind is ReplyKind.CANCELLED
    assert result.text == P.PHRASES[ReplyKind.CANCELLED]
    assert result.ask.status is AskStatus.CANCELLED and not result.parked
    assert result.ask.answer is None and result.answer is None
    assert result.ask.closed_at == now and result.ask.answered_at is None, "a cancel is no answer"


def test_option_named_stop_is_selected_not_cancelled() -> None:
    ask = make_ask(("Go", "Stop"))
    assert (step(ask, "stop", T0).kind, step(ask, "stop", T0).answer) == (ReplyKind.SELECTED, "Stop")
    assert step(ask, "/stop", T0).kind is ReplyKind.CANCELLED


def test_step_refuses_a_closed_ask() -> None:
    closed = step(make_ask(), "1", T0).ask
    with pytest.raises(ValueError, match="not open"):
        step(closed, "2", T0)


def test_operator_cancel() -> None:
    now = T0 + timedelta(minutes=9)
    closed = cancel(make_ask(), now)
    assert closed.status is AskStatus.CANCELLED and closed.closed_at == now and not closed.is_open
    assert closed.answered_at is None
    assert cancel(make_ask(), now, outcome="replaced").outcome == "replaced"


# -- text asks -------------------------------------------------------------------------------


def test_text_question_names_slash_cancel() -> None:
    question = render_question(text_ask())
    assert "/cancel" in question
    assert question.startswith("Describe the diagram.")
    assert P.TEXT_QUESTION_FOOTER in question


def test_choice_menu_lists_numbered_options_and_the_exits() -> None:
    question = render_question(make_ask())
    assert "1. Sequence\n2. Class\n3. Activity" in question
    assert words_in(P.CHOICE_MENU_FOOTER) & RESHOW_WORDS and words_in(P.CHOICE_MENU_FOOTER) & CANCEL_WORDS
    assert question.endswith(P.CHOICE_MENU_FOOTER)


def test_text_answer_is_the_text_as_given() -> None:
    result = step(text_ask(mismatches=2), "  A login sequence  ", T0)
    assert result.kind is ReplyKind.ANSWERED
    assert result.answer == "  A login sequence  " == result.ask.answer
    assert result.text == P.PHRASES[ReplyKind.ANSWERED]
    assert result.ask.status is AskStatus.ANSWERED and result.ask.mismatches == 0


@pytest.mark.parametrize("word", [*sorted(CONTROL_WORDS), "Cancel", " STOP "])
def test_bare_control_word_answer_says_so_and_names_the_door(word: str) -> None:
    result = step(text_ask(), word, T0)
    assert result.kind is ReplyKind.ANSWERED
    assert result.answer == word
    assert result.text == P.TEXT_CONTROL_WORD_TAKEN.format(answer=word.strip())
    assert "/cancel" in result.text and word.strip() in result.text


@pytest.mark.parametrize("word", ["/cancel", "/stop", "/quit", "/exit", "/nevermind"])
def test_slash_cancel_drops_a_text_ask(word: str) -> None:
    result = step(text_ask(), word, T0)
    assert result.kind is ReplyKind.CANCELLED and not result.parked


def test_text_ask_menu_reshows_the_question() -> None:
    ask = text_ask(mismatches=1)
    result = step(ask, "/menu", T0)
    assert result.kind is ReplyKind.RESHOWN
    assert result.text == render_question(ask) and result.ask.mismatches == 1


def test_empty_text_answer_counts_as_a_miss_and_escalates_from_three() -> None:
    kinds = [kind for kind, _ in feed(text_ask(), ["", "  ", "\t", ""])]
    assert kinds == [ReplyKind.RETRY, ReplyKind.RETRY, ReplyKind.ESCALATED, ReplyKind.ESCALATED]


# -- expiry ----------------------------------------------------------------------------------


def test_exactly_the_ttl_is_not_expired() -> None:
    ask = make_ask()
    assert not ask.is_expired(T0 + TTL)
    assert step(ask, "1", T0 + TTL).kind is ReplyKind.SELECTED


def test_one_microsecond_past_the_ttl_is_expired() -> None:
    ask = make_ask()
    now = T0 + TTL + timedelta(microseconds=1)
    assert ask.is_expired(now)
    result = step(ask, "1", now)
    assert result.kind is ReplyKind.PASS and result.expired
    assert result.text == P.PHRASES[ReplyKind.PASS]
    assert result.ask.status is AskStatus.EXPIRED and not result.parked
    assert result.answer is None and result.ask.answer is None


def test_expiry_counts_from_last_touched_not_from_asked_at() -> None:
    touched = T0 + timedelta(hours=5)
    ask = make_ask(last_touched=touched)
    assert not ask.is_expired(T0 + TTL + timedelta(hours=1))
    assert ask.is_expired(touched + TTL + timedelta(seconds=1))


def test_every_touch_moves_the_expiry() -> None:
    ask = make_ask(ttl=timedelta(minutes=10))
    now = T0
    for text in ("huh", "menu", "what"):
        now += timedelta(minutes=9)
        result = step(ask, text, now)
        assert result.kind is not ReplyKind.PASS
        ask = result.ask
        assert ask.last_touched == now
    assert step(ask, "1", now + timedelta(minutes=11)).kind is ReplyKind.PASS


@pytest.mark.parametrize("text", ["1", "cancel", "/cancel", "menu", "junk", ""])
def test_an_expired_ask_swallows_nothing(text: str) -> None:
    # Whatever the input, an ask past its TTL is closed as expired and the message passes on.
    result = step(make_ask(), text, T0 + TTL * 2)
    assert result.kind is ReplyKind.PASS
    assert result.ask.status is AskStatus.EXPIRED


def test_expiry_with_a_default_records_it_but_is_still_expired() -> None:
    now = T0 + TTL + timedelta(seconds=1)
    result = expire(make_ask(default="Class"), now)
    assert result.ask.status is AskStatus.EXPIRED and result.ask.outcome == "expired"
    assert result.ask.answer == "Class" and result.ask.option_index == 2
    assert result.ask.closed_at == T0 + TTL, "closed at its due time, not at the read"
    assert result.ask.answered_at is None, "a default is no answer"
    assert result.kind is ReplyKind.PASS and result.expired
    via_step = step(make_ask(default="Class"), "cancel", now)
    assert via_step.ask.status is AskStatus.EXPIRED and via_step.ask.answer == "Class"


def test_text_expiry_default_is_recorded_as_the_answer() -> None:
    result = expire(text_ask(default="no description given"), T0 + TTL * 2)
    assert result.ask.status is AskStatus.EXPIRED
    assert (result.ask.answer, result.ask.option_index) == ("no description given", None)


def test_expiry_without_a_default_has_no_answer_and_is_never_a_cancel() -> None:
    result = expire(make_ask(), T0 + TTL * 2)
    assert result.ask.status is AskStatus.EXPIRED
    assert result.ask.status is not AskStatus.CANCELLED
    assert result.ask.outcome != AskStatus.CANCELLED.value
    assert result.kind is not ReplyKind.CANCELLED
    assert result.ask.answer is None and result.ask.option_index is None


# -- properties ------------------------------------------------------------------------------

INPUTS = st.one_of(
    st.sampled_from(["1", "2", "3", "4", "0", "02", "menu", "/menu", "cancel", "/stop", "//cancel", "", "Class"]),
    st.text(max_size=15),
)


@settings(max_examples=200, deadline=None)
@given(
    kind=st.sampled_from(list(AskKind)),
    inputs=st.lists(INPUTS, min_size=1, max_size=12),
    gaps=st.lists(st.integers(0, 8 * 3600), min_size=12, max_size=12),
    after=st.integers(1, 5),
)
def test_every_step_has_a_kind_and_the_counter_follows_the_rules(
    kind: AskKind, inputs: list[str], gaps: list[int], after: int
) -> None:
    ask = make_ask() if kind is AskKind.CHOICE else text_ask()
    now = T0
    for text, gap in zip(inputs, gaps, strict=False):
        now += timedelta(seconds=gap)
        expired = ask.is_expired(now)
        result = step(ask, text, now, after)
        assert isinstance(result.kind, ReplyKind)
        if expired:
            assert result.kind is ReplyKind.PASS and result.ask.status is AskStatus.EXPIRED
        else:
            assert result.kind is not ReplyKind.PASS
        if result.kind in (ReplyKind.RETRY, ReplyKind.ESCALATED):
            assert result.ask.mismatches == ask.mismatches + 1
            assert (result.kind is ReplyKind.ESCALATED) == (result.ask.mismatches >= after)
        elif result.kind is ReplyKind.RESHOWN:
            assert result.ask.mismatches == ask.mismatches
        assert result.parked == (result.kind in (ReplyKind.RETRY, ReplyKind.ESCALATED, ReplyKind.RESHOWN))
        if not result.parked:
            assert_closed_at_its_moment(ask, result.ask, now)
            return
        assert result.ask.closed_at is None and result.ask.answered_at is None
        ask = result.ask


def assert_closed_at_its_moment(before: Ask, closed: Ask, now: datetime) -> None:
    """An expiry closes at its due time, anything else at ``now``; only an answer has ``answered_at``."""
    if closed.status is AskStatus.EXPIRED:
        assert closed.closed_at == before.last_touched + before.ttl <= now, "the due time, never the read's moment"
    else:
        assert closed.closed_at == now
    assert closed.answered_at == (now if closed.status is AskStatus.ANSWERED else None)


@settings(max_examples=100, deadline=None)
@given(late=st.integers(1, 30 * 24 * 3600), touched=st.integers(0, 3600), default=st.sampled_from([None, "Class"]))
def test_an_expired_ask_closed_at_its_due_time_however_late_the_read(
    late: int, touched: int, default: str | None
) -> None:
    ask = make_ask(last_touched=T0 + timedelta(seconds=touched), default=default)
    read_at = ask.due_at + timedelta(seconds=late)
    for closed in (expire(ask, read_at).ask, step(ask, "1", read_at).ask):
        assert closed.status is AskStatus.EXPIRED
        assert closed.closed_at == ask.due_at and closed.answered_at is None


def test_an_ask_expired_before_it_fell_due_closed_at_that_moment() -> None:
    early = T0 + timedelta(minutes=5)
    closed = expire(make_ask(), early).ask
    assert closed.closed_at == early < make_ask().due_at
