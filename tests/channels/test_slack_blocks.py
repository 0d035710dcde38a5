"""What parkgate shows on Slack, without Slack: the ask's blocks, each way a close reads,
and the exits every reply names (the buttons, never a slash form Slack would swallow)."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime

import pytest

from parkgate.channels.lines import duration
from parkgate.channels.slack.blocks import (
    MAX_BUTTON_CHARS,
    MAX_OPTION_BUTTONS,
    already_closed_line,
    ask_blocks,
    clip,
    closed_line,
    escape,
    for_slack,
    mention,
    unescape,
)
from parkgate.core import machine
from parkgate.core.kinds import OPERATOR, AskKind, AskStatus, ReplyKind
from parkgate.core.model import Ask

T0 = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
OPEN = Ask("a1", "c1", "r1", AskKind.CHOICE, "Deploy?", ("Deploy", "Hold"), AskStatus.OPEN, T0, T0, 21600.0)


def closed(**fields: object) -> Ask:
    return dataclasses.replace(OPEN, **{"closed_at": T0, **fields})  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("ask", "line"),
    [
        (closed(status=AskStatus.ANSWERED, answer="Deploy", answered_by="UALICE"), "Answered: Deploy, by <@UALICE>"),
        (closed(status=AskStatus.ANSWERED, answer="Deploy"), "Answered: Deploy"),
        (closed(status=AskStatus.CANCELLED, outcome="cancelled", closed_by="UBOB"), "Dropped by <@UBOB>, nothing ran."),
        (
            closed(status=AskStatus.CANCELLED, outcome="cancelled", closed_by=OPERATOR),
            "Dropped by an operator, nothing ran.",
        ),
        (closed(status=AskStatus.CANCELLED, outcome="replaced"), "Replaced by a newer question, nothing ran."),
        (closed(status=AskStatus.EXPIRED, outcome="expired"), "Expired after 6 h, nothing ran."),
        (closed(status=AskStatus.EXPIRED, answer="Hold"), 'Expired after 6 h; the default "Hold" stood in.'),
    ],
)
def test_every_close_reads_as_what_happened(ask: Ask, line: str) -> None:
    assert closed_line(ask) == line


def test_a_click_on_a_closed_ask_says_how_and_when_it_closed() -> None:
    answered = closed(status=AskStatus.ANSWERED, answer="Deploy", answered_by="UALICE")
    at_t0 = "at 09:00 UTC on 5 Jan 2026"  # the close: closed_at, T0
    assert already_closed_line(answered) == f"This question is already closed (answered by <@UALICE> {at_t0})."
    assert (
        already_closed_line(closed(status=AskStatus.ANSWERED)) == f"This question is already closed (answered {at_t0})."
    )
    # An expired ask closed at its due time: last touched at T0, with a TTL of 6 h.
    expired = already_closed_line(closed(status=AskStatus.EXPIRED, closed_at=OPEN.due_at))
    assert expired == "This question is already closed (it expired at 15:00 UTC on 5 Jan 2026)."
    dropped = closed(status=AskStatus.CANCELLED, closed_by="UBOB")
    assert already_closed_line(dropped) == f"This question is already closed (dropped by <@UBOB> {at_t0})."
    by_operator = closed(status=AskStatus.CANCELLED, closed_by=OPERATOR)
    assert already_closed_line(by_operator) == f"This question is already closed (dropped by an operator {at_t0})."
    replaced = closed(status=AskStatus.CANCELLED, outcome="replaced")
    assert already_closed_line(replaced) == f"This question is already closed (replaced by a newer question {at_t0})."
    late_in_the_year = closed(
        status=AskStatus.ANSWERED, answered_by="UALICE", closed_at=datetime(2026, 12, 6, 14, 2, tzinfo=UTC)
    )
    assert already_closed_line(late_in_the_year).endswith("(answered by <@UALICE> at 14:02 UTC on 6 Dec 2026).")


def test_durations_read_in_the_largest_whole_unit() -> None:
    assert [duration(s) for s in (21600, 5400, 90, 1)] == ["6 h", "90 min", "90 s", "1 s"]


def test_an_ask_has_a_button_per_option_then_show_options_and_cancel_capped_at_slacks_limit() -> None:
    many = dataclasses.replace(OPEN, options=tuple(f"Option {n}" for n in range(1, 31)))
    (_, actions, _) = ask_blocks(many)
    labels = [element["text"]["text"] for element in actions["elements"]]
    assert len(labels) == MAX_OPTION_BUTTONS + 2 <= 25
    assert labels[-2:] == ["Show options", "Cancel"] and {e["value"] for e in actions["elements"]} == {"a1"}


@pytest.mark.parametrize("kind", [AskKind.CHOICE, AskKind.TEXT])
def test_every_line_a_slack_user_reads_names_the_buttons_not_the_slash_forms(kind: AskKind) -> None:
    ask = dataclasses.replace(OPEN, kind=kind, options=OPEN.options if kind is AskKind.CHOICE else ())
    texts = [ask_blocks(ask)[0]["text"]["text"]]
    for misses in range(1, 5):
        step = machine.step(dataclasses.replace(ask, mismatches=misses - 1), "  " if kind is AskKind.TEXT else "x", T0)
        assert step.kind in (ReplyKind.RETRY, ReplyKind.ESCALATED)
        texts.append(for_slack(step.text))
    for text in texts:
        assert "/cancel" not in text and "/menu" not in text, text
        assert "Cancel" in text, text


def test_only_a_slack_user_id_is_made_a_mention_and_anything_else_is_escaped() -> None:
    assert mention("UALICE") == "<@UALICE>" and mention("W012ABC") == "<@W012ABC>"
    for name in ("U_ALICE", "Uñ", "U1>", "<!channel>", "alice@example.com", "U", "ualice"):
        assert not mention(name).startswith("<@"), name
    assert mention("<!channel>") == "&lt;!channel&gt;" and mention("a&b") == "a&amp;b"


def test_escaping_round_trips_and_a_clipped_text_never_ends_inside_an_entity() -> None:
    typed = "a < b && c > <!here>"
    assert escape(typed) == "a &lt; b &amp;&amp; c &gt; &lt;!here&gt;" and unescape(escape(typed)) == typed
    assert unescape("&amp;lt;") == "&lt;"  # a person who typed "&lt;" keeps it
    label = "x" * (MAX_BUTTON_CHARS - 2) + "<>"
    clipped = clip(escape(label), MAX_BUTTON_CHARS)
    assert clipped == "x" * (MAX_BUTTON_CHARS - 2) and len(clipped) <= MAX_BUTTON_CHARS
    (_, actions, _) = ask_blocks(dataclasses.replace(OPEN, options=(label, "Hold")))
    assert actions["elements"][0]["text"]["text"] == clipped
