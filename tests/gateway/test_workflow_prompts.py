"""A workflow's later prompts quote earlier answers: whatever a person typed, the run goes on."""

from __future__ import annotations

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from parkgate import Gateway, ReplyKind
from parkgate.core import phrases as P
from parkgate.core.stopping_point import MAX_PROMPT_CHARS, StoppingPointError, make_spec
from parkgate.gateway.checks import MAX_MESSAGE_CHARS
from parkgate.workflow import MAX_QUOTED_ANSWER_CHARS, Phase, Workflow

CONFIRM = Workflow(
    "confirm",
    [
        Phase("describe", "Describe it"),
        Phase("confirm", "You wrote:\n{describe}\nOK?", options=("Yes", "No")),
    ],
    finish=lambda answers: f"done: {answers['confirm']}",
)


@pytest.mark.parametrize(
    "answer",
    [
        "x" * 5000,  # longer than a prompt may be
        "line\n[[/ask]]\nmore",  # a line that would close the rendered marker
        "[[ask choice]]",
        "  [[ASK]]  ",
        "{describe} {confirm} {0} {a.b} {",  # braces in an answer stay as typed
    ],
)
def test_any_answer_moves_the_run_to_its_next_question(gateway: Gateway, answer: str) -> None:
    gateway.register(CONFIRM)
    gateway.start("c", "confirm")
    reply = gateway.handle("c", answer)
    assert reply.kind is ReplyKind.ANSWERED
    assert reply.next_ask is not None and reply.next_ask.kind is ReplyKind.ASKED
    assert reply.parked
    ask = gateway.get(reply.next_ask.ask_id or "")
    assert ask.is_open and ask.phase == "confirm"
    assert len(ask.prompt) <= MAX_PROMPT_CHARS
    assert gateway.handle("c", "1").kind is ReplyKind.SELECTED
    assert gateway.run(ask.run_id) is not None


def test_a_long_answer_is_quoted_cut_with_an_ellipsis(gateway: Gateway) -> None:
    gateway.register(CONFIRM)
    gateway.start("c", "confirm")
    reply = gateway.handle("c", "y" * 3000)
    ask = gateway.get(reply.next_ask.ask_id or "") if reply.next_ask else None
    assert ask is not None
    assert "y" * (MAX_QUOTED_ANSWER_CHARS - 1) + "\u2026" in ask.prompt
    assert "y" * MAX_QUOTED_ANSWER_CHARS not in ask.prompt


def test_a_marker_line_in_an_answer_is_quoted_not_dropped(gateway: Gateway) -> None:
    gateway.register(CONFIRM)
    gateway.start("c", "confirm")
    reply = gateway.handle("c", "before\n[[/ask]]\nafter")
    ask = gateway.get(reply.next_ask.ask_id or "") if reply.next_ask else None
    assert ask is not None
    assert "before\n> [[/ask]]\nafter" in ask.prompt


@pytest.mark.parametrize(
    ("template", "shown"),
    [
        ('Send {"a": 1} for {describe}?', 'Send {"a": 1} for blue?'),
        ("Use {0} or {describe}?", "Use {0} or blue?"),
        ("Brace { alone, {describe}?", "Brace { alone, blue?"),
        ("{a.b} {describe}", "{a.b} blue"),
        ("Set {x:>10}!", "Set {x:>10}!"),
        ("{a[0]} {later}", "{a[0]} {later}"),  # a name with no answer yet stays as written
    ],
)
def test_only_placeholders_naming_answers_are_filled(gateway: Gateway, template: str, shown: str) -> None:
    flow = Workflow(
        "braces",
        [Phase("describe", "Colour?"), Phase("next", template, options=("Yes", "No"))],
        finish=lambda answers: "ok",
    )
    gateway.register(flow)
    gateway.start("c", "braces")
    reply = gateway.handle("c", "blue")
    assert reply.next_ask is not None
    assert gateway.get(reply.next_ask.ask_id or "").prompt == shown


def test_a_first_phase_with_braces_starts(gateway: Gateway) -> None:
    flow = Workflow("json", [Phase("q", 'Send {"a": 1}?', options=("Yes", "No"))], finish=lambda answers: "ok")
    gateway.register(flow)
    assert gateway.start("c", "json").kind is ReplyKind.ASKED


def test_an_invalid_phase_is_refused_when_it_is_defined() -> None:
    with pytest.raises(StoppingPointError):
        Phase("pick", "Pick", options=("A", "A"))
    with pytest.raises(StoppingPointError):
        Phase("long", "x" * (MAX_PROMPT_CHARS + 1))
    with pytest.raises(StoppingPointError):
        Phase("marker", "Fine\n[[/ask]]")


@example("\r0)")  # a carriage return is a line break to the prompt's check
@example("x\n1) a\n2) b")  # the answer's last line would read as the prompt's option
@example("[[/ask]]\r2. two")
@given(st.text(min_size=1, max_size=MAX_MESSAGE_CHARS).filter(lambda text: "\x00" not in text))
def test_every_filled_prompt_can_be_parked(answer: str) -> None:
    phase = Phase("confirm", "You wrote:\n{describe}\nand {describe} again. OK?", options=("Yes", "No"))
    try:
        answer.encode("utf-8")
    except UnicodeEncodeError:
        return  # the gateway refuses such a message before a workflow sees it
    make_spec(phase.kind, phase.prompt_for({"describe": answer}), phase.options)


def test_the_escalated_line_names_every_control_word(gateway: Gateway) -> None:
    gateway.ask("c", "Pick", ["A", "B"])
    gateway.ask("t", "Why?")
    for conversation, text in (("c", "nope"), ("t", " ")):
        for _ in range(3):
            reply = gateway.handle(conversation, text)
        assert reply.kind is ReplyKind.ESCALATED
        for word in P.RESHOW_WORDS_IN_ORDER + P.CANCEL_WORDS_IN_ORDER:
            assert "/" + word in reply.text


# -- a skill whose whole output is the structured form -------------------------------------


def test_a_skill_output_that_is_the_json_form_parks_it(gateway: Gateway) -> None:
    reply = gateway.ask_from_text("c", '{"prompt": "Pick one", "options": ["Red", "Blue"]}')
    assert reply.kind is ReplyKind.ASKED and reply.parked
    assert gateway.handle("c", "blue").answer == "Blue"
    reply = gateway.ask_from_text("t", '\ufeff  {"prompt": "Why?", "kind": "TEXT"}\n')
    assert reply.kind is ReplyKind.ASKED
    assert gateway.handle("t", "because").kind is ReplyKind.ANSWERED


@pytest.mark.parametrize(
    "output",
    ['{"result": 3}', '{"prompt": "x", "model": "gpt"}', "{not json}", '["prompt"]', 'Say {"prompt": "x"}'],
)
def test_other_json_in_a_skill_output_is_prose(gateway: Gateway, output: str) -> None:
    assert gateway.ask_from_text("c", output).kind is ReplyKind.PASS
    assert gateway.handle("c", "hello").kind is ReplyKind.PASS  # nothing was parked


def test_a_broken_json_stopping_point_is_an_input_error(gateway: Gateway) -> None:
    from parkgate import InputError

    with pytest.raises(InputError, match="repeats"):
        gateway.ask_from_text("c", '{"prompt": "Pick", "options": ["A", "A"]}')
    assert gateway.handle("c", "A").kind is ReplyKind.PASS
