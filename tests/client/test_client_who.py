"""Who may answer through the client, sync and async, against a real ``parkgate serve`` on
both stores: ``sender`` on ``handle``, ``responders`` and ``quorum`` on ``ask``,
``ask_from_text`` and ``start``, and the who-fields read back typed in an ``AskView``.
"""

from __future__ import annotations

from typing import Any

import pytest
from live_server import Server

from parkgate import AskStatus, InputError, ReplyKind, Vote

MARKED = "[[ask]]\nDeploy?\n1. Deploy\n2. Hold\n[[/ask]]"


def test_a_quorum_ask_is_voted_on_and_read_back_typed(served: Server, connect: Any, conv: str) -> None:
    client = connect(served)
    asked = client.ask(conv, "Deploy?", ["Deploy", "Hold"], responders=["U_A", "U_B", "U_C"], quorum=2)
    assert client.handle(conv, "1", sender="U_Z").kind is ReplyKind.NOT_YOURS
    assert client.handle(conv, "1", sender="U_A").kind is ReplyKind.VOTED
    selected = client.handle(conv, "Deploy", sender="U_B")
    assert (selected.kind, selected.answer) == (ReplyKind.SELECTED, "Deploy")
    view = client.get(asked.ask_id)
    assert (view.status, view.responders, view.quorum, view.answered_by, view.closed_by) == (
        AskStatus.ANSWERED,
        ("U_A", "U_B", "U_C"),
        2,
        "U_B",
        None,
    )
    assert all(isinstance(vote, Vote) for vote in view.votes)
    assert [(vote.sender, vote.option_index, vote.answer) for vote in view.votes] == [
        ("U_A", 1, "Deploy"),
        ("U_B", 1, "Deploy"),
    ]


def test_a_marked_ask_and_a_workflow_take_responders(served: Server, connect: Any, conv: str) -> None:
    client = connect(served)
    marked = client.ask_from_text(conv, MARKED, responders=["U_A"])
    assert client.handle(conv, "2", sender="U_B").kind is ReplyKind.NOT_YOURS
    assert client.handle(conv, "/cancel", sender="U_A").kind is ReplyKind.CANCELLED
    assert client.get(marked.ask_id).closed_by == "U_A"
    started = client.start(conv, "uml", responders=["U_A"])
    assert client.get(started.ask_id).responders == ("U_A",)
    cancelled = client.cancel(started.ask_id)
    assert (cancelled.status, cancelled.closed_by) == (AskStatus.CANCELLED, "operator")


def test_bad_who_arguments_are_input_errors(served: Server, connect: Any, conv: str) -> None:
    client = connect(served)
    with pytest.raises(InputError, match="sender contains a control character"):
        client.handle(conv, "1", sender="U\x07")  # refused before it is sent
    with pytest.raises(InputError, match="quorum of 3 is more than the 2 responders"):
        client.ask(conv, "Deploy?", ["Deploy", "Hold"], responders=["U_A", "U_B"], quorum=3)
    with pytest.raises(InputError, match="quorum needs responders"):
        client.start(conv, "uml", quorum=1)
    assert client.handle(conv, "1").kind is ReplyKind.PASS  # nothing was parked
