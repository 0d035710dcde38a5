"""``GET /v1/events/stream`` and ``GET /v1/export?what=events`` through a live server with named
tokens: an event written while a client is connected arrives on its stream; a stream
resumed with ``Last-Event-ID`` (or ``?after=``) gets only the later events; a tenant's
stream and export never hold another tenant's events; a stream ends on its own (its
``wait``), on HEAD at once, and when the server process is told to stop. A quiet
stream's heartbeats and end are timed on an event loop whose clock jumps to its next
timer (:class:`VirtualTimeLoop`): the real 15 s heartbeat and a 60 s wait, no real time."""

from __future__ import annotations

import asyncio
import csv
import io
import json
import secrets
import selectors
import time
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import httpx
import pytest
from live_server import Server, messages_path

from parkgate.core.events import STREAM_HEARTBEAT_SECONDS
from parkgate.http import event_stream
from parkgate.http.longpolls import LongPolls
from parkgate.http.stopping import Stopping
from parkgate.http.tokens import digest

#: name -> scopes of the tokens these servers know.
SCOPES = {"agent": ["park", "read"], "other-agent": ["park"], "chat": ["answer"], "operator": ["read", "operate"]}
#: A stream's reads wait at most this long for the next line.
READ_TIMEOUT = 10.0


@pytest.fixture
def tokens(tmp_path: Path) -> dict[str, str]:
    """Named tokens, their hashes in a tokens file at ``tokens["file"]``."""
    found = {name: secrets.token_urlsafe(18) for name in SCOPES}
    lines = [
        f'[[token]]\nname = "{name}"\nsha256 = "{digest(found[name])}"\nscopes = {json.dumps(scopes)}\n'
        for name, scopes in SCOPES.items()
    ]
    path = tmp_path / "tokens.toml"
    path.write_text("\n".join(lines), encoding="utf-8")
    return {**found, "file": str(path)}


@pytest.fixture
def server(start_server: Any, sqlite_database: Any, tokens: dict[str, str]) -> Server:
    started: Server = start_server(sqlite_database, extra_env={"PARKGATE_TOKENS_FILE": tokens["file"]})
    return started


def park(server: Server, token: str, conversation: str) -> str:
    with server.client(token) as client:
        response = client.post(
            "/v1/asks", json={"conversation_id": conversation, "prompt": "Ship?", "options": ["Yes"]}
        )
        assert response.status_code == 201, response.text
        return str(response.json()["ask_id"])


def answer(server: Server, token: str, conversation: str, text: str) -> None:
    with server.client(token) as client:
        response = client.post(messages_path(conversation), json={"text": text, "sender": "U1"})
        assert response.status_code == 200, response.text


class Frames:
    """The frames of one open stream, read as they come."""

    def __init__(self, response: httpx.Response) -> None:
        self.response = response
        self._lines = response.iter_lines()

    def next(self) -> dict[str, str]:
        """The next frame's fields (a comment as ``{"comment": ...}``)."""
        fields: dict[str, str] = {}
        for line in self._lines:
            if not line:
                if fields:
                    return fields
                continue
            if line.startswith(":"):
                return {"comment": line[1:].strip()}
            name, _, value = line.partition(":")
            fields[name] = value.removeprefix(" ")
        raise AssertionError(f"the stream ended; fields so far: {fields}")

    def event(self) -> dict[str, Any]:
        """The next event's JSON (heartbeats skipped), checked against its frame's id and type."""
        while True:
            fields = self.next()
            if "data" in fields:
                body: dict[str, Any] = json.loads(fields["data"])
                assert (fields["id"], fields["event"]) == (str(body["id"]), body["type"])
                return body


@pytest.fixture
def open_stream(server: Server) -> Iterator[Any]:
    """``open_stream(token, **params, headers=...)``: an open stream's :class:`Frames`, closed at the end."""
    opened: list[Any] = []

    def start(token: str, headers: dict[str, str] | None = None, **params: Any) -> Frames:
        client = server.client(token, timeout=READ_TIMEOUT)
        manager = client.stream("GET", "/v1/events/stream", params=params, headers=headers or {})
        response = manager.__enter__()
        opened.append((client, manager))
        assert response.status_code == 200, response.read()
        assert response.headers["content-type"].startswith("text/event-stream")
        return Frames(response)

    yield start
    for client, manager in opened:
        manager.__exit__(None, None, None)
        client.close()


