"""What ``ask_from_text`` parks from a stopping point that names who may answer."""

from __future__ import annotations

import pytest

from parkgate import Gateway, InputError, ReplyKind

DEPLOY = "Deploy build 42?\n\n1. Deploy\n2. Hold"


def marker(head: str, body: str = DEPLOY) -> str:
    return f"Plan done.\n{head}\n{body}\n[[/ask]]\n"


def test_ask_from_text_parks_the_markers_responders_and_quorum(gateway: Gateway) -> None:
    asked = gateway.ask_from_text("chan-ops", marker("[[ask for=U_ALICE,U_BOB,U_CAROL quorum=2]]"))
    assert asked.kind is ReplyKind.ASKED and asked.ask_id is not None
    stored = gateway.get(asked.ask_id)
    assert (stored.responders, stored.quorum) == (("U_ALICE", "U_BOB", "U_CAROL"), 2)
    assert gateway.handle("chan-ops", "1", sender="U_MALLORY").kind is ReplyKind.NOT_YOURS
    assert gateway.handle("chan-ops", "1", sender="U_ALICE").kind is ReplyKind.VOTED
    closed = gateway.handle("chan-ops", "1", sender="U_CAROL")
    assert closed.kind is ReplyKind.SELECTED and gateway.get(asked.ask_id).answered_by == "U_CAROL"


def test_the_callers_responders_decide_over_the_markers(gateway: Gateway) -> None:
    asked = gateway.ask_from_text("chan-ops", marker("[[ask for=U_MALLORY]]"), responders=["U_ALICE"])
    assert asked.ask_id is not None
    assert (gateway.get(asked.ask_id).responders, gateway.get(asked.ask_id).quorum) == (("U_ALICE",), 1)
    assert gateway.handle("chan-ops", "1", sender="U_MALLORY").kind is ReplyKind.NOT_YOURS


def test_a_marker_naming_an_unusable_sender_parks_nothing(gateway: Gateway) -> None:
    too_long = "U" * 201
    with pytest.raises(InputError, match="responders item 1"):
        gateway.ask_from_text("chan-ops", marker(f"[[ask for={too_long}]]"))
    assert gateway.audit() == []
