"""docs/channels/slack.md followed from scratch: its manifest's URLs and events, fed to a
live server (in a thread) started with the page's settings, and its example ask answered."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest
import yaml
from live_server import Server
from slack_stand_in import BOT_TOKEN, SIGNING_SECRET, SlackWebApi, event_body, send

from parkgate.channels.slack import EVENTS_PATH
from polling import until

PAGE = Path(__file__).resolve().parents[2] / "docs" / "channels" / "slack.md"
TOKEN = "page-token"


def manifest() -> dict[str, Any]:
    (block,) = re.findall(r"```yaml\n(.*?)```", PAGE.read_text(encoding="utf-8"), re.S)
    loaded: dict[str, Any] = yaml.safe_load(block)
    return loaded


def documented_ask() -> dict[str, Any]:
    (body,) = re.findall(r"-d '(\{.*?\})'", PAGE.read_text(encoding="utf-8"), re.S)
    loaded: dict[str, Any] = json.loads(body)
    return loaded


@pytest.fixture
def slack_api() -> Any:
    api = SlackWebApi().start()
    yield api
    api.stop()


def test_the_manifest_names_one_url_for_events_and_clicks_and_the_scopes_the_channel_uses() -> None:
    settings = manifest()["settings"]
    urls = {settings["event_subscriptions"]["request_url"], settings["interactivity"]["request_url"]}
    (url,) = urls
    assert urlsplit(url).path == EVENTS_PATH and settings["interactivity"]["is_enabled"] is True
    assert "chat:write" in manifest()["oauth_config"]["scopes"]["bot"]
    assert settings["socket_mode_enabled"] is False


def test_a_new_user_following_the_page_gets_a_working_approval(tmp_path: Path, slack_api: SlackWebApi) -> None:
    settings = manifest()["settings"]
    url = urlsplit(settings["event_subscriptions"]["request_url"])
    env = {
        "PARKGATE_SLACK_BOT_TOKEN": BOT_TOKEN,
        "PARKGATE_SLACK_SIGNING_SECRET": SIGNING_SECRET,
        "PARKGATE_ALLOWED_HOSTS": url.hostname or "",
        "PARKGATE_SLACK_API_URL": slack_api.url,
    }
    db = f"sqlite:///{tmp_path / 'parkgate.db'}"
    server = Server(db, tmp_path / "server.log", token=TOKEN, extra_env=env, in_thread=True)
    server.start()
    try:
        # Slack reaches the server by the manifest's host name.
        with httpx.Client(base_url=server.url, headers={"Host": url.netloc}, timeout=30) as slack:
            challenge = json.dumps({"token": "x", "challenge": "c-1", "type": "url_verification"}).encode()
            verified = send(slack, challenge)
            assert verified.status_code == 200 and verified.json()["challenge"] == "c-1"
            for number, subscribed in enumerate(settings["event_subscriptions"]["bot_events"]):
                kind, channel_type = subscribed.split(".")
                event = {
                    "type": kind,
                    "channel_type": channel_type.rstrip("s"),
                    "channel": "C9",
                    "user": "U1",
                    "text": "hello",
                    "ts": f"5.{number}",
                }
                assert send(slack, event_body(event, f"Ev{number}")).status_code == 200, subscribed

            with server.client() as client:
                ask = documented_ask()
                parked = client.post("/v1/asks", json=ask)
                assert parked.status_code == 201, parked.text
                ask_id = parked.json()["ask_id"]
                post = until(lambda: slack_api.of("chat.postMessage"), 10, "the ask's message")[0]
                assert post.args["channel"] == ask["slack"]["channel"]
                until(lambda: client.get(f"/v1/asks/{ask_id}").json().get("slack"), 10, "the post's location")
                responder = ask["responders"][0]
                clicked = send(slack, slack_api.click(ask_id, "parkgate:option:1", responder, "trig-1"), form=True)
                assert clicked.status_code == 200
                assert client.get(f"/v1/asks/{ask_id}?wait=10").json()["answer"] == ask["options"][0]
            update = until(lambda: slack_api.of("chat.update"), 10, "the message's update")[0]
            assert update.args["text"] == f"Answered: {ask['options'][0]}, by <@{responder}>"
    finally:
        server.stop()