def test_an_event_written_while_connected_arrives_on_the_stream(
    server: Server, tokens: dict[str, str], open_stream: Any
) -> None:
    park(server, tokens["agent"], "before")
    frames = open_stream(tokens["operator"])
    opening = frames.next()
    assert opening["retry"] == str(event_stream.RECONNECT_MILLISECONDS)
    start = int(opening["id"])
    assert start >= 1  # it starts after the events written before it opened

    ask_id = park(server, tokens["agent"], "during")
    parked = frames.event()
    assert (parked["type"], parked["ask_id"], parked["seq"], parked["sender"]) == ("parked", ask_id, 1, "agent")
    assert parked["id"] > start
    assert set(parked) == {"id", "seq", "at", "type", "ask_id", "sender", "data"}

    answer(server, tokens["chat"], "during", "Yes")
    assert [(e["type"], e["seq"]) for e in (frames.event(), frames.event())] == [("touched", 2), ("closed", 3)]


def test_a_resumed_stream_gets_only_the_events_after_the_last_one_seen(
    server: Server, tokens: dict[str, str], open_stream: Any
) -> None:
    ask_id = park(server, tokens["agent"], "resume")
    answer(server, tokens["chat"], "resume", "Yes")
    with server.client(tokens["operator"]) as operator:
        timeline = operator.get(f"/v1/asks/{ask_id}/events").json()["events"]
    first = open_stream(tokens["operator"], after=0)
    first.next()
    seen = [first.event() for _ in timeline]
    assert [e["seq"] for e in seen] == [1, 2, 3]

    resumed = open_stream(tokens["operator"], headers={"Last-Event-ID": str(seen[0]["id"])})
    assert resumed.next()["id"] == str(seen[0]["id"])
    assert [resumed.event()["id"], resumed.event()["id"]] == [seen[1]["id"], seen[2]["id"]]
    by_query = open_stream(tokens["operator"], after=seen[1]["id"])
    by_query.next()
    assert by_query.event() == seen[2]
    # The header wins over the query: what a reconnecting EventSource sends is the later id.
    both = open_stream(tokens["operator"], after=0, headers={"Last-Event-ID": str(seen[1]["id"])})
    both.next()
    assert both.event() == seen[2]


def test_a_tenant_never_gets_another_tenants_events(server: Server, tokens: dict[str, str], open_stream: Any) -> None:
    mine = open_stream(tokens["agent"])
    everyone = open_stream(tokens["operator"])
    mine.next()
    everyone.next()
    theirs = park(server, tokens["other-agent"], "theirs")
    answer(server, tokens["chat"], "theirs", "Yes")
    ours = park(server, tokens["agent"], "ours")

    event = mine.event()
    assert (event["ask_id"], event["type"]) == (ours, "parked")  # their three events were never sent
    assert [everyone.event()["ask_id"] for _ in range(4)] == [theirs, theirs, theirs, ours]

    with server.client(tokens["agent"]) as agent:
        exported = agent.get("/v1/export", params={"what": "events", "format": "jsonl"})
    assert {json.loads(line)["ask_id"] for line in exported.text.splitlines()} == {ours}


class VirtualTimeLoop(asyncio.SelectorEventLoop):
    """An event loop whose clock moves only when it would otherwise wait: it jumps to its
    next timer at once, so a 15 s heartbeat and a 60 s ``wait`` pass without real time."""

    def __init__(self) -> None:
        selector = _JumpingSelector()
        super().__init__(selector)
        selector.loop = self
        self.now = 0.0

    def time(self) -> float:
        return self.now


class _JumpingSelector(selectors.DefaultSelector):
    """A selector that never blocks: with nothing ready it moves its loop's clock on by the
    timeout (to the next timer) instead of waiting for it. A loop that spins (thousands of
    turns) or would wait for nothing fails the test rather than hang it."""

    loop: VirtualTimeLoop
    turns = 0

    def select(self, timeout: float | None = None) -> list[tuple[selectors.SelectorKey, int]]:
        self.turns += 1
        assert self.turns < 10_000, f"the loop spins at {self.loop.now} s"
        ready = super().select(0)
        if not ready:
            assert timeout is not None, "the loop would wait for nothing, forever"
            self.loop.now += timeout
        return ready


class QuietLog:
    """The gateway as a stream and its tail read it: a log whose last event stays ``last``."""

    def __init__(self, last: int) -> None:
        self.last = last
        self.sync = SimpleNamespace(signal=SimpleNamespace(listen=lambda heard: lambda: None))

    async def last_event_id(self) -> int:
        return self.last

    async def events_after(self, after: int, limit: int, owner: str | None = None) -> list[Any]:
        assert after == self.last
        return []


