"""Faults through a real HTTP server process on loopback.

- kill -9 under load (SQLite and PostgreSQL): after every restart each acknowledged
  message is in the database exactly once with the reply the client saw, no ask is
  half-written, parked asks are still parked, and re-sending the unacknowledged
  messages (same message_id) completes a history a sequential replay explains;
- PostgreSQL stopped / restarted under the server: clear 503 JSON while it is away,
  recovery without restarting the server;
- SQLite locked by another writer: 503, never a 500, never a lost message;
- a conversation's messages never answer another conversation's ask;
- the bearer token never appears in the server's output;
- oversize bodies are rejected before the server has read them.
"""

from __future__ import annotations

import contextlib
import json
import random
import secrets
import socket
import sqlite3
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import httpx
import pytest

from parkgate import Gateway
from parkgate.core.kinds import AskStatus, ReplyKind
from parkgate.core.model import Ask
from parkgate.http.settings import ENV_PG_TIMEOUT
from polling import until

from ._server import Server, messages_path, stream_in_threads
from ._support import (
    Message,
    Sent,
    StoreSpec,
    check_against_replay,
    interleaved_plan,
    wait_for_rows,
)
from .conftest import FaultsCluster

KILLS_PER_STORE = 10  # 20 SIGKILLs in all: 10 on SQLite, 10 on PostgreSQL
CONVERSATIONS_PER_ROUND = 10  # x 8 messages = 80 per round, from 3 clients
CLOSED = {"answered", "cancelled", "expired"}


def park_over_http(http: httpx.Client, conversation: str, n: int) -> str:
    """Park a choice ask (even n) or a text ask (odd n) through ``POST /v1/asks``."""
    if n % 2 == 0:
        body: dict[str, Any] = {
            "conversation_id": conversation,
            "kind": "choice",
            "prompt": f"Which diagram, {n}?",
            "options": ["Sequence", "Class", "Stop"],
        }
    else:
        body = {"conversation_id": conversation, "kind": "text", "prompt": f"Describe it, {n}."}
    response = http.post("/v1/asks", json=body)
    assert response.status_code == 201, response.text
    data = response.json()
    assert data["kind"] == "asked" and data["parked"] is True
    return str(data["ask_id"])


def assert_no_half_written(spec: StoreSpec) -> None:
    """Every row is whole: an ask's status, outcome, answer and stamps agree, and so does its run."""
    asks = spec.query(
        "SELECT id, conversation_id, run_id, kind, prompt, options, status, outcome, answer, option_index, "
        "closed_at, mismatches FROM asks"
    )
    runs = {row[0]: row for row in spec.query("SELECT id, status, pending_ask_id FROM runs")}
    open_per_conversation: Counter[str] = Counter()
    for (
        ask_id,
        conversation,
        run_id,
        kind,
        prompt,
        options,
        status,
        outcome,
        answer,
        index,
        closed_at,
        misses,
    ) in asks:
        labels = json.loads(options)
        assert prompt and isinstance(labels, list) and (bool(labels) == (kind == "choice")), ask_id
        assert misses >= 0 and run_id in runs, ask_id
        if status == "open":
            open_per_conversation[conversation] += 1
            assert (outcome, answer, index, closed_at) == (None, None, None, None), ask_id
            assert runs[run_id][1:] == ("running", ask_id), f"{ask_id}: its run does not point at it"
        else:
            assert status in CLOSED and outcome and closed_at is not None, ask_id
        if status == "answered":
            assert answer is not None, ask_id
            if kind == "choice":
                assert labels[index - 1] == answer, ask_id
        if status == "cancelled" and outcome == "cancelled":
            assert runs[run_id][1] == "complete", ask_id
    assert all(count == 1 for count in open_per_conversation.values())
    for run_id, status, pending in runs.values():
        if pending is not None:
            assert status == "running" and any(a[0] == pending and a[6] == "open" for a in asks), run_id
    for (raw,) in spec.query("SELECT reply FROM inbound_messages"):
        assert ReplyKind(json.loads(raw)["kind"]), raw


def _read_raw(spec: StoreSpec, reader: Gateway) -> Any:
    """Read an ask without the reader's clock deciding anything (the server owns time)."""

    def read(ask_id: str) -> Ask:
        with reader.store.transaction() as tx:
            found = tx.ask(ask_id)
        assert found is not None
        return found

    return read


