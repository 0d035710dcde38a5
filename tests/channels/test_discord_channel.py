"""Discord's limits and rate limits, through a live server in a thread (configured from the
environment as ``parkgate serve`` configures its workers, on a clock the test moves)
against the recording REST stand-in: options past Discord's 20 option buttons are typed
in Reply's form, a question longer than a message is a 422 and never posted, a target
that is not a channel id is refused, and a 429 is waited out when short and honoured by
the job's retry when long (each job counted in the metrics, by channel); and the library
refuses a target that is not Discord's before anything is written.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from discord_stand_in import BOT_TOKEN, DiscordApi, Signer, check_response
from live_server import Server

from parkgate import ChannelTarget, Gateway, ManualClock
from parkgate.channels.discord import DiscordApi as RestApi
from parkgate.channels.discord import DiscordChannel
from parkgate.errors import InputError
from polling import until

TOKEN = "secret-token"
CHANNEL = "800000000000000001"
ALICE = "700000000000000011"
POSTS = f"/channels/{CHANNEL}/messages"


@pytest.fixture
def api() -> Iterator[DiscordApi]:
    running = DiscordApi().start()
    yield running
    running.stop()


@pytest.fixture
def signer() -> Signer:
    return Signer()


@pytest.fixture
def server(store_url_factory: Any, tmp_path: Path, api: DiscordApi, signer: Signer) -> Iterator[Server]:
    env = {
        "PARKGATE_DISCORD_BOT_TOKEN": BOT_TOKEN,
        "PARKGATE_DISCORD_PUBLIC_KEY": signer.public_key,
        "PARKGATE_DISCORD_API_URL": api.url,
    }
    location = store_url_factory("sqlite")
    running = Server(
        location.url, tmp_path / "server.log", token=TOKEN, extra_env=env, in_thread=True, clock=ManualClock()
    ).start()
    yield running
    running.stop()


def park(client: httpx.Client, conversation: str, **fields: Any) -> httpx.Response:
    body = {"conversation_id": conversation, "prompt": "Deploy?", "options": ["Deploy", "Hold"], **fields}
    return client.post("/v1/asks", json=body)


def message_of(client: httpx.Client, api: DiscordApi, ask_id: str) -> dict[str, Any]:
    where = until(lambda: client.get(f"/v1/asks/{ask_id}").json().get("discord"), 10, "the post's location")
    return api.messages[where["message_id"]]


def posted(client: httpx.Client, api: DiscordApi, conversation: str) -> tuple[str, dict[str, Any]]:
    """Park a Deploy/Hold ask posted to the channel: its id and its message as Discord holds it."""
    answer = park(client, conversation, discord={"channel_id": CHANNEL})
    assert answer.status_code == 201, answer.text
    ask_id = answer.json()["ask_id"]
    return ask_id, message_of(client, api, ask_id)


def button(message: dict[str, Any], label: str) -> str:
    """The custom id of the button labelled ``label`` on ``message``."""
    (found,) = [b["custom_id"] for row in message["components"] for b in row["components"] if b["label"] == label]
    return str(found)


def interact(server: Server, signer: Signer, interaction: dict[str, Any], age: float = 0) -> httpx.Response:
    """Send ``interaction`` signed as Discord signs it, ``age`` seconds before the server's clock."""
    body = json.dumps(interaction).encode()
    stamp = str(int(server.clock.now().timestamp() - age))
    headers = signer.headers(body, timestamp=stamp)
    return httpx.post(f"{server.url}/discord/interactions", content=body, headers=headers, timeout=30)


def test_options_past_the_buttons_are_typed_by_number_in_replys_form(
    server: Server, api: DiscordApi, signer: Signer
) -> None:
    options = [f"Region {n}" for n in range(1, 26)]
    with server.client() as client:
        answer = park(client, "regions", prompt="Which region?", options=options, discord={"channel_id": CHANNEL})
        assert answer.status_code == 201, answer.text
        ask_id = answer.json()["ask_id"]
        message = message_of(client, api, ask_id)
        rows = [[b["label"] for b in row["components"]] for row in message["components"]]
        assert rows[:4] == [[f"{n}. Region {n}" for n in range(start, start + 5)] for start in (1, 6, 11, 16)]
        assert rows[4] == ["Reply", "Show options", "Cancel"]  # five rows, as Discord allows
        assert "25. Region 25" in message["content"] and "Reply with its number" in message["content"]

        (reply,) = [b["custom_id"] for row in message["components"] for b in row["components"] if b["label"] == "Reply"]
        form = check_response(interact(server, signer, signer.press(message, reply, ALICE)).json())
        assert form["type"] == 9
        assert interact(server, signer, signer.submit(message, form["data"]["custom_id"], ALICE, "23")).json() == {
            "type": 6
        }
        until(lambda: api.edits(), 10, "the post's edit")
        ask = client.get(f"/v1/asks/{ask_id}").json()
        assert (ask["status"], ask["answer"], ask["option_index"]) == ("answered", "Region 23", 23)


def test_a_question_too_long_for_a_message_or_a_bad_target_is_a_422_and_never_posted(
    server: Server, api: DiscordApi
) -> None:
    with server.client() as client:
        long = park(client, "long", prompt="p" * 2100, discord={"channel_id": CHANNEL})
        assert long.status_code == 422 and "2000" in long.json()["detail"] and "Discord" in long.json()["detail"]
        for target in ({"channel_id": "general"}, {"channel_id": CHANNEL, "thread": "1"}, {}):
            assert park(client, "bad", discord=target).status_code == 422, target
        assert client.get("/v1/asks").json()["asks"] == []
        assert park(client, "short", discord={"channel_id": CHANNEL}).status_code == 201
        (post,) = until(lambda: api.posts(CHANNEL), 10, "the one post")
        assert post.body["content"].startswith("Deploy?")


