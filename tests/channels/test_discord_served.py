"""Discord through a real ``parkgate serve`` on both stores, against a recording stand-in
for Discord's REST API (``PARKGATE_DISCORD_API_URL``, its payloads checked against
discord.py's field names) and interactions signed with an Ed25519 key, as Discord signs
them: a forged signature is refused and changes nothing; a press answers; a press by a
non-responder is told privately who the ask is for; a 2-of-3 ask closes on the second
responder's vote; Reply's form answers a free-text ask; Cancel closes the ask and
completes its run; an ask that expires with nobody reading has its post edited within
2 s of its TTL; and a half configuration stops the start, naming what is missing.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
from discord_stand_in import BOT_TOKEN, Call, DiscordApi, Signer, check_response
from live_server import Server, free_port
from nacl.signing import SigningKey

from late_words import at, closed_time
from polling import until

TOKEN = "secret-token"
CHANNEL = "800000000000000001"
ALICE, BOB, CAROL, MALLORY = "700000000000000011", "700000000000000022", "700000000000000033", "700000000000000099"
OPS_ROLE = "600000000000000001"
Factory = Any


@pytest.fixture
def api() -> Iterator[DiscordApi]:
    running = DiscordApi().start()
    yield running
    running.stop()


@pytest.fixture
def signer() -> Signer:
    return Signer()


def discord_env(api: DiscordApi, signer: Signer) -> dict[str, str]:
    return {
        "PARKGATE_DISCORD_BOT_TOKEN": BOT_TOKEN,
        "PARKGATE_DISCORD_PUBLIC_KEY": signer.public_key,
        "PARKGATE_DISCORD_API_URL": api.url,
    }


@pytest.fixture(params=["sqlite", "postgres"])
def server(
    request: pytest.FixtureRequest, store_url_factory: Factory, tmp_path: Path, api: DiscordApi, signer: Signer
) -> Iterator[Server]:
    location = store_url_factory(request.param)
    env = discord_env(api, signer)
    running = Server(
        location.url, tmp_path / "serve.log", token=TOKEN, schema=location.schema, extra_env=env, via_cli=True
    ).start()
    yield running
    running.stop()


def park(client: httpx.Client, conversation: str, **fields: Any) -> dict[str, Any]:
    body = {"conversation_id": conversation, "prompt": "Deploy to production?", "options": ["Deploy", "Hold"], **fields}
    answer = client.post("/v1/asks", json=body)
    assert answer.status_code == 201, answer.text
    return dict(client.get(f"/v1/asks/{answer.json()['ask_id']}").json())


def posted(client: httpx.Client, api: DiscordApi, ask_id: str) -> dict[str, Any]:
    """The ask's message, as the stand-in holds it, once the ask's JSON says where it is."""
    where = until(lambda: client.get(f"/v1/asks/{ask_id}").json().get("discord"), 30, "the post's location")
    assert where["channel_id"] == CHANNEL
    return api.messages[where["message_id"]]


def button(message: dict[str, Any], label: str) -> str:
    """The custom_id of the button labelled ``label`` on ``message``."""
    found = [b["custom_id"] for row in message["components"] for b in row["components"] if b["label"] == label]
    assert len(found) == 1, (label, message["components"])
    return str(found[0])


def labels(message: dict[str, Any]) -> list[list[str]]:
    return [[b["label"] for b in row["components"]] for row in message["components"]]


def interact(server: Server, signer: Signer, interaction: dict[str, Any], **signing: Any) -> httpx.Response:
    body = json.dumps(interaction).encode()
    return httpx.post(f"{server.url}/discord/interactions", content=body, headers=signer.headers(body, **signing))


def edits(api: DiscordApi, count: int = 1) -> list[Call]:
    return until(lambda: (found := api.edits())[count - 1 :] and found, 30, f"{count} edit(s) of the post")


def followups(api: DiscordApi, count: int = 1) -> list[Call]:
    return until(lambda: (found := api.followups())[count - 1 :] and found, 30, f"{count} private line(s)")


def status(client: httpx.Client, ask_id: str) -> str:
    return str(client.get(f"/v1/asks/{ask_id}").json()["status"])


def test_a_forged_interaction_is_refused_a_non_responder_is_told_privately_and_a_press_answers(
    server: Server, api: DiscordApi, signer: Signer
) -> None:
    with server.client() as client:
        ask = park(client, "deploy-1", discord={"channel_id": CHANNEL}, responders=[ALICE])
        message = posted(client, api, ask["ask_id"])
        assert labels(message) == [["1. Deploy", "2. Hold"], ["Show options", "Cancel"]]
        assert "/cancel" not in message["content"] and "1. Deploy" in message["content"]
        (post,) = api.posts(CHANNEL)
        assert post.body["allowed_mentions"] == {"parse": [], "users": [ALICE], "roles": []}  # whom it is for

        # The Developer Portal's check of the endpoint: a PING is answered PONG.
        assert interact(server, signer, signer.ping()).json() == {"type": 1}

        show_options = button(message, "Show options")  # the edit on close removes the buttons

        # Forged: signed with another key, not signed, or a body changed after signing. 401, nothing read.
        press = signer.press(message, button(message, "1. Deploy"), ALICE)
        assert interact(server, signer, press, key=SigningKey.generate()).status_code == 401
        unsigned = httpx.post(f"{server.url}/discord/interactions", json=press)
        assert unsigned.status_code == 401
        body = json.dumps(press).encode()
        tampered = body.replace(ALICE.encode(), MALLORY.encode())
        refused = httpx.post(f"{server.url}/discord/interactions", content=tampered, headers=signer.headers(body))
        assert refused.status_code == 401
        assert status(client, ask["ask_id"]) == "open" and api.edits() == [] and api.followups() == []

        # Someone who is not a responder: acknowledged at once, told privately, nothing changes.
        stranger = signer.press(message, button(message, "2. Hold"), MALLORY)
        assert interact(server, signer, stranger).json() == {"type": 6}
        (whisper,) = followups(api)
        assert whisper.path == f"/webhooks/{stranger['application_id']}/{stranger['token']}"
        assert whisper.body["flags"] == 64 and whisper.body["content"] == f"This question is for <@{ALICE}>."
        assert status(client, ask["ask_id"]) == "open"

        # The responder's press answers it; Discord's redelivery of the interaction applies once.
        assert interact(server, signer, press).json() == {"type": 6}
        (edit,) = edits(api)
        assert edit.path == f"/channels/{CHANNEL}/messages/{message['id']}"
        assert edit.body["content"].endswith(f"Answered: Deploy, by <@{ALICE}>")
        assert edit.body["components"] == [] and edit.body["allowed_mentions"] == {"parse": []}
        assert interact(server, signer, press).json() == {"type": 6}
        closed = client.get(f"/v1/asks/{ask['ask_id']}").json()
        assert (closed["status"], closed["answer"], closed["answered_by"]) == ("answered", "Deploy", ALICE)

        # A press on the closed ask is told how it closed, privately; the post is not edited again.
        late = signer.press(message, show_options, ALICE)
        assert interact(server, signer, late).json() == {"type": 6}
        told = f"This question is already closed (answered by <@{ALICE}> {at(closed_time(closed))})."
        assert followups(api, 2)[1].body["content"] == told
        timeline = client.get(f"/v1/asks/{ask['ask_id']}/events").json()["events"]
        print([(e["type"], e["sender"], e["data"]) for e in timeline])
        (logged,) = [event for event in timeline if event["type"] == "late"]
        assert (logged["type"], logged["sender"], logged["data"]["surface"]) == ("late", ALICE, "discord")
        assert len(api.edits()) == 1


def test_a_two_of_three_ask_closes_on_the_second_responders_vote(
    server: Server, api: DiscordApi, signer: Signer
) -> None:
    with server.client() as client:
        ask = park(client, "deploy-2", discord={"channel_id": CHANNEL}, responders=[ALICE, BOB, CAROL], quorum=2)
        message = posted(client, api, ask["ask_id"])
        deploy = button(message, "1. Deploy")
        assert interact(server, signer, signer.press(message, deploy, ALICE)).json() == {"type": 6}
        # The first vote is a line in the thread started from the ask's message.
        (vote,) = until(lambda: api.posts(message["id"]), 30, "the vote's line in the ask's thread")
        assert vote.body["content"] == (
            f'Vote taken: 1 of 2 votes for "Deploy" (option 1).\nVotes so far (2 needed): 1. Deploy: <@{ALICE}>.'
        )
        (started,) = api.of("POST", f"/channels/{CHANNEL}/messages/{message['id']}/threads")
        assert started.body["name"] == "Deploy to production?"
        assert status(client, ask["ask_id"]) == "open" and api.edits() == []

        assert interact(server, signer, signer.press(message, deploy, BOB)).json() == {"type": 6}
        (edit,) = edits(api)
        assert edit.body["content"].endswith(f"Answered: Deploy, by <@{BOB}>")
        closed = client.get(f"/v1/asks/{ask['ask_id']}").json()
        assert closed["status"] == "answered" and [v["sender"] for v in closed["votes"]] == [ALICE, BOB]


def test_replys_form_answers_a_free_text_ask(server: Server, api: DiscordApi, signer: Signer) -> None:
    with server.client() as client:
        prompt = "What should the release notes say?"
        ask = park(client, "notes-1", prompt=prompt, kind="text", options=[], discord={"channel_id": CHANNEL})
        message = posted(client, api, ask["ask_id"])
        assert labels(message) == [["Reply", "Show options", "Cancel"]]
        assert "press Reply to answer" in message["content"] and "/cancel" not in message["content"]

        # Reply opens the form at once (a modal): no deferral, nothing read.
        opened = interact(server, signer, signer.press(message, button(message, "Reply"), ALICE))
        form = check_response(opened.json())
        assert form["type"] == 9
        (field,) = form["data"]["components"][0]["components"]
        assert (field["type"], field["custom_id"], field["label"]) == (4, "answer", "Your answer")
        assert status(client, ask["ask_id"]) == "open"

        sent = signer.submit(message, form["data"]["custom_id"], ALICE, "Faster deploys, fewer pages.")
        assert interact(server, signer, sent).json() == {"type": 6}
        (edit,) = edits(api)
        assert edit.body["content"].endswith(f"Answered: Faster deploys, fewer pages., by <@{ALICE}>")
        closed = client.get(f"/v1/asks/{ask['ask_id']}").json()
        assert (closed["status"], closed["answer"]) == ("answered", "Faster deploys, fewer pages.")


def test_cancel_closes_the_ask_and_completes_its_run_and_a_responder_role_may_press_it(
    server: Server, api: DiscordApi, signer: Signer
) -> None:
    with server.client() as client:
        ask = park(client, "deploy-3", discord={"channel_id": CHANNEL}, responders=[f"<@&{OPS_ROLE}>"])
        message = posted(client, api, ask["ask_id"])
        cancel = button(message, "Cancel")
        # A member without the role: told privately, nothing changes.
        assert interact(server, signer, signer.press(message, cancel, MALLORY, roles=("600000000000000777",))).json()
        (whisper,) = followups(api)
        assert whisper.body["content"] == f"This question is for <@&{OPS_ROLE}>." and whisper.body["flags"] == 64
        assert status(client, ask["ask_id"]) == "open"

        assert interact(server, signer, signer.press(message, cancel, BOB, roles=(OPS_ROLE,))).json() == {"type": 6}
        (edit,) = edits(api)
        assert edit.body["content"].endswith(f"Dropped by <@&{OPS_ROLE}>, nothing ran.")
        closed = client.get(f"/v1/asks/{ask['ask_id']}").json()
        assert (closed["status"], closed["closed_by"]) == ("cancelled", f"<@&{OPS_ROLE}>")
        run = client.get(f"/v1/runs/{ask['run_id']}").json()
        assert (run["status"], run["pending_ask_id"]) == ("complete", None)


def test_an_ask_expiring_with_nobody_reading_has_its_post_edited_within_2_s_of_its_ttl(
    server: Server, api: DiscordApi
) -> None:
    with server.client() as client:
        ask = park(client, "deploy-4", discord={"channel_id": CHANNEL}, ttl_seconds=1)
        due = datetime.fromisoformat(ask["last_touched"]).timestamp() + ask["ttl_seconds"]
    # Nobody reads the ask from here on: the server's own due read expires it and edits the post.
    (edit,) = until(lambda: api.edits(), 30, "the expired ask's edit")
    assert edit.body["content"].endswith("Expired after 1 s, nothing ran.")
    assert 0 <= edit.at - due <= 2.0, edit.at - due


@pytest.mark.parametrize(
    ("given", "named"),
    [
        ("PARKGATE_DISCORD_PUBLIC_KEY", "PARKGATE_DISCORD_BOT_TOKEN"),
        ("PARKGATE_DISCORD_BOT_TOKEN", "PARKGATE_DISCORD_PUBLIC_KEY"),
    ],
)
def test_a_half_configuration_stops_the_start_naming_what_is_missing(
    given: str, named: str, store_url_factory: Factory, api: DiscordApi, signer: Signer
) -> None:
    env = {key: value for key, value in os.environ.items() if not key.startswith("PARKGATE_")}
    env |= {
        "PARKGATE_DB": store_url_factory("sqlite").url,
        "PARKGATE_TOKEN": TOKEN,
        given: discord_env(api, signer)[given],
    }
    command = [sys.executable, "-m", "parkgate", "serve", "--host", "127.0.0.1", "--port", str(free_port())]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode != 0
    assert named in done.stdout + done.stderr