@pytest.fixture
def http_spec(spec: StoreSpec) -> StoreSpec:
    """A database on each store, migrated and instrumented for commit order before a server opens it."""
    spec.store().close()
    spec.instrument_commit_order()
    return spec


def test_kill_9_under_load_loses_nothing_acknowledged(http_spec: StoreSpec, tmp_path: Path) -> None:
    spec = http_spec
    token = secrets.token_urlsafe(24)
    server = Server(spec.url, tmp_path / "server.log", token=token, schema=spec.schema)
    reader = Gateway(store=spec.store())
    read = _read_raw(spec, reader)
    rng = random.Random(9 if spec.engine == "sqlite" else 10)
    interrupted = 0
    try:
        server.start()
        for round_no in range(KILLS_PER_STORE):
            with server.client() as http:
                ids = {
                    f"k{round_no}-{n:02d}": park_over_http(http, f"k{round_no}-{n:02d}", n)
                    for n in range(CONVERSATIONS_PER_ROUND)
                }
            initial = {conversation: read(ask_id) for conversation, ask_id in ids.items()}
            plans = interleaved_plan(initial, 3, seed=round_no)
            # Kill at a random point of the stream's progress: once a random number of its
            # messages has committed, plus a random few milliseconds (mid-request, mid-commit).
            committed_before = spec.count("inbound_messages")
            threshold = committed_before + rng.randrange(1, 8 * CONVERSATIONS_PER_ROUND - 10)
            extra = rng.uniform(0.0, 0.02)

            def kill_at_random_point(threshold: int = threshold, extra: float = extra) -> None:
                wait_for_rows(spec, "inbound_messages", threshold)
                time.sleep(extra)  # real time: a random moment mid-request is what the kill aims at
                server.kill()

            killer = threading.Thread(target=kill_at_random_point, daemon=True)
            killer.start()
            first = stream_in_threads(server, plans, stop_on_failure=True, pace=0.004)
            killer.join(120)
            assert server.proc is not None and server.proc.poll() is not None, "the server was not killed"
            interrupted += any(result.pending or result.unsent for result in first)

            server.start()
            # Right after the restart, before anything is re-sent.
            assert_no_half_written(spec)
            acked = [result.acked for result in first]
            check_against_replay(spec, reader, initial, plans, acked, real_clock=True, read=read, partial=True)
            with server.client() as http:
                for conversation, ask in initial.items():
                    shown = http.get(f"/v1/asks/{ask.id}").json()
                    assert shown["status"] == read(ask.id).status.value, conversation

            # The clients re-send what was not acknowledged (same message_id), then the rest.
            rest: list[list[Message]] = [[m for m, _ in r.pending] + r.unsent for r in first]
            second = stream_in_threads(server, rest, stop_on_failure=False, pace=0.0)
            sent: list[list[Sent]] = []
            for before, after in zip(first, second, strict=True):
                started = {m.message_id: t for m, t in before.pending}
                for item in after.acked:
                    item.started = min(item.started, started.get(item.message_id, item.started))
                sent.append(before.acked + after.acked)
            check_against_replay(spec, reader, initial, plans, sent, real_clock=True, read=read)
            assert_no_half_written(spec)
        assert interrupted >= KILLS_PER_STORE - 2, "the kills landed after the streams had finished"
    finally:
        server.stop()
        reader.close()
    log = server.log_text()
    assert server.starts == KILLS_PER_STORE + 1
    assert token not in log, "the bearer token appeared in the server's output"


def _wait_for_status(http: httpx.Client, path: str, body: dict[str, Any], status: int, seconds: float) -> Any:
    def answered() -> Any:
        response = http.post(path, json=body)
        assert response.status_code in (200, 503, status), f"{response.status_code}: {response.text}"
        return response if response.status_code == status else None

    return until(answered, seconds, f"a {status} from {path}", interval=0.2)


