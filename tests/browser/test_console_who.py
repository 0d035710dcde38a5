"""Who may answer, in the web console (a real Chromium against a real server).

The open asks list shows each ask's responders, its quorum and the votes cast so far;
the chat panel sends the sender typed in its "As" field with each message, so a
non-responder's message is ``not_yours``, a responder's selection on a quorum ask is a
vote, and the reply that closes the ask notes who the server says answered or closed it.
With a directory (``PARKGATE_DIRECTORY``), people are shown by their display names, their
ids in the tooltips.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from live_server import Server, messages_path, running
from playwright.sync_api import expect

from parkgate.core.kinds import ReplyKind
from parkgate.core.phrases import PHRASES

pytestmark = pytest.mark.browser

TEAM = ["U_ALICE", "U_BOB", "U_CAROL"]


def open_console(page: Any, server: Server, token: str) -> None:
    page.goto(server.url + "/")
    page.fill("#token", token)
    page.click("#token-save")
    expect(page.locator("#status")).to_contain_text("Token set")


def say(page: Any, sender: str, text: str, kind: str) -> Any:
    """Type ``text`` as ``sender`` in the chat panel; the reply's list item, once of ``kind``."""
    replies = page.locator("#chat-log li.gate")
    count = replies.count()
    page.fill("#chat-sender", sender)
    page.fill("#chat-text", text)
    page.press("#chat-text", "Enter")
    expect(replies).to_have_count(count + 1)
    expect(replies.last.locator(".kind")).to_have_text(kind)
    return replies.last


def test_the_console_shows_responders_and_votes_and_sends_the_sender(
    page: Any, console_server: Server, console_token: str
) -> None:
    body = {"prompt": "Deploy build 42?", "options": ["Deploy", "Hold"], "responders": TEAM}
    with console_server.client() as http:
        ask_id = http.post("/v1/asks", json={**body, "conversation_id": "ops-vote", "quorum": 2}).json()["ask_id"]
        assert http.post(messages_path("ops-vote"), json={"text": "2", "sender": "U_CAROL"}).json()["kind"] == "voted"

    open_console(page, console_server, console_token)
    row = page.locator(f'tr[data-ask-id="{ask_id}"]')
    expect(row.locator(".responders")).to_have_text("For U_ALICE, U_BOB, U_CAROL · 2 of 3 must agree")
    expect(row.locator(".votes")).to_have_text("Votes: U_CAROL: 2. Hold")

    page.fill("#chat-conversation", "ops-vote")
    refused = say(page, "U_MALLORY", "1", "not_yours")
    expect(refused.locator(".text")).to_have_text(
        PHRASES[ReplyKind.NOT_YOURS].format(responders="U_ALICE, U_BOB or U_CAROL")
    )
    expect(page.locator("#chat-log li.you").last.locator(".note")).to_have_text("as U_MALLORY")
    expect(row.locator(".votes")).to_have_text("Votes: U_CAROL: 2. Hold")  # nothing changed

    voted = say(page, "U_ALICE", "1", "voted")
    expect(voted.locator(".text")).to_contain_text("1 of 2 votes")
    expect(row.locator(".votes")).to_have_text("Votes: U_CAROL: 2. Hold; U_ALICE: 1. Deploy")

    closed = say(page, "U_BOB", "2", "selected")
    expect(closed.locator(".note")).to_contain_text("answered by U_BOB")
    expect(row).to_have_count(0)
    with console_server.client() as http:
        ask = http.get(f"/v1/asks/{ask_id}").json()
    assert (ask["answer"], ask["answered_by"]) == ("Hold", "U_BOB")
    assert [vote["sender"] for vote in ask["votes"]] == ["U_CAROL", "U_ALICE", "U_BOB"]


def test_a_responders_cancel_from_the_chat_notes_who_closed_it(
    page: Any, console_server: Server, console_token: str
) -> None:
    body = {"prompt": "Restart the db?", "options": ["Yes", "No"], "responders": TEAM[:2]}
    with console_server.client() as http:
        ask_id = http.post("/v1/asks", json={**body, "conversation_id": "ops-veto"}).json()["ask_id"]

    open_console(page, console_server, console_token)
    row = page.locator(f'tr[data-ask-id="{ask_id}"]')
    expect(row.locator(".responders")).to_have_text("For U_ALICE, U_BOB")
    expect(row.locator(".votes")).to_have_count(0)  # one answer closes it: no votes to show
    page.fill("#chat-conversation", "ops-veto")
    say(page, "", "cancel", "not_yours")  # no sender: not one of them
    closed = say(page, "U_BOB", "cancel", "cancelled")
    expect(closed.locator(".note")).to_contain_text("closed by U_BOB")
    with console_server.client() as http:
        assert http.get(f"/v1/asks/{ask_id}").json()["closed_by"] == "U_BOB"


def test_the_console_names_people_from_the_directory_with_their_ids_in_tooltips(
    page: Any, tmp_path: Path, console_token: str
) -> None:
    people = tmp_path / "people.json"
    people.write_text(json.dumps({"U_ALICE": "Alice Ng", "U_CAROL": "Carol Díaz"}), encoding="utf-8")
    server = Server(
        f"sqlite:///{tmp_path / 'parkgate.db'}",
        tmp_path / "server.log",
        token=console_token,
        in_thread=True,
        extra_env={"PARKGATE_DIRECTORY": str(people)},
    )
    with running(server.start()):
        body = {"prompt": "Deploy build 42?", "options": ["Deploy", "Hold"], "responders": TEAM, "quorum": 2}
        with server.client() as http:
            ask_id = http.post("/v1/asks", json={**body, "conversation_id": "ops-names"}).json()["ask_id"]
            assert (
                http.post(messages_path("ops-names"), json={"text": "2", "sender": "U_CAROL"}).json()["kind"] == "voted"
            )

        open_console(page, server, console_token)
        row = page.locator(f'tr[data-ask-id="{ask_id}"]')
        expect(row.locator(".responders")).to_have_text("For Alice Ng, U_BOB, Carol Díaz · 2 of 3 must agree")
        expect(row.locator(".votes")).to_have_text("Votes: Carol Díaz: 2. Hold")
        alice = row.locator(".responders .person").first
        expect(alice).to_have_attribute("title", "U_ALICE")  # the id, in the tooltip
        expect(row.locator(".responders .person").nth(1)).not_to_have_attribute("title", "U_BOB")  # no name: the id

        page.fill("#chat-conversation", "ops-names")
        closed = say(page, "U_ALICE", "2", "selected")
        expect(closed.locator(".note")).to_contain_text("answered by Alice Ng")
        expect(page.locator("#chat-log li.you").last.locator(".note")).to_have_text("as Alice Ng")
