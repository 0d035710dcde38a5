"""Every exit a menu or an escalated line names really leaves, whatever the option labels.

An option label beats a bare control word: in a menu with the option "Menu", a bare
``menu`` selects it. So the footer (and the escalated line) must never name a bare
word that a label has taken; there only the slash forms still leave.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from parkgate import Gateway, ManualClock, ReplyKind
from parkgate.core import phrases as P
from parkgate.core.kinds import AskKind, AskStatus
from parkgate.core.machine import DEFAULT_ESCALATE_AFTER, match, render_question, step
from parkgate.core.menu import Verdict, normalise
from parkgate.core.model import Ask
from parkgate.core.phrases import CANCEL_WORDS, CONTROL_WORDS, RESHOW_WORDS
from parkgate.core.stopping_point import StoppingPointError, make_spec

T0 = datetime(2026, 1, 1, 9, 0, tzinfo=UTC)
PROMPT = "Pick one."
#: A control word, bare or with one slash, standing on its own in a line.
_TOKEN = re.compile(r"(?<![\w/])(/?[a-z]+)(?![\w/])")


def make_ask(options: Sequence[str], kind: AskKind = AskKind.CHOICE, mismatches: int = 0) -> Ask:
    return Ask(
        id="ask-1",
        conversation_id="conv-1",
        run_id="run-1",
        kind=kind,
        prompt=PROMPT,
        options=tuple(options),
        status=AskStatus.OPEN,
        asked_at=T0,
        last_touched=T0,
        ttl_seconds=6 * 3600.0,
        mismatches=mismatches,
    )


def named_exits(line: str) -> set[str]:
    """The control words a line tells a person to type, as written (``menu``, ``/cancel``).

    The prose "see the options again" names no exit: "options" there is not a word to type.
    """
    line = line.casefold().replace("the options", "")
    return {token for token in _TOKEN.findall(line) if token.removeprefix("/") in CONTROL_WORDS}


def exit_lines(ask: Ask, miss: str) -> list[str]:
    """The lines that name exits: the menu's footer and the escalated line's first line."""
    question = render_question(ask)
    escalated = step(ask.evolve(mismatches=DEFAULT_ESCALATE_AFTER - 1), miss, T0)
    assert escalated.kind is ReplyKind.ESCALATED
    reshown = step(ask, "/menu", T0)
    assert reshown.text == question
    return [question.split("\n")[-1], escalated.text.split("\n")[0]]


def assert_every_named_exit_leaves(ask: Ask, miss: str) -> None:
    for line in exit_lines(ask, miss):
        named = named_exits(line)
        assert any(w.removeprefix("/") in RESHOW_WORDS for w in named), f"no re-show exit in {line!r}"
        assert any(w.removeprefix("/") in CANCEL_WORDS for w in named), f"no cancel exit in {line!r}"
        for word in named:
            expected = ReplyKind.RESHOWN if word.removeprefix("/") in RESHOW_WORDS else ReplyKind.CANCELLED
            for mismatches in (0, DEFAULT_ESCALATE_AFTER):
                result = step(ask.evolve(mismatches=mismatches), word, T0 + timedelta(minutes=1))
                assert result.kind is expected, (
                    f"{line!r} names {word!r}, but with options {ask.options!r} it gave {result.kind.value}"
                )


# -- examples ----------------------------------------------------------------------------------


def test_a_plain_menu_still_names_the_bare_words() -> None:
    ask = make_ask(("Sequence", "Class"))
    assert render_question(ask).endswith(P.CHOICE_MENU_FOOTER)
    assert named_exits(P.CHOICE_MENU_FOOTER) == {"menu", "cancel"}
    assert_every_named_exit_leaves(ask, "huh")


def test_an_option_named_stop_leaves_the_bare_footer_alone() -> None:
    # The footer names menu and cancel, not stop: "Stop" taking the bare "stop" changes nothing.
    assert render_question(make_ask(("Go", "Stop"))).endswith(P.CHOICE_MENU_FOOTER)


def test_slashed_footer_names_only_slash_forms() -> None:
    assert named_exits(P.CHOICE_MENU_FOOTER_SLASHED) == {"/menu", "/cancel"}
    # The escalated lines name every control word, each in its slash form.
    assert named_exits(P.EXITS_HINT) == {"/" + word for word in P.CONTROL_WORDS}


def test_an_option_named_menu_makes_the_footer_name_the_slash_forms() -> None:
    ask = make_ask(("Red", "Menu"))
    question = render_question(ask)
    assert question.endswith(P.CHOICE_MENU_FOOTER_SLASHED)
    assert step(ask, "menu", T0).kind is ReplyKind.SELECTED  # the label won, as documented
    assert step(ask, "/menu", T0).kind is ReplyKind.RESHOWN
    assert_every_named_exit_leaves(ask, "huh")


def test_a_label_equal_to_cancel_after_normalisation_counts_as_taking_it() -> None:
    for label in ("CANCEL", " Cancel ", "\uff43\uff41\uff4e\uff43\uff45\uff4c", "cAnCeL"):  # fullwidth too
        ask = make_ask(("Keep", label))
        assert render_question(ask).endswith(P.CHOICE_MENU_FOOTER_SLASHED), label
        assert step(ask, "cancel", T0).kind is ReplyKind.SELECTED
        assert_every_named_exit_leaves(ask, "huh")


def test_the_asked_reply_through_a_gateway_names_exits_that_work(tmp_path: Path) -> None:
    with Gateway(f"sqlite:///{tmp_path / 'g.db'}", clock=ManualClock(T0)) as gateway:
        asked = gateway.ask("c", "Where next?", ["Menu", "Cancel", "Home"])
        assert asked.text.endswith(P.CHOICE_MENU_FOOTER_SLASHED)
        assert gateway.handle("c", "/menu").kind is ReplyKind.RESHOWN
        assert gateway.handle("c", "/cancel").kind is ReplyKind.CANCELLED
        gateway.ask("c", "Where next?", ["Menu", "Cancel", "Home"])
        picked = gateway.handle("c", "menu")
        assert (picked.kind, picked.answer) == (ReplyKind.SELECTED, "Menu")


# -- the property ------------------------------------------------------------------------------

#: Labels that collide with control words in the ways normalisation allows, and some that do not.
_COLLIDING = st.sampled_from(sorted(CONTROL_WORDS)).flatmap(
    lambda word: st.sampled_from(
        [word, word.upper(), word.title(), f"  {word} ", "".join(chr(ord(c) + 0xFEE0) for c in word)]
    )
)
_LABELS = st.one_of(
    _COLLIDING,
    st.sampled_from(["Red", "Green", "Menu please", "cancel it", "2", "10", "Options:"]),
    st.text(st.characters(codec="utf-8", exclude_characters="\x00"), min_size=1, max_size=12),
)


def _valid_options(labels: list[str]) -> tuple[str, ...]:
    """The labels as a real ask would hold them (validated and tidied), or skip the example."""
    try:
        return make_spec(AskKind.CHOICE, PROMPT, labels).options
    except StoppingPointError:
        assume(False)
        raise


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.filter_too_much])
@given(labels=st.lists(_LABELS, min_size=1, max_size=6, unique_by=normalise), kind=st.sampled_from(list(AskKind)))
def test_every_exit_a_menu_or_escalation_names_really_exits(labels: list[str], kind: AskKind) -> None:
    options = _valid_options(labels) if kind is AskKind.CHOICE else ()
    ask = make_ask(options, kind)
    misses = [
        m for m in ("huh?", "zz no such option zz", "\u00bf") if match(kind, options, m).verdict is Verdict.MISMATCH
    ]
    if kind is AskKind.TEXT:
        misses = [""]
    assume(misses)
    assert_every_named_exit_leaves(ask, misses[0])
