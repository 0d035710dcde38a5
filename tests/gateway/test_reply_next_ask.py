"""A reply names the ask a workflow parks next ``next_ask``, and replies stored earlier under
``followup`` still replay with it."""

from __future__ import annotations

from typing import TYPE_CHECKING

from parkgate import Gateway, ReplyKind
from parkgate.core.model import Reply

if TYPE_CHECKING:
    from conftest import StoreLocation


def test_a_workflow_reply_carries_its_next_phase_as_next_ask(gateway: Gateway) -> None:
    gateway.start("conv-next", "uml")
    chose = gateway.handle("conv-next", "class", message_id="m-1")
    assert chose.next_ask is not None and chose.next_ask.kind is ReplyKind.ASKED
    assert chose.next_ask.ask_id is not None
    assert gateway.get(chose.next_ask.ask_id).phase == "describe"
    data = chose.to_dict()
    assert data["next_ask"] == chose.next_ask.to_dict() and "followup" not in data


def test_a_redelivery_of_a_reply_stored_under_followup_returns_its_next_ask(
    gateway: Gateway, store_location: StoreLocation
) -> None:
    gateway.start("conv-old", "uml")
    first = gateway.handle("conv-old", "class", message_id="m-1")
    # The row as a version before the rename wrote it: the next ask under "followup".
    store_location.raw_query("UPDATE inbound_messages SET reply = replace(reply, '\"next_ask\"', '\"followup\"')")
    assert "followup" in store_location.raw_query("SELECT reply FROM inbound_messages")[0][0]

    again = gateway.handle("conv-old", "class", message_id="m-1")
    assert again == first and again.next_ask is not None and again.next_ask.kind is ReplyKind.ASKED


def test_a_client_reads_next_ask_from_the_reply_json() -> None:
    asked = Reply(ReplyKind.ASKED, "Describe it", parked=True, ask_id="a-2", run_id="r-1")
    chose = Reply(ReplyKind.SELECTED, "Class", parked=True, ask_id="a-1", run_id="r-1", next_ask=asked)
    assert Reply.from_dict(chose.to_dict()) == chose
    assert Reply.from_json(chose.to_json()) == chose
