"""The bounded memory of open asks the PostgreSQL store decides from (``RecentOpenAsks`` in ``store/sql.py``)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from parkgate.core.kinds import AskKind, AskStatus
from parkgate.core.model import Ask
from parkgate.store.sql import STALE, UNSEEN, RecentOpenAsks

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def _ask(conversation: str, misses: int = 0) -> Ask:
    return Ask(
        f"ask-{conversation}",
        conversation,
        "run",
        AskKind.CHOICE,
        "Q?",
        ("A", "B"),
        AskStatus.OPEN,
        T0,
        T0,
        60.0,
        misses,
    )


def test_a_committed_state_is_remembered_and_none_means_nothing_open() -> None:
    recent = RecentOpenAsks(8)
    assert recent.get("c-1") is UNSEEN
    recent.committed({"c-1": _ask("c-1"), "c-2": None})
    assert recent.get("c-1") == _ask("c-1")
    assert recent.get("c-2") is None


def test_a_failed_transaction_marks_its_conversations_stale_and_they_stay_stale() -> None:
    recent = RecentOpenAsks(8)
    recent.committed({"c-1": _ask("c-1")})
    recent.failed(["c-1", "c-new"])
    assert recent.get("c-1") is STALE and recent.get("c-new") is STALE
    # A later commit (by a real read) does not bring guessing back for that conversation.
    recent.committed({"c-1": _ask("c-1", misses=1)})
    assert recent.get("c-1") is STALE


def test_the_least_recently_used_conversation_is_forgotten_first() -> None:
    recent = RecentOpenAsks(2)
    recent.committed({"c-1": None, "c-2": None})
    recent.get("c-1")  # used: c-2 is now the oldest
    recent.committed({"c-3": None})
    assert recent.get("c-2") is UNSEEN
    assert recent.get("c-1") is None and recent.get("c-3") is None


def test_size_zero_remembers_nothing_and_a_negative_size_is_refused() -> None:
    recent = RecentOpenAsks(0)
    recent.committed({"c-1": _ask("c-1")})
    recent.failed(["c-1"])
    assert recent.get("c-1") is UNSEEN and len(recent) == 0
    with pytest.raises(ValueError, match="0"):
        RecentOpenAsks(-1)


@given(
    size=st.integers(1, 6),
    operations=st.lists(
        st.tuples(st.sampled_from(["commit-open", "commit-none", "fail", "get"]), st.integers(0, 9)), max_size=60
    ),
)
def test_never_more_than_its_size_and_never_a_state_it_was_not_told(
    size: int, operations: list[tuple[str, int]]
) -> None:
    recent = RecentOpenAsks(size)
    committed: dict[str, Ask | None] = {}
    failed: set[str] = set()
    for operation, number in operations:
        conversation = f"c-{number}"
        if operation == "commit-open":
            recent.committed({conversation: _ask(conversation)})
            committed[conversation] = _ask(conversation)
        elif operation == "commit-none":
            recent.committed({conversation: None})
            committed[conversation] = None
        elif operation == "fail":
            recent.failed([conversation])
            failed.add(conversation)
        found = recent.get(conversation)
        if operation != "get":  # the entry just written is the newest: never the one pushed out
            assert found is not UNSEEN
        if found is STALE:
            assert conversation in failed
        elif found is not UNSEEN:
            assert conversation in committed and found == committed[conversation]
        assert len(recent) <= size
