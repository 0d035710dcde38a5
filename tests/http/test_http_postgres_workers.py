"""Several server processes on one PostgreSQL schema.

Two real servers receive interleaved (and duplicated) messages for the same
conversations at the same time; every ask's final state, and the set of replies,
must equal what one sequential gateway gives for the same messages. Then
``parkgate.http.server.serve`` with two uvicorn workers serves the seed scenario.
"""

from __future__ import annotations

import itertools
import re
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest
from live_server import Server, messages_path

from parkgate import Gateway
from polling import until

pytestmark = pytest.mark.postgres

OPTIONS = ["Sequence", "Class", "State"]
CONVERSATIONS = 8
MISSES = 6


def post(server: Server, conversation: str, text: str, message_id: str) -> dict[str, Any]:
    with httpx.Client(base_url=server.url, timeout=60) as http:
        response = http.post(messages_path(conversation), json={"text": text, "message_id": message_id})
    assert response.status_code == 200, response.text
    reply: dict[str, Any] = response.json()
    return reply


def sequential(model: Gateway, conversation: str, texts: list[str]) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The replies and the final ask of one in-process gateway fed ``texts`` in order."""
    ask_id = model.ask(conversation, "Which diagram?", OPTIONS).ask_id
    assert ask_id is not None
    replies = [model.handle(conversation, text).to_dict() for text in texts]
    final = model.get(ask_id)
    state = {
        "status": final.status.value,
        "answer": final.answer,
        "option_index": final.option_index,
        "mismatches": final.mismatches,
    }
    return replies, state


def shape(reply: dict[str, Any]) -> tuple[str, str, bool]:
    return reply["kind"], reply["text"], reply["parked"]


def test_two_servers_on_one_schema_agree_with_a_sequential_gateway(
    store_url_factory: Any, start_server: Any, tmp_path: Path
) -> None:
    location = store_url_factory("postgres")
    # Two processes: the point is concurrency across processes on one schema.
    a, b = start_server(location, in_thread=False), start_server(location, in_thread=False)
    servers = [a, b]
    conversations = [f"race-{n}" for n in range(CONVERSATIONS)]
    asks: dict[str, str] = {}
    for n, conversation in enumerate(conversations):
        with servers[n % 2].client() as http:
            created = http.post("/v1/asks", json={"conversation_id": conversation, "prompt": "Which diagram?",
                                                  "options": OPTIONS})  # fmt: skip
            assert created.status_code == 201, created.text
            asks[conversation] = created.json()["ask_id"]

    with ThreadPoolExecutor(max_workers=12) as pool:
        # 1. Six misses per conversation, every one delivered to both servers at once.
        jobs = [
            (conversation, f"{conversation}-miss-{i}", server)
            for conversation in conversations
            for i in range(MISSES)
            for server in servers
        ]
        misses = list(pool.map(lambda job: (job[0], job[1], post(job[2], job[0], f"nope {job[1]}", job[1])), jobs))
        # 2. "menu" twice with one message_id; 3. two different selections racing.
        menus = list(
            pool.map(
                lambda job: (job[0], post(job[1], job[0], "menu", "menu-1")), itertools.product(conversations, servers)
            )
        )
        picks = list(
            pool.map(
                lambda job: (job[0], job[1], post(servers[job[1] - 1], job[0], str(job[1]), f"pick-{job[1]}")),
                itertools.product(conversations, (1, 2)),
            )
        )

    model = Gateway(f"sqlite:///{tmp_path / 'model.db'}")
    for conversation in conversations:
        replies_by_id: dict[str, list[dict[str, Any]]] = {}
        for conv, message_id, reply in misses:
            if conv == conversation:
                replies_by_id.setdefault(message_id, []).append(reply)
        # a redelivered message_id is applied once: both deliveries got the one reply
        assert all(first == second for first, second in replies_by_id.values()), conversation
        seen = Counter(shape(first) for first, _ in replies_by_id.values())
        menu_replies = [reply for conv, reply in menus if conv == conversation]
        assert menu_replies[0] == menu_replies[1] and menu_replies[0]["kind"] == "reshown"
        mine = {index: reply for conv, index, reply in picks if conv == conversation}
        winners = [index for index, reply in mine.items() if reply["kind"] == "selected"]
        assert len(winners) == 1, f"{conversation}: {[r['kind'] for r in mine.values()]}"
        winner = winners[0]
        loser = mine[3 - winner]
        assert loser["kind"] == "pass" and loser["ask_id"] is None and loser["parked"] is False

        # The sequential expectation: misses in the order they committed, menu, the winning pick.
        texts = [f"nope {conversation}-miss-{i}" for i in range(MISSES)] + ["menu", str(winner)]
        expected, state = sequential(model, conversation, texts)
        assert seen == Counter(shape(reply) for reply in expected[:MISSES]), conversation
        assert shape(menu_replies[0]) == shape(expected[MISSES])
        assert shape(mine[winner]) == shape(expected[MISSES + 1])
        assert mine[winner]["answer"] == OPTIONS[winner - 1] == expected[-1]["answer"]
        # Every escalated line counted a distinct try: no miss was double-counted or lost.
        tries = sorted(int(m) for r, _ in replies_by_id.values() for m in re.findall(r"\((\d+) tries\)", r["text"]))
        assert tries == list(range(3, MISSES + 1))
        with a.client() as http:
            final = http.get(f"/v1/asks/{asks[conversation]}").json()
        assert {key: final[key] for key in state} == state, conversation
    model.close()


def test_serve_with_two_workers_on_postgresql(store_url_factory: Any, start_server: Any) -> None:
    location = store_url_factory("postgres")
    server = start_server(location, workers=2)
    # Two worker processes start (the server answers once one is up: wait, bounded, for both).
    until(
        lambda: len(set(re.findall(r"Started server process \[(\d+)\]", server.log_text()))) >= 2,
        60,
        f"both workers to start:\n{server.log_tail()}",
    )
    with server.client() as http:
        for n in range(6):
            conversation = f"w-{n}"
            assert http.post("/v1/workflows/uml/start", json={"conversation_id": conversation}).status_code == 201
            kinds = [
                http.post(messages_path(conversation), json={"text": text}).json()["kind"]
                for text in ("a", "b", "c", "d", "/cancel")
            ]
            assert kinds == ["retry", "retry", "escalated", "escalated", "cancelled"]
        assert http.get("/v1/asks").json()["asks"] == []
    # Every scrape, whichever worker answers it (a new connection each), counts the
    # messages both workers served: the workers count into one set of files.
    for _ in range(12):
        with server.client() as http:
            scraped = http.get("/metrics").text
        totals = {
            kind: float(value)
            for kind, value in re.findall(
                r'^parkgate_replies_total\{kind="(\w+)",surface="http"\} (\S+)$', scraped, re.M
            )
        }
        assert (totals["asked"], totals["retry"], totals["escalated"], totals["cancelled"]) == (6, 12, 12, 6), scraped
        assert re.search(r"^parkgate_open_asks 0\.0$", scraped, re.M), scraped