def test_postgres_away_gives_503_json_and_the_server_recovers_by_itself(
    faults_spec: StoreSpec, faults_lock: FaultsCluster, tmp_path: Path
) -> None:
    spec = faults_spec
    spec.store().close()
    spec.instrument_commit_order()
    token = secrets.token_urlsafe(24)
    # A request waits PARKGATE_PG_TIMEOUT for a connection before its 503: 1 s, not the 3 s default.
    pg_timeout = {ENV_PG_TIMEOUT: "1"}
    server = Server(spec.url, tmp_path / "server.log", token=token, schema=spec.schema, extra_env=pg_timeout)
    reader = Gateway(store=spec.store(timeout=2))
    read = _read_raw(spec, reader)
    try:
        server.start()
        with server.client(timeout=60) as http:
            ask_id = park_over_http(http, "pg-away", 0)
            body = {"text": "nope", "message_id": "away-0"}
            assert http.post(messages_path("pg-away"), json=body).json()["kind"] == "retry"
            faults_lock.ctl("stop")
            try:
                down = http.post(messages_path("pg-away"), json={"text": "1", "message_id": "away-1"})
                assert down.status_code == 503, down.text
                error = down.json()
                assert error["error"] and error["detail"] and "Traceback" not in down.text
            finally:
                faults_lock.ctl("start")
            faults_lock.wait_ready()
            # Same server process: it reconnects by itself; the same message_id applies once.
            server_pid = server.proc.pid if server.proc else None
            selected = _wait_for_status(http, messages_path("pg-away"), {"text": "1", "message_id": "away-1"}, 200, 60)
            assert selected.json()["kind"] == "selected"
            again = http.post(messages_path("pg-away"), json={"text": "2", "message_id": "away-1"})
            assert again.json() == selected.json()
            assert server.proc is not None and server.proc.pid == server_pid and server.proc.poll() is None
            shown = http.get(f"/v1/asks/{ask_id}").json()
            assert (shown["status"], shown["answer"], shown["mismatches"]) == ("answered", "Sequence", 0)

            # A restart in the middle of a stream: every answer is 200 or 503, never a 500;
            # clients re-send on 503 and the history is explained by one sequential replay.
            ids = {f"pgs-{n:02d}": park_over_http(http, f"pgs-{n:02d}", n) for n in range(12)}
        initial = {conversation: read(a) for conversation, a in ids.items()}
        plans = interleaved_plan(initial, 2, seed=3)  # 2 x 48 messages, paced to outlast the restart
        window: list[float] = []

        def restart() -> None:
            wait_for_rows(spec, "inbound_messages", 2 + 6)  # 2 messages above, then 6 of the stream
            window.append(time.monotonic())
            faults_lock.ctl("restart")
            window.append(time.monotonic())

        restarter = threading.Thread(target=restart, daemon=True)
        restarter.start()
        results = stream_in_threads(server, plans, stop_on_failure=False, pace=0.1)
        restarter.join(120)
        assert len(window) == 2
        finishes = [s.finished for r in results for s in r.acked]
        assert min(finishes) < window[0] and max(finishes) > window[1], "the stream did not span the restart"
        check_against_replay(spec, reader, initial, plans, [r.acked for r in results], real_clock=True, read=read)
        assert_no_half_written(spec)
        assert read(ask_id).status is AskStatus.ANSWERED
    finally:
        server.stop()
        reader.close()
    assert token not in server.log_text()


def test_a_locked_sqlite_file_is_a_503_and_no_message_is_lost(sqlite_spec: StoreSpec, tmp_path: Path) -> None:
    sqlite_spec.store().close()
    server = Server(sqlite_spec.url, tmp_path / "server.log", token=None, schema=sqlite_spec.schema)
    try:
        server.start()
        with server.client(timeout=120) as http:
            ask_id = park_over_http(http, "locked", 0)
            from parkgate.store.sqlite_file import path_from_url

            holder = sqlite3.connect(path_from_url(sqlite_spec.url), isolation_level=None)
            holder.execute("BEGIN IMMEDIATE")
            holder.execute("UPDATE runs SET updated_at = updated_at")
            try:
                locked = http.post(messages_path("locked"), json={"text": "1", "message_id": "lk-1"})
            finally:
                holder.execute("ROLLBACK")
                holder.close()
            assert locked.status_code == 503, locked.text
            assert locked.json()["error"] and "locked" in json.dumps(locked.json())
            assert sqlite_spec.count("inbound_messages") == 0
            reply = http.post(messages_path("locked"), json={"text": "1", "message_id": "lk-1"})
            assert reply.status_code == 200 and reply.json()["kind"] == "selected"
            assert http.get(f"/v1/asks/{ask_id}").json()["status"] == "answered"
            assert sqlite_spec.count("inbound_messages") == 1
    finally:
        server.stop()


# -- isolation, secrets and size limits (one server with auth on) ---------------------


