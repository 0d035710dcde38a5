"""A live ``parkgate serve`` with Slack, attacked as issue 38 found it: a slow Web API must
hold none of Bolt's listener threads (a click is acknowledged at once, its private line
sent later), and a timestamp that is not a number is a 401 with no traceback logged.

The store has no part in either: both run on SQLite.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
from live_server import Server
from slack_stand_in import BOT_TOKEN, SIGNING_SECRET, SlackWebApi, send, signed_headers

from late_words import at
from polling import until

TOKEN = "secret-token"
Factory = Any


@pytest.fixture
def slack_api() -> Iterator[SlackWebApi]:
    api = SlackWebApi().start()
    yield api
    api.stop()


@pytest.fixture
def server(store_url_factory: Factory, tmp_path: Path, slack_api: SlackWebApi) -> Iterator[Server]:
    location = store_url_factory("sqlite")
    env = {
        "PARKGATE_SLACK_BOT_TOKEN": BOT_TOKEN,
        "PARKGATE_SLACK_SIGNING_SECRET": SIGNING_SECRET,
        "PARKGATE_SLACK_API_URL": slack_api.url,
    }
    running = Server(location.url, tmp_path / "server.log", token=TOKEN, schema=location.schema, extra_env=env)
    yield running.start()
    running.stop()


def park(client: httpx.Client, conversation: str) -> str:
    body = {
        "conversation_id": conversation,
        "prompt": "Deploy?",
        "options": ["Deploy", "Hold"],
        "responders": ["UALICE"],
        "slack": {"channel": "C1"},
    }
    answer = client.post("/v1/asks", json=body)
    assert answer.status_code == 201, answer.text
    ask_id = str(answer.json()["ask_id"])
    until(lambda: client.get(f"/v1/asks/{ask_id}").json().get("slack"), 10, "the post's location")
    return ask_id


def test_clicks_on_a_closed_ask_with_a_slow_slack_leave_the_next_click_acknowledged_at_once(
    server: Server, slack_api: SlackWebApi
) -> None:
    with server.client() as client, httpx.Client(base_url=server.url, timeout=30) as slack:
        closed, still_open = park(client, "deploy-1"), park(client, "deploy-2")
        assert send(slack, slack_api.click(closed, "parkgate:option:1", "UALICE", "t-0"), form=True).status_code == 200
        until(lambda: client.get(f"/v1/asks/{closed}").json()["status"] == "answered", 10, "the first answer")

        # Slack's Web API now answers chat.postEphemeral only when the test releases it.
        slack_api.held.add("chat.postEphemeral")
        for n in range(8):  # more clicks than Bolt has listener threads (five)
            clicked = send(slack, slack_api.click(closed, "parkgate:option:2", f"UBOB{n}", f"t-{n + 1}"), form=True)
            assert clicked.status_code == 200
        until(lambda: slack_api.holding >= 1, 10, "a private line held by the slow Web API")

        answered = send(slack, slack_api.click(still_open, "parkgate:option:2", "UALICE", "t-9"), form=True)
        assert answered.status_code == 200  # acknowledged while Slack still holds the private line
        assert slack_api.holding >= 1 and not slack_api.release.is_set()
        ask = client.get(f"/v1/asks/{still_open}?wait=10").json()
        assert (ask["status"], ask["answer"]) == ("answered", "Hold")

        slack_api.release.set()
        told = until(lambda: len(slack_api.of("chat.postEphemeral")) >= 8 or None, 30, "every private line")
        assert told
        lines = {c.args["user"]: c.args["text"] for c in slack_api.of("chat.postEphemeral")}
        answered_at = datetime.fromisoformat(client.get(f"/v1/asks/{closed}").json()["answered_at"])
        assert lines["UBOB0"] == f"This question is already closed (answered by <@UALICE> {at(answered_at)})."
        timeline = client.get(f"/v1/asks/{closed}/events").json()["events"]
        assert sorted(event["sender"] for event in timeline if event["type"] == "late") == [
            f"UBOB{n}" for n in range(8)
        ]
        assert client.get(f"/v1/asks/{closed}").json()["answer"] == "Deploy"


def test_a_timestamp_that_is_not_whole_seconds_is_a_401_and_logs_no_traceback(
    server: Server, slack_api: SlackWebApi
) -> None:
    body = b'{"type": "event_callback", "event_id": "Ev1", "event": {"type": "app_mention"}}'
    signed = signed_headers(body)
    with httpx.Client(base_url=server.url, timeout=30) as slack:
        for timestamp in ("abc", "", "1712345678.5", "1e9", "-1", "9" * 5000, "0x10"):
            refused = send(slack, body, **{"X-Slack-Request-Timestamp": timestamp})
            assert refused.status_code == 401, (timestamp[:20], refused.text)
            # Beside a valid timestamp and signature, in either order: refused as well.
            valid = signed["X-Slack-Request-Timestamp"]
            for pair in ((timestamp, valid), (valid, timestamp)):
                headers = [("Content-Type", "application/json"), ("X-Slack-Signature", signed["X-Slack-Signature"])]
                headers += [("X-Slack-Request-Timestamp", value) for value in pair]
                assert slack.post("/slack/events", content=body, headers=headers).status_code == 401
    log = server.log_text()
    assert "Traceback" not in log, log[-3000:]
    assert slack_api.calls == []
