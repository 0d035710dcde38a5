"""Tokens that speak for one sender, through a real ``parkgate serve`` on both stores: a
token bound to ``U_ALICE`` posts every message as U_ALICE and is refused (403
``sender_mismatch``, nothing changed) when a body names anyone else; a relay token
without ``sender`` names each message's sender, and on an ask with responders anyone
else's message is ``not_yours``, changing nothing.
"""

from __future__ import annotations

import secrets
from pathlib import Path
from typing import Any

from attack import NamedTokens, clean_env, serve_command, snapshot
from live_server import messages_path

from parkgate.http.tokens import digest

TABLE = {
    "agent": '["park"]',
    "alice-phone": '["answer"]\nsender = "U_ALICE"',
    "relay": '["answer"]',
}


def sender_tokens(tmp_path: Path) -> NamedTokens:
    tokens = {name: secrets.token_urlsafe(24) for name in TABLE}
    lines = [
        f'[[token]]\nname = "{name}"\nsha256 = "{digest(tokens[name])}"\nscopes = {scopes}\n'
        for name, scopes in TABLE.items()
    ]
    path = tmp_path / "sender-tokens.toml"
    path.write_text("\n".join(lines), encoding="utf-8")
    return NamedTokens(path, tokens)


def test_a_token_bound_to_a_sender_refuses_another_sender(launch: Any, database: Any, tmp_path: Path) -> None:
    named = sender_tokens(tmp_path)
    server = launch(database, extra_env=named.env())
    with (
        server.client(token=named.tokens["agent"]) as agent,
        server.client(token=named.tokens["alice-phone"]) as alice,
        server.client(token=named.tokens["relay"]) as relay,
    ):
        parked = agent.post(
            "/v1/asks",
            json={
                "conversation_id": "c-who",
                "prompt": "Deploy?",
                "options": ["Deploy", "Hold"],
                "responders": ["U_ALICE", "U_BOB"],
                "quorum": 2,
            },
        )
        assert parked.status_code == 201, parked.text
        ask_id = parked.json()["ask_id"]
        path = messages_path("c-who")
        voted = alice.post(path, json={"text": "1"})  # no sender in the body: the token's own
        assert (voted.status_code, voted.json()["kind"]) == (200, "voted"), voted.text
        before = snapshot(database)
        votes_before = database.raw_query("SELECT votes FROM asks")
        for body in ({"text": "1", "sender": "U_BOB"}, {"text": "cancel", "sender": "U_EVE", "message_id": "m-1"}):
            refused = alice.post(path, json=body)
            assert refused.status_code == 403, refused.text
            assert refused.json()["error"] == "sender_mismatch"
        bounced = relay.post(path, json={"text": "cancel", "sender": "U_EVE", "message_id": "m-2"})
        assert (bounced.status_code, bounced.json()["kind"]) == (200, "not_yours"), bounced.text
        assert bounced.json()["text"] == "This question is for U_ALICE or U_BOB."
        assert relay.post(path, json={"text": "2", "message_id": "m-2"}).json() == bounced.json()  # redelivery
        assert snapshot(database) == before and database.raw_query("SELECT votes FROM asks") == votes_before
        same = alice.post(path, json={"text": "1", "sender": "U_ALICE"})  # naming itself is allowed
        assert same.json()["kind"] == "voted"
        selected = relay.post(path, json={"text": "Deploy", "sender": "U_BOB"})
        assert (selected.json()["kind"], selected.json()["answer"]) == ("selected", "Deploy")
        shown = agent.get(f"/v1/asks/{ask_id}").json()
        assert (shown["answered_by"], shown["closed_by"], shown["quorum"]) == ("U_BOB", None, 2)
        assert shown["responders"] == ["U_ALICE", "U_BOB"]
        assert [(vote["sender"], vote["option_index"]) for vote in shown["votes"]] == [("U_ALICE", 1), ("U_BOB", 1)]


def test_a_tokens_file_with_a_bad_sender_stops_the_start(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'p.db'}"
    for sender, says in (('""', "sender is empty"), ('"U\\u0007"', "sender contains a control character")):
        path = tmp_path / "tokens.toml"
        path.write_text(f'[[token]]\nname = "a"\nsha256 = "{digest("x")}"\nscopes = ["answer"]\nsender = {sender}\n')
        done = serve_command("--db", db, env=clean_env(PARKGATE_TOKENS_FILE=str(path)))
        assert done.returncode == 1, done.stderr
        assert says in done.stderr and "Traceback" not in done.stderr