@pytest.fixture
def served(sqlite_spec: StoreSpec, tmp_path: Path) -> Any:
    """A server on SQLite with a bearer token; yields (server, token)."""
    token = secrets.token_urlsafe(24)
    server = Server(sqlite_spec.url, tmp_path / "server.log", token=token, schema=sqlite_spec.schema)
    server.start()
    try:
        yield server, token
    finally:
        server.stop()


def test_a_conversations_messages_never_answer_another_conversations_ask(served: Any) -> None:
    server, _ = served
    with server.client() as http:
        a = park_over_http(http, "conv-a", 0)
        b = park_over_http(http, "conv-b", 2)
        before = http.get(f"/v1/asks/{a}").json()
        attempts = [
            # ids in the body that name the other conversation / its ask: the path decides
            {"text": "1", "message_id": "x-1", "conversation_id": "conv-a", "ask_id": a},
            {"text": "2", "message_id": "x-2", "conversation": "conv-a"},
        ]
        for body in attempts:
            response = http.post(messages_path("conv-b"), json=body)
            if response.status_code == 200:
                assert response.json()["ask_id"] in (b, None)
            else:
                assert response.status_code == 422, response.text
        # Paths that try to reach conv-a from somewhere else.
        for conversation in ("conv-b/../conv-a", "conv-a/", " conv-a", "conv-a ", "CONV-A", "conv-a\u200b", "%2e%2e"):
            response = http.post(messages_path(conversation), json={"text": "1"})
            assert response.status_code in (200, 404, 422), response.text
            if response.status_code == 200:
                assert response.json()["kind"] == "pass" and response.json()["ask_id"] is None
        # A message_id already used in conv-a, sent to conv-b, is conv-b's own message.
        first = http.post(messages_path("conv-a"), json={"text": "nope", "message_id": "shared"}).json()
        other = http.post(messages_path("conv-b"), json={"text": "also nope", "message_id": "shared"}).json()
        assert first["ask_id"] == a and other["ask_id"] in (b, None) and other["ask_id"] != a
        after = http.get(f"/v1/asks/{a}").json()
        assert after["status"] == "open" and after["mismatches"] == before["mismatches"] + 1


def test_the_token_never_appears_in_logs_or_answers(served: Any) -> None:
    server, token = served
    wrong = secrets.token_urlsafe(24)
    bodies: list[str] = []
    with httpx.Client(base_url=server.url, timeout=30) as http:
        good = {"Authorization": f"Bearer {token}"}
        for headers in (
            {},
            {"Authorization": f"Bearer {wrong}"},
            {"Authorization": token},
            {"Authorization": f"Basic {token}"},
        ):
            response = http.get("/v1/asks?status=open", headers=headers)
            assert response.status_code == 401, response.text
            assert response.json()["error"]
            bodies.append(response.text)
        with server.client() as authed:
            ask_id = park_over_http(authed, "tok", 0)
        for path, kwargs in (
            (messages_path("tok"), {"json": {"text": "nope"}}),
            (messages_path("tok"), {"content": b"{not json"}),
            (messages_path("tok"), {"json": {"text": 5}}),
            ("/v1/asks", {"json": {"conversation_id": "tok", "kind": "choice", "prompt": "x", "options": []}}),
        ):
            bodies.append(http.post(path, headers=good, **kwargs).text)
        bodies.append(http.get(f"/v1/asks/{ask_id}", headers=good).text)
        bodies.append(http.get("/v1/asks/nope", headers=good).text)
        bodies.append(http.get("/metrics").text)
    server.stop()
    log = server.log_text()
    assert log, "the server wrote nothing at all: the log check would prove nothing"
    assert token not in log and wrong not in log
    assert not any(token in body or wrong in body for body in bodies)


