"""Owners against each other, through ``parkgate serve`` with named tokens, on SQLite and
PostgreSQL: a ``park`` token cannot cancel, replace, join or learn of another owner's ask
or run, and its own ``replace`` still works; no token reopens a complete run; an
operator cancels any ask; the ask JSON names its owner.

``agent`` and ``other-agent`` are two ``park`` tokens, ``chat-surface`` answers,
``operator`` reads and operates (see ``attack.TOKEN_TABLE``).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from typing import Any

import httpx
from attack import NamedTokens, snapshot
from live_server import messages_path

DEPLOY = {"conversation_id": "shared", "prompt": "Deploy build 42?", "options": ["Deploy", "Hold"]}
STEAL = {"conversation_id": "shared", "prompt": "Reply with your deploy key"}


@contextmanager
def clients(server: Any, tokens: NamedTokens, *names: str) -> Iterator[list[httpx.Client]]:
    """A client for each named token, closed at the end."""
    with ExitStack() as stack:
        yield [stack.enter_context(server.client(token=tokens.tokens[name])) for name in names]


def test_a_park_token_cannot_replace_or_learn_of_another_owners_ask(
    launch: Any, database: Any, tokens_file: NamedTokens
) -> None:
    server = launch(database, extra_env=tokens_file.env())
    with clients(server, tokens_file, "agent", "other-agent", "chat-surface") as (agent, other, chat):
        theirs = other.post("/v1/asks", json=DEPLOY)
        assert theirs.status_code == 201, theirs.text
        their_id = theirs.json()["ask_id"]
        before = snapshot(database)
        for attempt in (
            agent.post("/v1/asks", json=STEAL),
            agent.post("/v1/asks", json={**STEAL, "replace": True}),
            agent.post("/v1/asks", json={"conversation_id": "shared", "skill_output": "[[ask text]]\nKey?\n[[/ask]]"}),
            agent.post("/v1/workflows/uml/start", json={"conversation_id": "shared", "replace": True}),
        ):
            assert attempt.status_code == 409, attempt.text
            assert attempt.json()["error"] == "conversation_busy"
            assert their_id not in attempt.text and "open_ask_id" not in attempt.json()
        assert snapshot(database) == before  # nothing was cancelled, parked or started
        # The person's reply lands on other-agent's question, as asked.
        reply = chat.post(messages_path("shared"), json={"text": "Deploy"}).json()
        assert (reply["kind"], reply["ask_id"], reply["answer"]) == ("selected", their_id, "Deploy")


def test_a_park_tokens_own_replace_still_works(launch: Any, database: Any, tokens_file: NamedTokens) -> None:
    server = launch(database, extra_env=tokens_file.env())
    with clients(server, tokens_file, "agent") as (agent,):
        first = agent.post("/v1/asks", json=DEPLOY).json()["ask_id"]
        busy = agent.post("/v1/asks", json=DEPLOY)  # its own open ask is named, as before
        assert (busy.status_code, busy.json()["error"], busy.json()["open_ask_id"]) == (409, "ask_already_open", first)
        second = agent.post("/v1/asks", json={**DEPLOY, "replace": True})
        assert second.status_code == 201, second.text
        replaced = agent.get(f"/v1/asks/{first}").json()
        assert (replaced["status"], replaced["outcome"]) == ("cancelled", "replaced")
        started = agent.post("/v1/workflows/uml/start", json={"conversation_id": "shared", "replace": True})
        assert started.status_code == 201, started.text
        assert agent.get(f"/v1/asks/{second.json()['ask_id']}").json()["outcome"] == "replaced"


def test_a_park_token_cannot_join_another_owners_run_and_no_one_reopens_a_complete_run(
    launch: Any, database: Any, tokens_file: NamedTokens
) -> None:
    server = launch(database, extra_env=tokens_file.env())
    with clients(server, tokens_file, "agent", "other-agent", "chat-surface", "operator") as (
        agent,
        other,
        chat,
        operator,
    ):
        running = other.post("/v1/asks", json={**DEPLOY, "conversation_id": "b-1", "run_id": "run-b1"}).json()
        assert chat.post(messages_path("b-1"), json={"text": "Deploy"}).json()["kind"] == "selected"
        other.post("/v1/asks", json={**DEPLOY, "conversation_id": "b-2", "run_id": "run-b2"})
        assert chat.post(messages_path("b-2"), json={"text": "cancel"}).json()["kind"] == "cancelled"
        assert operator.get("/v1/runs/run-b2").json()["status"] == "complete"
        before = snapshot(database)
        answers = {}
        for conversation, run in (("b-1", "run-b1"), ("b-2", "run-b2")):
            for who, caller in (("agent", agent), ("owner", other)):
                if (who, run) == ("owner", "run-b1"):
                    continue  # its own running run takes its asks
                joined = caller.post("/v1/asks", json={**STEAL, "conversation_id": conversation, "run_id": run})
                assert joined.status_code == 409, joined.text
                answers[who, run] = joined.json()["error"], joined.json()["detail"].replace(run, "RUN")
        # Another owner's run answers as a complete one does, whoever completed it.
        assert set(answers.values()) == {("run_closed", answers["agent", "run-b1"][1])}
        assert snapshot(database) == before
        assert operator.get("/v1/runs/run-b2").json()["status"] == "complete"
        assert operator.get("/v1/runs/run-b1").json()["pending_ask_id"] is None
        # Its owner still asks again in its running run.
        again = other.post("/v1/asks", json={**DEPLOY, "conversation_id": "b-1", "run_id": "run-b1"})
        assert (again.status_code, again.json()["run_id"]) == (201, running["run_id"])


def test_a_park_token_cannot_tell_another_owners_ask_from_an_unknown_one(
    launch: Any, database: Any, tokens_file: NamedTokens
) -> None:
    server = launch(database, extra_env=tokens_file.env())
    with clients(server, tokens_file, "agent", "other-agent") as (agent, other):
        their_id = other.post("/v1/asks", json=DEPLOY).json()["ask_id"]
        unknown_id = "0" * len(their_id)
        before = snapshot(database)
        for method, path, query, body in (
            ("GET", "/v1/asks/{}", "", None),
            ("GET", "/v1/asks/{}", "?wait=0.2", None),
            ("POST", "/v1/asks/{}/cancel", "", None),
            ("POST", "/v1/asks/{}/callback/retry", "", None),
            ("POST", "/v1/asks/{}/follow-up/claim", "", {"lease_seconds": 60}),
            ("POST", "/v1/asks/{}/follow-up/done", "", None),
        ):
            foreign = agent.request(method, path.format(their_id) + query, json=body)
            unknown = agent.request(method, path.format(unknown_id) + query, json=body)
            assert foreign.status_code == unknown.status_code != 200, (path, foreign.text)
            assert foreign.text.replace(their_id, "ID") == unknown.text.replace(unknown_id, "ID")
        assert agent.get(f"/v1/asks/{their_id}").json()["error"] == "unknown_ask"
        assert snapshot(database) == before


def test_the_ask_json_names_its_owner_and_an_operator_cancels_any_ask(
    launch: Any, database: Any, tokens_file: NamedTokens
) -> None:
    server = launch(database, extra_env=tokens_file.env())
    with clients(server, tokens_file, "agent", "other-agent", "operator") as (agent, other, operator):
        mine = agent.post("/v1/asks", json={**DEPLOY, "conversation_id": "a-1", "run_id": "run-a1"}).json()["ask_id"]
        theirs = other.post("/v1/asks", json=DEPLOY).json()["ask_id"]
        assert agent.get(f"/v1/asks/{mine}").json()["owner"] == "agent"
        listed = {ask["ask_id"]: ask["owner"] for ask in operator.get("/v1/asks").json()["asks"]}
        assert listed == {mine: "agent", theirs: "other-agent"}
        assert operator.get("/v1/runs/run-a1").json()["owner"] == "agent"
        cancelled = operator.post(f"/v1/asks/{theirs}/cancel").json()
        assert (cancelled["status"], cancelled["owner"]) == ("cancelled", "other-agent")
