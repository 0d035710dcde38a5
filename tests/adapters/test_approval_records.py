"""How an agent's tool approval is shown and decided, whatever the SDK (pure: no gateway)."""

from __future__ import annotations

import json

import pytest

from parkgate.adapters.approvals.records import (
    ARGUMENTS_SHOWN_CHARS,
    Decision,
    Kept,
    ToolCall,
    duration_text,
    question,
    undecided,
)


def test_a_question_shows_the_tool_and_its_arguments_escaped_and_cut() -> None:
    arguments = json.dumps({"env": "pro\u202ed\x1b[31m", "note": "x" * 4000})
    spec = question(ToolCall("c1", "deploy\u200b", arguments), 2, 3)
    assert spec.prompt.startswith("Run deploy\\u200b (2 of 3)?")
    assert "\u202e" not in spec.prompt and "\x1b" not in spec.prompt and "pro\\u202ed\\u001b[31m" in spec.prompt
    shown = spec.prompt.split("Arguments: ", 1)[1]
    assert shown.endswith("…") and len(shown) == ARGUMENTS_SHOWN_CHARS + 1
    assert spec.options == ("Approve", "Reject")


def test_a_decision_holds_only_for_the_arguments_it_was_taken_on() -> None:
    kept = Kept("{}", ("a", "b")).deciding("a", Decision(True, '{"env":"prod"}'))
    calls = [ToolCall("a", "deploy", '{"env":"prod"}'), ToolCall("b", "deploy", '{"env":"dev"}')]
    assert [call.call_id for call in undecided(calls, kept.decisions)] == ["b"]
    changed = [ToolCall("a", "deploy", '{"env":"everything"}')]
    assert undecided(changed, kept.decisions) == changed
    assert Kept.from_text(kept.to_text()) == kept


@pytest.mark.parametrize(
    ("seconds", "shown"), [(6 * 3600, "6 h"), (5400, "1.5 h"), (1800, "30 min"), (90, "1.5 min"), (45, "45 s")]
)
def test_an_expiry_names_the_ttl_as_a_person_writes_it(seconds: float, shown: str) -> None:
    assert duration_text(seconds) == shown
