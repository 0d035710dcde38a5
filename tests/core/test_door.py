"""The door check's one verdict (``parkgate.core.door``): what passes and what fails, with why."""

from __future__ import annotations

from typing import Any

import pytest

from parkgate.core.door import DOOR_EXIT, DOOR_NON_ANSWERS, door_verdict, reply_shape

SENT = [*DOOR_NON_ANSWERS, DOOR_EXIT]


def _lines(texts: list[Any], parked: list[Any]) -> list[dict[str, Any]]:
    return [{"input": sent, "text": text, "parked": flag} for sent, text, flag in zip(SENT, texts, parked, strict=True)]


GOOD = ["No match.", "No match.", "Still no match (3 tries): type cancel.", "Still no match (4 tries).", "Dropped."]


def test_a_reply_that_changes_shape_and_an_exit_that_leaves_pass() -> None:
    assert door_verdict(_lines(GOOD, [True, True, True, True, False])) is None


@pytest.mark.parametrize(
    ("texts", "parked", "why"),
    [
        (["No match."] * 5, [True] * 4 + [False], "never changed shape"),
        ([f"No match (try {n})." for n in range(1, 6)], [True] * 4 + [False], "never changed shape"),
        (["No  match.", "no match.", "NO MATCH.", "x", "bye"], [True] * 4 + [False], "never changed shape"),
        (["No match.", "No match.", "Other.", "No match.", "bye"], [True] * 4 + [False], "never changed shape"),
        ([*GOOD[:2], None, *GOOD[3:]], [True] * 4 + [False], "'help' was passed on (null)"),
        ([*GOOD[:4], "  "], [True] * 4 + [False], "'cancel' was passed on (empty)"),
        (GOOD, [True] * 5, "'cancel' did not leave"),
        (GOOD, [True] * 4 + [None], "carries no parked flag"),
    ],
)
def test_a_broken_door_fails_with_its_reason(texts: list[Any], parked: list[Any], why: str) -> None:
    verdict = door_verdict(_lines(texts, parked))
    assert verdict is not None and why in verdict


def test_a_reply_kind_is_its_shape_and_pass_is_a_leak() -> None:
    assert reply_shape({"kind": "retry", "text": "anything 1"}) == "retry"
    lines = _lines(GOOD, [True, True, True, True, False])
    lines[1]["kind"] = "pass"
    verdict = door_verdict(lines)
    assert verdict is not None and "passed on (pass)" in verdict


def test_too_few_replies_is_a_failure_not_a_pass() -> None:
    verdict = door_verdict(_lines(GOOD, [True, True, True, True, False])[:3])
    assert verdict is not None and "got 3 replies" in verdict
