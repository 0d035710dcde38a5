"""Two ``parkgate serve`` processes on one SQLite file answer ``pass`` while a writer holds it.

The test process holds the file's write lock (``BEGIN IMMEDIATE`` and a write, as another
process's transaction would). A message with nothing parked and no ``message_id`` is
answered ``pass`` by both servers meanwhile: it reads without the write lock. A message
that records its ``message_id``, or that lands on a parked ask, waits for the lock,
bounded by ``busy_timeout``, and is answered once the lock is released.
"""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path
from typing import Any

import httpx
from live_server import Server, messages_path

from polling import holds

#: Real time a message must stay unanswered behind the lock (well inside busy_timeout).
HELD = 1.0


def post(server: Server, conversation: str, body: dict[str, Any]) -> httpx.Response:
    with server.client() as http:
        return http.post(messages_path(conversation), json=body)


def in_thread(server: Server, conversation: str, body: dict[str, Any]) -> tuple[threading.Thread, list[Any]]:
    """POST a message on a thread of its own (started); its response or error lands in the list."""
    outcome: list[Any] = []

    def run() -> None:
        try:
            outcome.append(post(server, conversation, body))
        except Exception as error:  # the test asserts on it
            outcome.append(error)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, outcome


def answered(thread: threading.Thread, outcome: list[Any]) -> dict[str, Any]:
    thread.join(60)
    assert len(outcome) == 1 and isinstance(outcome[0], httpx.Response), outcome
    assert outcome[0].status_code == 200, outcome[0].text
    reply: dict[str, Any] = outcome[0].json()
    return reply


def test_two_servers_answer_pass_while_another_process_holds_the_write_lock(
    sqlite_database: Any, start_server: Any
) -> None:
    # Two processes: the point is concurrency across processes on one file.
    first, second = start_server(sqlite_database, in_thread=False), start_server(sqlite_database, in_thread=False)
    with first.client() as http:
        parked = http.post("/v1/asks", json={"conversation_id": "parked", "prompt": "Ship?", "options": ["Yes", "No"]})
    assert parked.status_code == 201, parked.text
    path: Path = sqlite_database.path
    holder = sqlite3.connect(path, isolation_level=None)
    try:
        holder.execute("BEGIN IMMEDIATE")
        holder.execute("UPDATE runs SET updated_at = updated_at")
        # Nothing parked, no message_id: both processes answer while the lock is held.
        for server, conversation in ((first, "c-1"), (second, "c-2"), (second, "c-1"), (first, "c-3")):
            response = post(server, conversation, {"text": "hello"})
            assert response.status_code == 200 and response.json()["kind"] == "pass", response.text
        # A message that records its id, and one that changes a parked ask, wait for the lock.
        recorded = in_thread(first, "c-4", {"text": "hello", "message_id": "m-1"})
        miss = in_thread(second, "parked", {"text": "what?"})
        assert holds(recorded[0], HELD), "a message with a message_id was answered under another writer's lock"
        assert holds(miss[0], 0), "a message to a parked ask was answered under another writer's lock"
        assert holder.execute("SELECT count(*) FROM inbound_messages").fetchone()[0] == 0
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert answered(*recorded)["kind"] == "pass"
    assert answered(*miss)["kind"] == "retry"
    again = post(second, "c-4", {"text": "hello", "message_id": "m-1"})  # a redelivery, to the other process
    assert again.status_code == 200 and again.json()["kind"] == "pass"
    with first.client() as http:
        ask = http.get(f"/v1/asks/{parked.json()['ask_id']}").json()
    assert ask["status"] == "open" and ask["mismatches"] == 1
    with sqlite3.connect(path) as reader:
        assert reader.execute("SELECT count(*) FROM inbound_messages").fetchone()[0] == 1