def _raw_request(port: int, head: bytes, body_chunks: Any, timeout: float = 15.0) -> tuple[bytes, int]:
    """Send ``head`` then body chunks until the server answers; (answer, body bytes sent)."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    sent = 0
    answer = b""
    try:
        sock.sendall(head)
        sock.settimeout(0.05)
        for chunk in body_chunks:
            with contextlib.suppress(TimeoutError, BlockingIOError):
                answer += sock.recv(65536)
            if answer:
                break
            try:
                sock.settimeout(2)
                sock.sendall(chunk)
                sent += len(chunk)
            except (TimeoutError, BrokenPipeError, ConnectionResetError):
                break
            finally:
                sock.settimeout(0.05)
        sock.settimeout(timeout)
        try:
            while b"\r\n\r\n" not in answer:
                data = sock.recv(65536)
                if not data:
                    break
                answer += data
        except (TimeoutError, ConnectionResetError):
            pass
    finally:
        sock.close()
    return answer, sent


@pytest.mark.parametrize("framing", ["content-length", "chunked"])
def test_oversize_bodies_are_rejected_before_they_are_read(served: Any, framing: str) -> None:
    server, token = served
    size = 10 * 1024 * 1024
    path = messages_path("big").encode()
    auth = f"Authorization: Bearer {token}\r\n".encode()
    if framing == "content-length":
        head = b"POST " + path + b" HTTP/1.1\r\nHost: 127.0.0.1\r\n" + auth
        head += b"Content-Type: application/json\r\nContent-Length: " + str(size).encode() + b"\r\n\r\n"
        chunks = (b'{"text": "' + b"x" * 65_526 for _ in range(size // 65_536))
    else:
        head = b"POST " + path + b" HTTP/1.1\r\nHost: 127.0.0.1\r\n" + auth
        head += b"Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
        chunks = (b"10000\r\n" + b"x" * 65_536 + b"\r\n" for _ in range(size // 65_536))
    answer, sent = _raw_request(server.port, head, chunks)
    assert answer.startswith(b"HTTP/1.1 413"), answer[:200]
    assert sent < size // 2, f"the server read {sent} bytes of a {size}-byte body before refusing it"
    # ... and it is still serving.
    with server.client() as http:
        assert http.post(messages_path("big"), json={"text": "hello"}).json()["kind"] == "pass"


BATCH_CLIENTS = 8
BATCH_PLAN = 40  # messages a client, each a pass with its own message_id
BATCH_KILLS = 3


def test_kill_9_during_batched_passes_loses_no_acknowledged_message(tmp_path: Path) -> None:
    # SQLite stores the replies of passes with a message_id (in conversations the server
    # remembers free) in batches, one commit for many: a kill mid-stream may cut a batch,
    # never lose one that was answered. The clients then send again what was not answered.

    spec = StoreSpec("sqlite", f"sqlite:///{tmp_path / 'batched.db'}")
    spec.store().close()
    server = Server(spec.url, tmp_path / "server.log")
    conversations = [f"free-{n:02d}" for n in range(16)]
    rng = random.Random(41)
    acked: dict[str, dict[str, Any]] = {}
    try:
        for round_no in range(BATCH_KILLS):
            server.start()
            with server.client() as http:
                for conversation in conversations:  # the server now remembers each free
                    assert http.post(messages_path(conversation), json={"text": "hi"}).json()["kind"] == "pass"
            plans = [
                [Message(rng.choice(conversations), "hello", f"b{round_no}-{c}-{n}") for n in range(BATCH_PLAN)]
                for c in range(BATCH_CLIENTS)
            ]
            threshold = spec.count("inbound_messages") + rng.randrange(20, BATCH_CLIENTS * BATCH_PLAN // 2)

            def kill_mid_stream(threshold: int = threshold) -> None:
                wait_for_rows(spec, "inbound_messages", threshold)
                server.kill()

            killer = threading.Thread(target=kill_mid_stream, daemon=True)
            killer.start()
            first = stream_in_threads(server, plans, stop_on_failure=True, pace=0.0)
            killer.join(120)
            assert any(result.pending or result.unsent for result in first), "the kill landed after the stream"
            acked.update({sent.message_id: sent.reply for result in first for sent in result.acked})
            stored = dict(spec.query("SELECT message_id, reply FROM inbound_messages"))
            lost = sorted(mid for mid in acked if mid not in stored)
            assert not lost, f"acknowledged and not stored: {lost[:5]}"
            server.start()
            rest = [[m for m, _ in result.pending] + result.unsent for result in first]
            second = stream_in_threads(server, rest, stop_on_failure=False, pace=0.0)
            acked.update({sent.message_id: sent.reply for result in second for sent in result.acked})
            server.stop()
            stored = dict(spec.query("SELECT message_id, reply FROM inbound_messages"))
            assert len(acked) == (round_no + 1) * BATCH_CLIENTS * BATCH_PLAN
            assert all(json.loads(stored[mid])["kind"] == reply["kind"] == "pass" for mid, reply in acked.items())
    finally:
        server.stop()
