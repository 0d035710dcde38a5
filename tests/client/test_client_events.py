"""The event log through both clients against a live server with named tokens: an ask's
timeline, following the stream (every event once, a tenant only its own, across the
reconnects each stream's end makes), and the export; and the follower's reconnect read
off recorded streams: it resumes after the last id it saw and gives up after its tries."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest

from parkgate import UnknownAsk
from parkgate.client import AsyncClient, Client, Unreachable
from parkgate.client import stream as client_stream
from parkgate.core.events import EventKind, LoggedEvent
from parkgate.errors import InputError


def test_a_timeline_the_stream_and_the_export_hold_the_same_events(guarded: Any, connect: Any, conv: str) -> None:
    operator = connect(guarded, guarded.tokens["everything"])
    agent = connect(guarded, guarded.tokens["tenant"])
    start = max((event.id for event in agent.export_events()), default=0)  # the module's server is shared
    theirs = operator.ask(f"{conv}-theirs", "Rotate the key?", ["Rotate", "Keep"]).ask_id
    mine = agent.ask(conv, "Ship build 7?", ["Ship", "Hold"]).ask_id
    operator.handle(conv, "huh", sender="U1")
    operator.handle(conv, "Ship", sender="U1")

    timeline = agent.events(mine)
    assert all(isinstance(event, LoggedEvent) for event in timeline)
    assert [(e.seq, e.type, e.sender) for e in timeline] == [
        (1, EventKind.PARKED, "tenant"),
        (2, EventKind.TOUCHED, "U1"),
        (3, EventKind.TOUCHED, "U1"),
        (4, EventKind.CLOSED, "U1"),
    ]
    with pytest.raises(UnknownAsk):
        agent.events(theirs)  # another tenant's ask is unknown to this token

    assert {e.id for e in timeline} == {0}  # a timeline's events carry no global id (the stream's do)

    followed = agent.follow_events(after=start, hold=0.5)
    seen = [next(followed) for _ in timeline]  # the other tenant's event before them never comes
    assert [(e.ask_id, e.seq, e.type) for e in seen] == [(mine, e.seq, e.type) for e in timeline]
    assert [e.id for e in seen] == sorted(e.id for e in seen) and seen[0].id > start + 1
    later = agent.ask(f"{conv}-2", "And build 8?", ["Ship", "Hold"]).ask_id  # written while the follower waits
    arrived = next(followed)  # on the stream, or on the next one after its half second
    assert (arrived.ask_id, arrived.type, arrived.id > seen[-1].id) == (later, EventKind.PARKED, True)
    followed.close()

    exported = [event for event in agent.export_events(since=timeline[0].at) if event.id > start]
    assert [(e.id, e.ask_id, e.seq) for e in exported] == [(e.id, e.ask_id, e.seq) for e in [*seen, arrived]]
    assert [event for event in agent.export_events(until=timeline[0].at) if event.id > start] == []
    with pytest.raises(InputError, match="timezone"):
        list(agent.export_events(since=datetime(2026, 1, 1)))


def _event(ident: int, seq: int) -> str:
    at = datetime(2026, 5, 1, tzinfo=UTC).isoformat()
    data = f'{{"id":{ident},"seq":{seq},"at":"{at}","type":"touched","ask_id":"a1","sender":"U1","data":{{}}}}'
    return f"id: {ident}\nevent: touched\ndata: {data}\n\n"


class RecordedStreams:
    """A server whose streams are given in turn (then 503s), recording each request's ``after``."""

    def __init__(self, *bodies: str) -> None:
        self.bodies = list(bodies)
        self.afters: list[str | None] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.afters.append(request.url.params.get("after"))
        if not self.bodies:
            return httpx.Response(503, json={"error": "store_unavailable", "detail": "down"})
        return httpx.Response(200, text=self.bodies.pop(0), headers={"content-type": "text/event-stream"})


STREAMS = (
    "retry: 1\nid: 7\n\n: heartbeat\n\n" + _event(8, 1),  # ends: the client reconnects after 8
    "retry: 1\nid: 8\n\n" + _event(9, 2) + 'data: {"seq"',  # broken off mid-frame
    "retry: 1\nid: 9\n\n" + _event(10, 3),
)


def test_a_follower_resumes_after_the_last_id_it_saw_and_gives_up_after_its_tries(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(client_stream, "RECONNECT_MAX_SECONDS", 0.01)
    server = RecordedStreams(*STREAMS)
    with Client("http://parkgate.test", transport=httpx.MockTransport(server)) as client:
        followed = client.follow_events()
        assert [next(followed).id for _ in range(3)] == [8, 9, 10]
        with pytest.raises(Exception) as stopped:
            next(followed)
    assert server.afters[:3] == [None, "8", "9"]  # each reconnect after the last id seen
    assert len(server.afters) == 3 + client_stream.RECONNECT_TRIES
    assert type(stopped.value).__name__ == "StoreUnavailable"

    async def follow_async() -> list[int]:
        recorded = RecordedStreams(*STREAMS)
        async with AsyncClient("http://parkgate.test", transport=httpx.MockTransport(recorded)) as client:
            followed = client.follow_events(after=7)
            found = [(await anext(followed)).id for _ in range(3)]
            await followed.aclose()
        assert recorded.afters == ["7", "8", "9"]
        return found

    assert asyncio.run(follow_async()) == [8, 9, 10]


def test_a_follower_of_a_server_out_of_reach_raises_unreachable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(client_stream, "RECONNECT_MAX_SECONDS", 0.01)

    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("connection refused", request=request)

    with Client("http://parkgate.test", transport=httpx.MockTransport(refuse)) as client:
        with pytest.raises(Unreachable, match="refused"):
            next(client.follow_events())
        with pytest.raises(InputError, match="after"):
            next(client.follow_events(after=-1))
