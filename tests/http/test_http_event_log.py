"""The event log through a live server on SQLite and PostgreSQL: an ask parked with
responders, missed twice, reminded, escalated, voted by two responders and closed has a
timeline of exactly those events, in order, with their senders. The server reads a
:class:`~parkgate.ManualClock` the test moves; its own due reads fire the reminder and
the escalation."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from live_server import messages_path, wait_until

from engine_params import STORE_PARAMS
from parkgate import ManualClock
from parkgate.store.signal import FALLBACK_READ_SECONDS

#: A step of the manual clock past a due time.
TICK = 0.001


# Both engines: the events are written by each engine's own statements (on PostgreSQL in
# the message's one statement), and the Done-when names both stores.
@pytest.mark.parametrize("engine", STORE_PARAMS)
def test_a_voted_escalated_ask_has_exactly_its_timeline(database: Any, start_server: Any, conv: str) -> None:
    clock = ManualClock(datetime.now(UTC))
    server = start_server(database, clock=clock)
    with server.client() as client:
        body = {
            "conversation_id": conv,
            "prompt": "Ship 1.4.3?",
            "options": ["Ship", "Hold"],
            "responders": ["U_ALICE", "U_BOB"],
            "quorum": 2,
            "ttl_seconds": 600,
            "remind_after": 60,
            "escalate_after": 120,
            "escalate_to": ["U_CAROL"],
        }
        parked = client.post("/v1/asks", json=body)
        assert parked.status_code == 201, parked.text
        ask_id = parked.json()["ask_id"]

        def say(text: str, sender: str) -> str:
            reply = client.post(messages_path(conv), json={"text": text, "sender": sender})
            assert reply.status_code == 200, reply.text
            return str(reply.json()["kind"])

        def kinds() -> list[str]:
            return [event["type"] for event in client.get(f"/v1/asks/{ask_id}/events").json()["events"]]

        assert say("ship?", "U_ALICE") == "retry"
        assert say("hmm", "U_BOB") == "retry"
        clock.advance(60 + TICK)
        wait_until(lambda: kinds()[-1] == "reminded", FALLBACK_READ_SECONDS, "the reminder's event")
        clock.advance(60)
        wait_until(lambda: kinds()[-1] == "escalated", FALLBACK_READ_SECONDS, "the escalation's event")
        assert say("1", "U_ALICE") == "voted"
        assert say("1", "U_CAROL") == "selected"

        timeline = client.get(f"/v1/asks/{ask_id}/events").json()["events"]
    assert [(event["seq"], event["type"], event["sender"]) for event in timeline] == [
        (1, "parked", None),
        (2, "touched", "U_ALICE"),
        (3, "touched", "U_BOB"),
        (4, "reminded", None),
        (5, "escalated", None),
        (6, "voted", "U_ALICE"),
        (7, "voted", "U_CAROL"),
        (8, "closed", "U_CAROL"),
    ]
    assert [event["data"].get("kind") for event in timeline[1:3]] == ["retry", "retry"]
    assert timeline[4]["data"]["to"] == ["U_CAROL"]
    assert [event["data"]["votes"] for event in timeline[5:7]] == [1, 2]
    assert (timeline[7]["data"]["status"], timeline[7]["data"]["answer"]) == ("answered", "Ship")
    moments = [datetime.fromisoformat(event["at"]) for event in timeline]
    assert moments == sorted(moments)