def test_a_429_is_waited_out_when_short_and_the_job_retried_no_sooner_when_long(
    server: Server, api: DiscordApi
) -> None:
    with server.client() as client:
        api.rate_limit(POSTS, retry_after=0.3)
        assert park(client, "short-wait", discord={"channel_id": CHANNEL}).status_code == 201
        limited, made = until(lambda: (calls := api.posts(CHANNEL))[1:] and calls, 10, "the post made again")
        assert made.at - limited.at >= 0.3

        api.rate_limit(POSTS, retry_after=30)
        started = server.clock.now()
        ask_id = park(client, "long-wait", discord={"channel_id": CHANNEL}).json()["ask_id"]

        def next_post_at() -> Any:
            if len(api.posts(CHANNEL)) < 3:
                return None
            with server.gateway.store.transaction() as tx:
                due = tx.channels.next_jobs_at(["discord"]).get("discord")
            return due if due is not None and due > started else None

        assert until(next_post_at, 10, "the rate-limited post's retry") >= started + timedelta(seconds=30)
        assert client.get(f"/v1/asks/{ask_id}").json().get("discord") is None
        server.clock.advance(31)
        message_of(client, api, ask_id)
        assert len(api.posts(CHANNEL)) == 4

        # The metrics count each channel's jobs: the long wait's post is a retry, then done.
        scraped = client.get("/metrics").text
        assert 'parkgate_channel_jobs_total{channel="discord",job="post",outcome="retry",surface="http"} 1.0' in scraped
        assert 'parkgate_channel_jobs_total{channel="discord",job="post",outcome="done",surface="http"} 2.0' in scraped


def test_a_reminder_and_an_escalation_go_in_the_asks_thread_and_ping_whom_they_name(
    server: Server, api: DiscordApi
) -> None:
    bob = "700000000000000022"
    with server.client() as client:
        fields = {"ttl_seconds": 3600, "remind_after": 600, "escalate_after": 1200, "escalate_to": [bob]}
        answer = park(client, "remind", discord={"channel_id": CHANNEL}, responders=[ALICE], **fields)
        assert answer.status_code == 201, answer.text
        message = message_of(client, api, answer.json()["ask_id"])
        server.clock.advance(600)
        (reminder,) = until(lambda: api.posts(message["id"]), 10, "the reminder in the ask's thread")
        assert reminder.body["content"].startswith(f"Still waiting on <@{ALICE}>: Deploy?")
        assert reminder.body["allowed_mentions"] == {"parse": [], "users": [ALICE], "roles": []}
        (started,) = api.of("POST", f"/channels/{CHANNEL}/messages/{message['id']}/threads")
        assert started.body == {"name": "Deploy?", "auto_archive_duration": 1440}

        server.clock.advance(600)
        escalation = until(lambda: api.posts(message["id"])[1:], 10, "the escalation in the ask's thread")[0]
        assert escalation.body["content"].startswith(f"Now also asking <@{bob}>: Deploy?")
        assert escalation.body["allowed_mentions"] == {"parse": [], "users": [bob], "roles": []}
        assert len(api.of("POST", r"/channels/[0-9]+/messages/[0-9]+/threads")) == 1  # the thread, started once


def test_the_library_refuses_a_target_that_is_not_discords_before_anything_is_written(gateway: Gateway) -> None:
    gateway.add_channel(DiscordChannel(RestApi(BOT_TOKEN, "http://127.0.0.1:9")))
    for where in ({"channel_id": CHANNEL, "thread": "1"}, {"channel_id": 800000000000000001}, {}):
        with pytest.raises(InputError, match="discord"):
            gateway.ask("refused", "Deploy?", ["Deploy"], post_to=ChannelTarget("discord", where))
    assert gateway.parked("refused") is None


def test_a_signed_interaction_older_or_newer_than_five_minutes_is_refused_and_changes_nothing(
    server: Server, api: DiscordApi, signer: Signer
) -> None:
    with server.client() as client:
        ask_id, message = posted(client, api, "replayed")
        press = signer.press(message, button(message, "1. Deploy"), ALICE)
        for age in (6 * 60, -6 * 60):  # a captured request sent again later, or a clock far ahead
            refused = interact(server, signer, press, age=age)
            assert refused.status_code == 401 and refused.json()["error"] == "unauthorized"
            assert "timestamp" in refused.json()["detail"]
        assert client.get(f"/v1/asks/{ask_id}").json()["status"] == "open"
        assert interact(server, signer, press, age=4 * 60).status_code == 200  # within the window
        until(lambda: client.get(f"/v1/asks/{ask_id}").json()["status"] == "answered", 10, "the press's answer")
        assert client.get(f"/v1/asks/{ask_id}").json()["answer"] == "Deploy"


def test_a_pressers_discord_username_is_their_name_in_the_directory(
    server: Server, api: DiscordApi, signer: Signer
) -> None:
    with server.client() as client:
        _, message = posted(client, api, "named")
        assert ALICE not in client.get("/v1/directory").json()["names"]
        shown = interact(server, signer, signer.press(message, button(message, "Show options"), ALICE))
        assert shown.status_code == 200
        assert client.get("/v1/directory").json()["names"][ALICE] == "@user011"
