"""parkgate inside a user's own Bolt app (``register``), on both stores: Bolt's real request
verification and dispatch, the user's listeners still getting every message where nothing
is parked, and the Slack channel's jobs run against the recording Web API stand-in."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from slack_bolt import App, BoltRequest, BoltResponse
from slack_sdk import WebClient
from slack_stand_in import BOT_TOKEN, SIGNING_SECRET, SlackWebApi, event_body, signed_headers

from parkgate import ChannelTarget, Gateway, ManualClock
from parkgate.channels.deliver import ChannelDeliverer
from parkgate.channels.slack import register
from parkgate.channels.slack.serving import slack_app
from parkgate.http.app import create_app


@pytest.fixture
def slack_api() -> Iterator[SlackWebApi]:
    api = SlackWebApi().start()
    yield api
    api.stop()


class TheirApp:
    """A Bolt app someone already runs, with a message listener of their own."""

    def __init__(self, gateway: Gateway, api: SlackWebApi) -> None:
        client = WebClient(token=BOT_TOKEN, base_url=api.url)
        self.app = App(
            token=BOT_TOKEN,
            signing_secret=SIGNING_SECRET,
            client=client,
            token_verification_enabled=False,
            process_before_response=True,  # listeners end before dispatch returns: no thread to wait for
        )
        self.heard: list[str] = []

        @self.app.event("message")
        def their_listener(event: dict[str, Any]) -> None:
            self.heard.append(str(event.get("text")))

        register(self.app, gateway)
        self.gateway = gateway

    def send(self, body: bytes, *, form: bool = False, secret: str = SIGNING_SECRET) -> BoltResponse:
        content_type = "application/x-www-form-urlencoded" if form else "application/json"
        headers = {"content-type": content_type, **signed_headers(body, secret=secret)}
        return self.app.dispatch(BoltRequest(body=body.decode(), headers={k.lower(): v for k, v in headers.items()}))

    def deliver(self) -> int:
        return ChannelDeliverer(self.gateway.store, self.gateway.clock, self.gateway.channels).run_due()


def message(thread: str, text: str, ts: str, user: str = "UALICE") -> dict[str, Any]:
    return {"type": "message", "channel": "C1", "user": user, "text": text, "ts": ts, "thread_ts": thread}


def test_their_listeners_get_every_message_where_nothing_is_parked(gateway: Gateway, slack_api: SlackWebApi) -> None:
    theirs = TheirApp(gateway, slack_api)
    asked = gateway.ask("c1", "Deploy?", ["Deploy", "Hold"], post_to=ChannelTarget("slack", {"channel": "C1"}))
    assert asked.ask_id is not None and theirs.deliver() == 1
    post = gateway.channel_post(asked.ask_id)
    assert post is not None and post.location is not None
    thread = post.thread_key.split(":", 1)[1] if post.thread_key else ""

    assert theirs.send(event_body(message(thread, "maybe", "2.1"), "Ev1")).status == 200
    assert theirs.send(event_body(message("777.1", "hello there", "2.2"), "Ev2")).status == 200
    assert theirs.heard == ["hello there"]  # parkgate took the reply in its thread; theirs got the rest
    assert gateway.get(asked.ask_id).mismatches == 1
    theirs.deliver()
    (reply,) = [c for c in slack_api.of("chat.postMessage") if c.args.get("thread_ts") == thread]
    assert reply.args["text"].startswith("That did not match any option.")

    assert theirs.send(slack_api.click(asked.ask_id, "parkgate:option:2", "UALICE", "trig-1"), form=True).status == 200
    assert gateway.get(asked.ask_id).answer == "Hold"
    assert theirs.send(event_body(message(thread, "thanks!", "2.3"), "Ev3")).status == 200
    assert theirs.heard == ["hello there", "thanks!"]  # nothing parked there now: theirs again
    theirs.deliver()
    (update,) = slack_api.of("chat.update")
    assert update.args["text"] == "Answered: Hold, by <@UALICE>"


def test_bolts_own_verification_refuses_a_forged_request(gateway: Gateway, slack_api: SlackWebApi) -> None:
    theirs = TheirApp(gateway, slack_api)
    asked = gateway.ask("c1", "Deploy?", ["Deploy"], post_to=ChannelTarget("slack", {"channel": "C1"}))
    theirs.deliver()
    assert asked.ask_id is not None
    forged = slack_api.click(asked.ask_id, "parkgate:option:1", "UALICE", "trig-1")
    assert theirs.send(forged, form=True, secret="another-secret").status == 401
    assert gateway.get(asked.ask_id).is_open


def test_a_reshow_click_posts_the_menu_with_slacks_exits(gateway: Gateway, slack_api: SlackWebApi) -> None:
    theirs = TheirApp(gateway, slack_api)
    asked = gateway.ask("c1", "Deploy?", ["Deploy", "Hold"], post_to=ChannelTarget("slack", {"channel": "C1"}))
    theirs.deliver()
    assert asked.ask_id is not None
    assert theirs.send(slack_api.click(asked.ask_id, "parkgate:menu", "UALICE", "trig-1"), form=True).status == 200
    theirs.deliver()
    menu = slack_api.of("chat.postMessage")[-1].args["text"]
    assert "1. Deploy" in menu and "Show options or Cancel" in menu and "/cancel" not in menu


async def test_a_clickers_slack_username_is_their_name_in_the_directory(
    gateway: Gateway, slack_api: SlackWebApi
) -> None:
    theirs = TheirApp(gateway, slack_api)
    asked = gateway.ask("c1", "Deploy?", ["Deploy", "Hold"], post_to=ChannelTarget("slack", {"channel": "C1"}))
    theirs.deliver()
    assert asked.ask_id is not None
    app = create_app(gateway, deliver_callbacks=False)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://parkgate") as http:
        assert (await http.get("/v1/directory")).json() == {"names": {}}
        assert theirs.send(slack_api.click(asked.ask_id, "parkgate:menu", "UALICE", "trig-1"), form=True).status == 200
        assert (await http.get("/v1/directory")).json() == {"names": {"UALICE": "@ualice"}}


def test_a_clock_past_the_ttl_edits_the_post_when_the_due_read_closes_it(
    gateway: Gateway, clock: ManualClock, slack_api: SlackWebApi
) -> None:
    theirs = TheirApp(gateway, slack_api)
    asked = gateway.ask("c1", "Deploy?", ["Deploy"], ttl=6 * 3600, post_to=ChannelTarget("slack", {"channel": "C1"}))
    theirs.deliver()
    clock.advance(6 * 3600 + 1)
    assert gateway.read_due(10) == 1
    theirs.deliver()
    (update,) = slack_api.of("chat.update")
    assert update.args["text"] == "Expired after 6 h, nothing ran."
    assert asked.ask_id is not None and not gateway.get(asked.ask_id).is_open


def test_the_served_app_starts_without_bolts_token_warning(caplog: pytest.LogCaptureFixture, tmp_path: Path) -> None:
    """Bolt warns "As you gave `client` as well, `token` will be unused." when given both:
    the served app hands Bolt the client alone, which carries the token."""
    with caplog.at_level(logging.DEBUG), Gateway(f"sqlite:///{tmp_path / 'p.db'}") as gateway:
        app = slack_app(gateway, "xoxb-test", "secret", "http://127.0.0.1:9/api/")
    assert app.client.token == "xoxb-test"
    assert not [record for record in caplog.records if "unused" in record.getMessage()]
