"""Slack through a live server on loopback (in a thread, configured from the environment as
``parkgate serve`` configures its workers), against a Web API stand-in that records every
call: an ask posted with its buttons, signed clicks and thread replies answered through the
gateway, every close shown by an update.

Slack's side is faked only where it is remote: the requests are signed with Slack's HMAC
(what Bolt's and ``slack_sdk``'s verifiers check), and the server's outbound calls go
through ``slack_sdk`` to the stand-in (``PARKGATE_SLACK_API_URL``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
from live_server import Server
from slack_stand_in import (
    BOT_TOKEN,
    MISSING_CHANNEL,
    SIGNING_SECRET,
    SlackWebApi,
    event_body,
    send,
    signed_headers,
)

from late_words import at
from parkgate import ChannelTarget, Gateway, ManualClock
from polling import until

TOKEN = "secret-token"
Factory = Any


@pytest.fixture
def slack_api() -> Iterator[SlackWebApi]:
    api = SlackWebApi().start()
    yield api
    api.stop()


def slack_server(location: Any, tmp_path: Path, api: SlackWebApi, clock: ManualClock | None = None) -> Server:
    env = {
        "PARKGATE_SLACK_BOT_TOKEN": BOT_TOKEN,
        "PARKGATE_SLACK_SIGNING_SECRET": SIGNING_SECRET,
        "PARKGATE_SLACK_API_URL": api.url,
    }
    log = tmp_path / "server.log"
    return Server(location.url, log, token=TOKEN, schema=location.schema, extra_env=env, in_thread=True, clock=clock)


# One engine: the channel behaviour here is above the store (issue 39; the store suite runs both).
@pytest.fixture(params=["sqlite"])
def server(
    request: pytest.FixtureRequest, store_url_factory: Factory, tmp_path: Path, slack_api: SlackWebApi
) -> Iterator[Server]:
    running = slack_server(store_url_factory(request.param), tmp_path, slack_api, ManualClock()).start()
    yield running
    running.stop()


def park(client: httpx.Client, conversation: str, **fields: Any) -> str:
    body = {"conversation_id": conversation, "prompt": "Deploy to production?", "options": ["Deploy", "Hold"], **fields}
    answer = client.post("/v1/asks", json=body)
    assert answer.status_code == 201, answer.text
    return str(answer.json()["ask_id"])


def calls_of(api: SlackWebApi, method: str, count: int = 1, thread: str | None = None) -> list[Any]:
    """Once there are ``count`` calls of ``method`` (in ``thread``, if given), all of them."""

    def enough() -> list[Any] | None:
        calls = [c for c in api.of(method) if thread is None or c.args.get("thread_ts") == thread]
        return calls if len(calls) >= count else None

    return until(enough, 10, f"{count} {method} call(s)")


def posted(api: SlackWebApi, count: int = 1) -> list[Any]:
    return calls_of(api, "chat.postMessage", count)


def updated(api: SlackWebApi, count: int = 1) -> list[Any]:
    return calls_of(api, "chat.update", count)


def buttons(call: Any) -> list[tuple[str, str]]:
    (actions,) = [block for block in call.args["blocks"] if block["type"] == "actions"]
    return [(element["text"]["text"], element["action_id"]) for element in actions["elements"]]


def test_an_ask_is_posted_with_its_buttons_and_a_responders_click_answers_it(
    server: Server, slack_api: SlackWebApi
) -> None:
    with server.client() as client, httpx.Client(base_url=server.url, timeout=30) as slack:
        ask_id = park(client, "deploy-1", slack={"channel": "C1"}, responders=["UALICE"])
        (post,) = posted(slack_api)
        assert post.args["channel"] == "C1" and post.token == BOT_TOKEN
        assert buttons(post) == [
            ("Deploy", "parkgate:option:1"),
            ("Hold", "parkgate:option:2"),
            ("Show options", "parkgate:menu"),
            ("Cancel", "parkgate:cancel"),
        ]
        ts = until(lambda: client.get(f"/v1/asks/{ask_id}").json().get("slack"), 10, "the post's location")
        assert ts == {"channel": "C1", "ts": post_ts(slack_api)}

        # Someone who is not a responder: nothing changes, and only they are told.
        assert (
            send(slack, slack_api.click(ask_id, "parkgate:option:1", "UMALLORY", "t-1"), form=True).status_code == 200
        )
        (private,) = until(lambda: slack_api.of("chat.postEphemeral"), 10, "the not-yours line")
        assert private.args["user"] == "UMALLORY" and "UALICE" in private.args["text"]
        assert client.get(f"/v1/asks/{ask_id}").json()["status"] == "open"

        # A bad signature: 401, nothing read or written.
        forged = slack_api.click(ask_id, "parkgate:option:1", "UALICE", "t-2")
        refused = send(slack, forged, form=True, **signed_headers(forged, secret="not-the-secret"))
        assert refused.status_code == 401
        stale = send(slack, forged, form=True, **signed_headers(forged, at=int(time.time()) - 600))
        assert stale.status_code == 401
        assert client.get(f"/v1/asks/{ask_id}").json()["status"] == "open"

        # The responder's click answers it, and the message names the option and the person.
        clicked = slack_api.click(ask_id, "parkgate:option:1", "UALICE", "t-3")
        assert send(slack, clicked, form=True).status_code == 200
        assert send(slack, clicked, form=True, **{"X-Slack-Retry-Num": "1"}).status_code == 200  # Slack's retry
        (update,) = updated(slack_api)
        assert update.args["text"] == "Answered: Deploy, by <@UALICE>"
        assert update.args["ts"] == post.args.get("ts", update.args["ts"]) and update.args["channel"] == "C1"
        assert not [block for block in update.args["blocks"] if block["type"] == "actions"]  # buttons gone
        ask = client.get(f"/v1/asks/{ask_id}").json()
        assert (ask["status"], ask["answer"], ask["answered_by"]) == ("answered", "Deploy", "UALICE")

        # A click on the closed ask: told so, privately; nothing changes.
        assert send(slack, slack_api.click(ask_id, "parkgate:option:2", "UBOB", "t-4"), form=True).status_code == 200
        closed_line = until(
            lambda: [c for c in slack_api.of("chat.postEphemeral") if c.args["user"] == "UBOB"], 10, "the closed line"
        )
        answered_at = datetime.fromisoformat(ask["answered_at"])  # the server's clock, as it answered
        assert (
            closed_line[0].args["text"] == f"This question is already closed (answered by <@UALICE> {at(answered_at)})."
        )
        timeline = client.get(f"/v1/asks/{ask_id}/events").json()["events"]
        (late,) = [event for event in timeline if event["type"] == "late"]
        assert (late["type"], late["sender"], late["data"]["surface"], late["data"]["text"]) == (
            "late",
            "UBOB",
            "slack",
            "Hold",
        )
        assert client.get(f"/v1/asks/{ask_id}").json()["answer"] == "Deploy"
        assert len(slack_api.of("chat.update")) == 1


def post_ts(api: SlackWebApi) -> str:
    """The ts the stand-in gave the first post (its first answer that made a message)."""
    for index, call in enumerate(api.calls, start=1):
        if call.method == "chat.postMessage":
            return f"1712345678.{index:06d}"
    raise AssertionError("nothing was posted")


def test_an_ask_nobody_touches_is_edited_to_expired_by_the_due_read(server: Server, slack_api: SlackWebApi) -> None:
    with server.client() as client:
        ask_id = park(client, "deploy-2", slack={"channel": "C1"}, ttl_seconds=1)
        posted(slack_api)
        assert slack_api.of("chat.update") == [] and client.get(f"/v1/asks/{ask_id}").json()["status"] == "open"
        server.clock.advance(2)  # past the TTL: the due read this wakes expires the ask and updates the post
        (update,) = updated(slack_api)
        assert update.args["text"] == "Expired after 1 s, nothing ran."
        assert client.get(f"/v1/asks/{ask_id}").json()["status"] == "expired"


def test_a_reply_in_the_thread_goes_through_the_door_once_per_event(server: Server, slack_api: SlackWebApi) -> None:
    with server.client() as client, httpx.Client(base_url=server.url, timeout=30) as slack:
        ask_id = park(client, "deploy-3", slack={"channel": "C1"})
        posted(slack_api)
        thread = until(lambda: client.get(f"/v1/asks/{ask_id}").json().get("slack"), 10, "the post")["ts"]
        message = {
            "type": "message",
            "channel": "C1",
            "user": "UALICE",
            "text": "maybe",
            "ts": "9.1",
            "thread_ts": thread,
        }
        body = event_body(message, "Ev1")
        assert send(slack, body).status_code == 200
        assert (
            send(slack, body, **{"X-Slack-Retry-Num": "1", "X-Slack-Retry-Reason": "http_timeout"}).status_code == 200
        )
        replies = until(
            lambda: [c for c in slack_api.of("chat.postMessage") if c.args.get("thread_ts") == thread], 10, "a reply"
        )
        assert replies[0].args["text"].startswith("That did not match any option.")
        assert client.get(f"/v1/asks/{ask_id}").json()["mismatches"] == 1
        for n in (2, 3):
            send(slack, event_body({**message, "ts": f"9.{n}"}, f"Ev{n}"))
        escalated = until(
            lambda: (
                (found := [c for c in slack_api.of("chat.postMessage") if c.args.get("thread_ts") == thread])[2:]
                and found[2]
            ),
            10,
            "the escalated line",
        )
        assert "press Show options to see the question again, or Cancel to drop it" in escalated.args["text"]
        assert "/cancel" not in escalated.args["text"]  # Slack swallows slash commands: never offered there
        bye = event_body({**message, "text": "cancel", "ts": "9.9"}, "Ev9")
        assert send(slack, bye).status_code == 200
        (update,) = updated(slack_api)
        assert update.args["text"] == "Dropped by <@UALICE>, nothing ran."


def test_malformed_payloads_are_400_and_a_thread_with_nothing_parked_is_acknowledged(
    server: Server, slack_api: SlackWebApi
) -> None:
    with httpx.Client(base_url=server.url, timeout=30) as slack:
        for body, form in ((b"{not json", False), (b"payload=%7Bnope", True), (b'{"no": "type"}', False)):
            assert send(slack, body, form=form).status_code == 400
        elsewhere = {
            "type": "message",
            "channel": "C9",
            "user": "UALICE",
            "text": "hi",
            "ts": "1.1",
            "thread_ts": "1.0",
        }
        assert send(slack, event_body(elsewhere, "Ev-x")).status_code == 200
        challenge = json.dumps({"token": "x", "challenge": "abc", "type": "url_verification"}).encode()
        answered = send(slack, challenge)
        assert answered.status_code == 200 and answered.json()["challenge"] == "abc"
    assert slack_api.of("chat.postMessage") == []


def test_an_ask_posted_before_a_restart_is_answered_after_it(
    store_url_factory: Factory, tmp_path: Path, slack_api: SlackWebApi
) -> None:
    first = slack_server(store_url_factory("sqlite"), tmp_path, slack_api).start()
    with first.client() as client:
        ask_id = park(client, "deploy-4", slack={"channel": "C1"})
        posted(slack_api)
        until(lambda: client.get(f"/v1/asks/{ask_id}").json().get("slack"), 10, "the post")
    first.stop()
    again = first.start()
    try:
        with httpx.Client(base_url=again.url, timeout=30) as slack:
            assert send(slack, slack_api.click(ask_id, "parkgate:cancel", "UBOB", "t-9"), form=True).status_code == 200
        (update,) = updated(slack_api)
        assert update.args["text"] == "Dropped by <@UBOB>, nothing ran."
    finally:
        again.stop()


def test_an_ask_for_slack_is_refused_where_slack_is_not_served(store_url_factory: Factory, tmp_path: Path) -> None:
    plain = Server(store_url_factory("sqlite").url, tmp_path / "plain.log", token=TOKEN, in_thread=True).start()
    try:
        with plain.client() as client:
            body = {"conversation_id": "c", "prompt": "Deploy?", "options": ["Yes"], "slack": {"channel": "C1"}}
            refused = client.post("/v1/asks", json=body)
            assert refused.status_code == 422 and "slack" in refused.json()["detail"]
            assert client.post("/slack/events", json={}).status_code == 404
    finally:
        plain.stop()


def test_parkgate_deliver_posts_the_asks_a_library_gateway_parks(tmp_path: Path, slack_api: SlackWebApi) -> None:
    """Sending needs only the bot token: deliver serves no events, so no signing secret."""
    url = f"sqlite:///{tmp_path / 'lib.db'}"
    env = {k: v for k, v in os.environ.items() if not k.startswith("PARKGATE_")}
    env.update(PARKGATE_SLACK_BOT_TOKEN=BOT_TOKEN, PARKGATE_SLACK_API_URL=slack_api.url)
    with Gateway(url) as gateway:
        asked = gateway.ask("lib-1", "Ship?", ["Ship"], post_to=ChannelTarget("slack", {"channel": "C7"}))
        # A process: what is tested is the ``parkgate deliver`` command an operator runs.
        deliverer = subprocess.Popen(
            [sys.executable, "-m", "parkgate", "deliver", "--db", url],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            (post,) = posted(slack_api)
            assert post.args["channel"] == "C7"
            assert asked.ask_id is not None
            gateway.cancel(asked.ask_id)
            (update,) = updated(slack_api)
            assert update.args["text"] == "Dropped by an operator, nothing ran."
        finally:
            deliverer.terminate()
            deliverer.wait(20)


def test_a_post_slack_refuses_for_good_is_listed_as_failed_with_slacks_error(
    server: Server, slack_api: SlackWebApi
) -> None:
    with server.client() as client:
        ask_id = park(client, "deploy-5", slack={"channel": MISSING_CHANNEL})
        failed = until(lambda: client.get("/v1/channels/failed").json()["jobs"], 10, "the failed post")
        assert [(job["ask_id"], job["channel"], job["job"], job["attempts"]) for job in failed] == [
            (ask_id, "slack", "post", 1)
        ]
        assert "channel_not_found" in failed[0]["last_error"]
        assert client.get(f"/v1/asks/{ask_id}").json().get("slack") is None  # never posted
