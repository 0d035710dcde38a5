"""The event log through ``parkgate serve`` with named tokens: a tenant reads its own
asks' timelines and no other's (another owner's ask is a 404, as an unknown one is); an
operator reads every ask's."""

from __future__ import annotations

from typing import Any

from attack import NamedTokens
from live_server import messages_path

DEPLOY = {"conversation_id": "ours", "prompt": "Deploy build 42?", "options": ["Deploy", "Hold"]}
THEIRS = {"conversation_id": "theirs", "prompt": "Rotate the key?", "options": ["Rotate", "Keep"]}


def test_a_tenant_reads_its_own_timeline_and_no_other(launch: Any, database: Any, tokens_file: NamedTokens) -> None:
    server = launch(database, extra_env=tokens_file.env())
    with (
        server.client(token=tokens_file.tokens["agent"]) as agent,
        server.client(token=tokens_file.tokens["other-agent"]) as other,
        server.client(token=tokens_file.tokens["chat-surface"]) as chat,
        server.client(token=tokens_file.tokens["operator"]) as operator,
    ):
        ours = agent.post("/v1/asks", json=DEPLOY).json()["ask_id"]
        theirs = other.post("/v1/asks", json=THEIRS).json()["ask_id"]
        assert chat.post(messages_path("ours"), json={"text": "what?", "sender": "U1"}).json()["kind"] == "retry"
        assert chat.post(messages_path("ours"), json={"text": "Deploy", "sender": "U1"}).json()["kind"] == "selected"

        timeline = agent.get(f"/v1/asks/{ours}/events")
        assert timeline.status_code == 200, timeline.text
        body = timeline.json()
        assert body["ask_id"] == ours
        assert [(e["seq"], e["type"], e["sender"]) for e in body["events"]] == [
            (1, "parked", "agent"),
            (2, "touched", "U1"),
            (3, "touched", "U1"),
            (4, "closed", "U1"),
        ]
        assert set(body["events"][0]) == {"seq", "at", "type", "ask_id", "sender", "data"}
        assert body["events"][1]["data"] == {"kind": "retry"}  # a miss's text is never kept

        refused = agent.get(f"/v1/asks/{theirs}/events")
        unknown = agent.get("/v1/asks/no-such-ask/events")
        assert (refused.status_code, refused.json()["error"]) == (404, "unknown_ask")
        assert refused.json()["error"] == unknown.json()["error"]
        cancel = operator.post(f"/v1/asks/{theirs}/cancel", json={"outcome": "abandoned", "reason": "key moved"})
        assert cancel.status_code == 200, cancel.text
        their_events = operator.get(f"/v1/asks/{theirs}/events").json()["events"]
        assert [e["type"] for e in their_events] == ["parked", "closed"]
        assert (their_events[1]["sender"], their_events[1]["data"]["reason"]) == ("operator", "key moved")
        assert operator.get(f"/v1/asks/{ours}/events").json() == body