def test_a_quiet_stream_writes_a_heartbeat_every_interval_and_ends_after_its_wait() -> None:
    loop = VirtualTimeLoop()

    async def written() -> list[tuple[float, bytes]]:
        log: Any = QuietLog(7)
        stream = event_stream.follow(
            log, event_stream.EventTail(log), LongPolls(), Stopping(), start=7, owner=None, hold=60
        )
        chunks = [(loop.time(), chunk) async for chunk in stream]
        return [*chunks, (loop.time(), b"(ended)")]

    try:
        chunks = loop.run_until_complete(written())
    finally:
        loop.close()
    beat = STREAM_HEARTBEAT_SECONDS
    assert beat < 60 / 2  # so the stream holds more than one
    expected = [(0.0, event_stream.opening(7))]
    expected += [(n * beat, event_stream.HEARTBEAT) for n in range(1, int(60 / beat) + 1) if n * beat < 60]
    assert chunks == [*expected, (60.0, b"(ended)")]


def test_a_stream_ends_after_its_wait(server: Server, tokens: dict[str, str], open_stream: Any) -> None:
    frames = open_stream(tokens["operator"], wait=0.1)
    assert frames.next() == {"retry": str(event_stream.RECONNECT_MILLISECONDS), "id": "0"}
    with pytest.raises(AssertionError, match="the stream ended"):
        frames.next()


def test_head_answers_at_once_and_a_bad_last_event_id_is_refused(server: Server, tokens: dict[str, str]) -> None:
    with server.client(tokens["operator"]) as client:
        head = client.head("/v1/events/stream")
        assert (head.status_code, head.headers["content-type"].split(";")[0], head.content) == (
            200,
            "text/event-stream",
            b"",
        )
        refused = client.get("/v1/events/stream", headers={"Last-Event-ID": "yesterday"})
        assert (refused.status_code, refused.json()["error"]) == (422, "invalid_input")
        assert client.get("/v1/events/stream", params={"wait": 61}).status_code == 422
        unauthorized = httpx.get(server.url + "/v1/events/stream")
        assert unauthorized.status_code == 401


def test_the_export_holds_a_windows_events_as_csv_or_json_lines(server: Server, tokens: dict[str, str]) -> None:
    ask_id = park(server, tokens["agent"], "export")
    answer(server, tokens["chat"], "export", "Yes")
    with server.client(tokens["operator"]) as operator:
        lines = operator.get("/v1/export", params={"what": "events"}).text.splitlines()
        table = operator.get("/v1/export", params={"what": "events", "format": "csv"})
        timeline = operator.get(f"/v1/asks/{ask_id}/events").json()["events"]
        late = operator.get("/v1/export", params={"what": "events", "since": "2999-01-01T00:00:00Z", "format": "csv"})
        naive = operator.get("/v1/export", params={"what": "events", "since": "2026-01-01T00:00:00"})
    events = [json.loads(line) for line in lines]
    assert [{k: v for k, v in e.items() if k != "id"} for e in events] == timeline
    assert [e["id"] for e in events] == sorted(e["id"] for e in events)
    assert table.headers["content-type"].startswith("text/csv")
    assert 'attachment; filename="parkgate-events-' in table.headers["content-disposition"]
    rows = list(csv.DictReader(io.StringIO(table.text)))
    assert list(rows[0]) == ["id", "seq", "at", "type", "ask_id", "sender", "data"]
    assert [(int(r["id"]), r["type"], json.loads(r["data"])) for r in rows] == [
        (e["id"], e["type"], e["data"]) for e in events
    ]
    assert late.text.splitlines() == ["id,seq,at,type,ask_id,sender,data"]
    assert (naive.status_code, naive.json()["error"]) == (422, "invalid_input")


def test_a_stopping_server_ends_its_streams_and_exits(
    start_server: Any, sqlite_database: Any, tokens: dict[str, str]
) -> None:
    process = start_server(sqlite_database, in_thread=False, extra_env={"PARKGATE_TOKENS_FILE": tokens["file"]})
    with (
        process.client(tokens["operator"], timeout=READ_TIMEOUT) as client,
        client.stream("GET", "/v1/events/stream") as response,
    ):
        frames = Frames(response)
        frames.next()
        began = time.monotonic()
        process.proc.terminate()  # SIGTERM: uvicorn's graceful shutdown
        with pytest.raises((AssertionError, httpx.TransportError)):
            frames.next()  # the stream ends (not after its 60 s)
        process.proc.wait(20)
    assert time.monotonic() - began < 10  # a bound on a hang: the stream's own end is 60 s away
    assert process.proc.returncode in (0, -15)  # uvicorn hands the signal on once it has shut down
    assert "Application shutdown complete" in process.log_text()  # gracefully: the lifespan ended
