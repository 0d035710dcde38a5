"""The pure parts of the connection bounds: settings, peer counts, head size, the long-poll cap."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from parkgate import Gateway
from parkgate.http.app import create_app
from parkgate.http.connections import ENV_HEAD_TIMEOUT, ENV_MAX_PER_PEER, PeerCounts, bounds_from_env
from parkgate.http.guard import MAX_HEAD_BYTES, Incoming
from parkgate.http.longpolls import ENV_MAX_LONG_POLLS, LongPolls, TooManyLongPolls, max_long_polls_from_env
from parkgate.http.server import bound_connections


def test_bounds_come_from_the_environment_and_bad_ones_are_refused() -> None:
    assert bounds_from_env({}).head_timeout == 10.0 and bounds_from_env({}).max_per_peer is None
    bounds = bounds_from_env({ENV_HEAD_TIMEOUT: "2.5", ENV_MAX_PER_PEER: "7"})
    assert (bounds.head_timeout, bounds.max_per_peer) == (2.5, 7)
    for bad in ({ENV_HEAD_TIMEOUT: "0"}, {ENV_HEAD_TIMEOUT: "nan"}, {ENV_MAX_PER_PEER: "0"}, {ENV_MAX_PER_PEER: "x"}):
        with pytest.raises(ValueError):
            bounds_from_env(bad)
    assert max_long_polls_from_env({}) == 400 and max_long_polls_from_env({ENV_MAX_LONG_POLLS: "9"}) == 9
    with pytest.raises(ValueError):
        max_long_polls_from_env({ENV_MAX_LONG_POLLS: "-1"})


def test_serve_defaults_a_peer_to_half_and_long_polls_to_four_fifths(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (ENV_MAX_PER_PEER, ENV_MAX_LONG_POLLS, ENV_HEAD_TIMEOUT):
        monkeypatch.delenv(name, raising=False)
    bound_connections(500)
    assert (os.environ[ENV_MAX_PER_PEER], os.environ[ENV_MAX_LONG_POLLS]) == ("250", "400")
    bound_connections(500, head_timeout=3.0, max_per_peer=500)
    assert (os.environ[ENV_HEAD_TIMEOUT], os.environ[ENV_MAX_PER_PEER]) == ("3.0", "500")


def test_a_peer_is_refused_at_its_cap_until_one_of_its_connections_leaves() -> None:
    peers = PeerCounts()
    assert [peers.join("10.0.0.1", 2) for _ in range(3)] == [True, True, False]
    assert peers.join("10.0.0.2", 2) and peers.held("10.0.0.1") == 2
    peers.leave("10.0.0.1")
    assert peers.join("10.0.0.1", 2) and not peers.join("10.0.0.1", 2)


def test_head_size_counts_the_request_line_and_every_header() -> None:
    scope = {"method": "GET", "raw_path": b"/healthz", "query_string": b"a=1", "headers": [(b"host", b"x")]}
    assert Incoming.of(scope).head_size == len(b"GET /healthz?a=1 HTTP/1.1\r\nhost: x\r\n\r\n")


def test_a_head_over_the_limit_gets_431_before_any_route(tmp_path: Path) -> None:
    with (
        Gateway(f"sqlite:///{tmp_path / 'heads.db'}") as gateway,
        TestClient(create_app(gateway, deliver_callbacks=False)) as http,
    ):
        refused = http.get("/healthz", headers={"X-Padding": "a" * MAX_HEAD_BYTES})
        assert refused.status_code == 431 and refused.json()["error"] == "request_head_too_large"
        assert http.get("/healthz", headers={"X-Padding": "a" * 1000}).status_code == 200


def test_long_polls_past_the_cap_are_refused_until_one_ends() -> None:
    async def scenario() -> None:
        polls = LongPolls(cap=2, reads_at_once=1)
        async with polls.admit() as turns, polls.admit():
            assert turns is polls.turns() and polls.active == 2
            with pytest.raises(TooManyLongPolls) as refused:
                async with polls.admit():
                    pass
            assert refused.value.retry_after == 2
        assert polls.active == 0
        async with polls.admit():
            pass

    asyncio.run(scenario())
