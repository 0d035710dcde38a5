"""The seed scenarios through a real server process, on SQLite and PostgreSQL.

Four non-answers then ``/cancel`` against the demo workflow; the demo run to its
PlantUML output; a text ask where ``cancel`` is data and ``/cancel`` leaves;
redelivery of one ``message_id``.
"""

from __future__ import annotations

from typing import Any

import httpx
from live_server import Server, messages_path

from parkgate.core.kinds import ReplyKind
from parkgate.core.phrases import EXITS_HINT, PHRASES, TEXT_CONTROL_WORD_TAKEN

REPLY_FIELDS = {"kind", "text", "parked", "ask_id", "expired_ask_id", "answer", "option_index"}


def say(http: httpx.Client, conversation: str, text: str, message_id: str | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {"text": text}
    if message_id is not None:
        body["message_id"] = message_id
    response = http.post(messages_path(conversation), json=body)
    assert response.status_code == 200, response.text
    reply: dict[str, Any] = response.json()
    assert reply.keys() >= REPLY_FIELDS, reply
    assert reply["kind"] in {kind.value for kind in ReplyKind}, reply
    return reply


def start_demo(http: httpx.Client, conversation: str) -> dict[str, Any]:
    response = http.post("/v1/workflows/uml/start", json={"conversation_id": conversation})
    assert response.status_code == 201, response.text
    reply: dict[str, Any] = response.json()
    assert reply["kind"] == "asked" and reply["parked"] is True and reply["ask_id"]
    return reply


def test_four_non_answers_then_cancel_leaves(served: Server, conv: str) -> None:
    with served.client() as http:
        asked = start_demo(http, conv)
        assert "Which UML diagram?" in asked["text"]
        kinds = []
        for text in ("hello", "what?", "the second one", "banana"):
            reply = say(http, conv, text)
            kinds.append(reply["kind"])
            assert reply["parked"] is True and reply["ask_id"] == asked["ask_id"]
            if reply["kind"] == "escalated":
                assert EXITS_HINT in reply["text"]
        assert kinds == ["retry", "retry", "escalated", "escalated"]
        left = say(http, conv, "/cancel")
        assert left["kind"] == "cancelled" and left["parked"] is False
        assert left["text"] == PHRASES[ReplyKind.CANCELLED]
        ask = http.get(f"/v1/asks/{asked['ask_id']}").json()
        assert ask["status"] == "cancelled" and ask["mismatches"] == 4 and ask["answer"] is None
        listed = http.get("/v1/asks", params={"status": "open"}).json()["asks"]
        assert conv not in {a["conversation_id"] for a in listed}
        after = say(http, conv, "2")
        assert after["kind"] == "pass" and after["ask_id"] is None and after["parked"] is False


def test_menu_reshows_without_counting_and_the_demo_runs_to_its_output(served_sqlite: Server, conv: str) -> None:
    with served_sqlite.client() as http:
        asked = start_demo(http, conv)
        sequence = [say(http, conv, text)["kind"] for text in ("nope", "/menu", "nope", "menu", "nope")]
        assert sequence == ["retry", "reshown", "retry", "reshown", "escalated"]
        assert http.get(f"/v1/asks/{asked['ask_id']}").json()["mismatches"] == 3
        chosen = say(http, conv, "2")
        assert (chosen["kind"], chosen["answer"], chosen["option_index"]) == ("selected", "Class", 2)
        assert chosen["parked"] is True and chosen["next_ask"]["kind"] == "asked"
        describe_id = chosen["next_ask"]["ask_id"]
        assert describe_id != asked["ask_id"]
        listed = http.get("/v1/asks?status=open").json()["asks"]
        assert [(a["ask_id"], a["phase"]) for a in listed if a["conversation_id"] == conv] == [
            (describe_id, "describe")
        ]
        done = say(http, conv, "An order has many lines")
        assert done["kind"] == "answered" and done["parked"] is False
        assert "@startuml" in done["text"] and "An order has many lines" in done["text"]
        first = http.get(f"/v1/asks/{asked['ask_id']}").json()
        assert (first["status"], first["answer"], first["option_index"], first["mismatches"]) == (
            "answered",
            "Class",
            2,
            0,
        )


def test_in_a_text_ask_cancel_is_data_and_slash_cancel_leaves(served: Server, conv: str) -> None:
    with served.client() as http:
        parked = http.post("/v1/asks", json={"conversation_id": conv, "kind": "text", "prompt": "What to undo?"})
        assert parked.status_code == 201, parked.text
        first = parked.json()
        assert first["kind"] == "asked" and first["parked"] is True and "/cancel" in first["text"]
        taken = say(http, conv, "cancel")
        assert (taken["kind"], taken["answer"], taken["parked"]) == ("answered", "cancel", False)
        assert taken["text"] == TEXT_CONTROL_WORD_TAKEN.format(answer="cancel")
        stored = http.get(f"/v1/asks/{first['ask_id']}").json()
        assert (stored["status"], stored["answer"]) == ("answered", "cancel")

        second = http.post("/v1/asks", json={"conversation_id": conv, "prompt": "And now?"}).json()
        assert second["kind"] == "asked"
        assert say(http, conv, "   ")["kind"] == "retry"  # empty is a mismatch, not an answer
        left = say(http, conv, "/cancel")
        assert (left["kind"], left["parked"], left["answer"]) == ("cancelled", False, None)
        stored = http.get(f"/v1/asks/{second['ask_id']}").json()
        assert (stored["status"], stored["answer"], stored["mismatches"]) == ("cancelled", None, 1)


def test_a_redelivered_message_id_returns_the_first_reply_and_counts_once(served: Server, conv: str) -> None:
    with served.client() as http:
        asked = http.post(
            "/v1/asks", json={"conversation_id": conv, "prompt": "Deploy?", "options": ["Yes", "No"]}
        ).json()
        first = say(http, conv, "maybe", message_id="m-1")
        again = say(http, conv, "maybe", message_id="m-1")
        assert first == again and first["kind"] == "retry"
        assert http.get(f"/v1/asks/{asked['ask_id']}").json()["mismatches"] == 1
        chosen = say(http, conv, "yes", message_id="m-2")
        assert (chosen["kind"], chosen["answer"], chosen["option_index"]) == ("selected", "Yes", 1)
        assert say(http, conv, "yes", message_id="m-2") == chosen


def test_replace_closes_the_open_ask_and_parks_the_new_one(served_sqlite: Server, conv: str) -> None:
    with served_sqlite.client() as http:
        old = http.post("/v1/asks", json={"conversation_id": conv, "prompt": "A?", "options": ["x", "y"]}).json()
        refused = http.post("/v1/asks", json={"conversation_id": conv, "prompt": "B?", "options": ["p", "q"]})
        assert refused.status_code == 409
        assert refused.json()["error"] == "ask_already_open" and old["ask_id"] in refused.json()["detail"]
        new = http.post(
            "/v1/asks", json={"conversation_id": conv, "prompt": "B?", "options": ["p", "q"], "replace": True}
        )
        assert new.status_code == 201, new.text
        assert http.get(f"/v1/asks/{old['ask_id']}").json()["status"] == "cancelled"
        assert say(http, conv, "q")["answer"] == "q"


def test_skill_output_with_a_marker_parks_it_and_without_one_passes(served_sqlite: Server, conv: str) -> None:
    with served_sqlite.client() as http:
        output = "I can draw it.\r\n\r\n[[ask]]\r\nWhich one?\r\n\r\n1) Sequence  \r\n2) Class\r\n[[/ask]]\r\n"
        parked = http.post("/v1/asks", json={"conversation_id": conv, "skill_output": output})
        assert parked.status_code == 201, parked.text
        ask = http.get(f"/v1/asks/{parked.json()['ask_id']}").json()
        assert (ask["kind"], ask["prompt"], ask["options"]) == ("choice", "Which one?", ["Sequence", "Class"])
        plain = http.post("/v1/asks", json={"conversation_id": conv + "-other", "skill_output": "No question here."})
        assert plain.status_code == 200 and plain.json()["kind"] == "pass" and plain.json()["parked"] is False
