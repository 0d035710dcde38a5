"""Limits of ``parkgate serve`` under load: request heads, connections, and 20,000 open asks.

Three 150 MB headers are refused after at most a few
megabytes are sent (the server stops reading at 64 KiB), the server's memory stays
flat (``/proc``) and it keeps answering ``/healthz``. Connections past the bound get
503. With 20,000 open asks, ``GET /v1/asks`` answers a page of 100, every page walks
the whole list exactly once in order, and the console shows one page and stays usable.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from attack import snapshot
from live_server import messages_path
from playwright.sync_api import expect

from parkgate import Gateway, ManualClock

HEADER_BYTES = 150 * 1024 * 1024
CHUNK = 64 * 1024
OPEN_ASKS = 20_000


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError(f"no VmRSS for {pid}")


def send_huge_header(port: int, result: dict[str, Any]) -> None:
    """Send a request whose one header is 150 MB until the server answers or hangs up."""
    sent = 0
    answer = b""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(b"GET /v1/asks HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Padding: ")
        chunk = b"a" * CHUNK
        try:
            while sent < HEADER_BYTES:
                sock.sendall(chunk)
                sent += CHUNK
        except OSError:  # the server closed the connection: the rest is never sent
            pass
        with contextlib.suppress(OSError):
            sock.settimeout(5)
            answer = sock.recv(4096)
    result["sent"] = sent
    result["answer"] = answer


def test_huge_headers_are_refused_early_and_memory_stays_flat(launch: Any, sqlite_database: Any) -> None:
    server = launch(sqlite_database)
    assert server.proc is not None
    with server.client() as http:
        http.post("/v1/asks", json={"conversation_id": "bystander", "prompt": "Q?", "options": ["A"]})
    before = snapshot(sqlite_database)
    rss_before = rss_kib(server.proc.pid)
    results: list[dict[str, Any]] = [{} for _ in range(3)]
    threads = [threading.Thread(target=send_huge_header, args=(server.port, result)) for result in results]
    for thread in threads:
        thread.start()
    with server.client() as http:  # meanwhile the server answers
        assert http.get("/healthz").status_code == 200
    for thread in threads:
        thread.join(120)
    for result in results:
        # Refused (a 400, and the connection closed) after a small part was sent.
        assert result["sent"] < 32 * 1024 * 1024, result["sent"]
        assert result["answer"] in (b"",) or result["answer"].startswith(b"HTTP/1.1 4"), result["answer"][:100]
    grown = rss_kib(server.proc.pid) - rss_before
    assert grown < 40 * 1024, f"the server grew by {grown} KiB"
    with server.client() as http:
        assert http.get("/healthz").status_code == 200
    assert snapshot(sqlite_database) == before


def test_connections_past_the_bound_get_503(launch: Any, sqlite_database: Any) -> None:
    server = launch(sqlite_database, extra_args=["--max-connections", "8", "--max-connections-per-peer", "8"])
    idle = [socket.create_connection(("127.0.0.1", server.port), timeout=10) for _ in range(8)]
    try:
        with httpx.Client(base_url=server.url, timeout=30) as http:
            assert http.get("/healthz").status_code == 503
    finally:
        for sock in idle:
            sock.close()
    with httpx.Client(base_url=server.url, timeout=30) as http:
        for _ in range(50):  # the idle connections are gone once the server sees them close
            if http.get("/healthz").status_code == 200:
                break
        else:
            raise AssertionError("the server still refused after the idle connections closed")


@pytest.fixture
def sqlite_database(store_url_factory: Any) -> Any:
    return store_url_factory("sqlite")


#: Gateways parking the asks at once on PostgreSQL, where a park mostly waits on its round
#: trips (SQLite's writes take turns on one file: one gateway parks them all there).
PG_PARKERS = 4


def fill(location: Any, count: int) -> None:
    """``count`` open asks, ``bulk-00000`` the oldest, parked through the library before the
    server starts.

    Each parking gateway takes a run of the numbers and reads a clock of its own that
    starts where its run starts and steps one microsecond a park, so the asks' times
    follow their numbers however the gateways interleave (a second ago: open for hours).
    """
    parkers = PG_PARKERS if location.engine == "postgres" else 1
    start = datetime.now(UTC) - timedelta(seconds=1)
    share = -(-count // parkers)

    def park(first: int) -> None:
        clock = ManualClock(start + timedelta(microseconds=first))
        store = location.open(**({"synchronous": "normal"} if location.engine == "sqlite" else {}))
        with Gateway(store=store, clock=clock) as gateway:
            for n in range(first, min(count, first + share)):
                gateway.ask(f"bulk-{n:05d}", "Which one?", ["Deploy", "Hold"])
                clock.advance(timedelta(microseconds=1))

    with ThreadPoolExecutor(parkers) as pool:
        list(pool.map(park, range(0, count, share)))


# Both engines: the keyset paging over 20,000 rows is each store's own SQL.
@pytest.mark.parametrize("engine", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
@pytest.mark.browser
def test_twenty_thousand_open_asks_page_and_the_console_stays_usable(launch: Any, database: Any, page: Any) -> None:
    fill(database, OPEN_ASKS)
    server = launch(database)
    with server.client() as http:
        first = http.get("/v1/asks")
        assert first.status_code == 200
        data = first.json()
        assert len(data["asks"]) == 100 and data["next"]
        assert len(first.content) < 100_000
        seen: list[str] = []
        cursor = None
        while True:
            params = {"limit": 1000, **({"cursor": cursor} if cursor else {})}
            chunk = http.get("/v1/asks", params=params).json()
            seen += [ask["conversation_id"] for ask in chunk["asks"]]
            cursor = chunk["next"]
            if not cursor:
                break
        assert seen == [f"bulk-{n:05d}" for n in range(OPEN_ASKS)]  # each once, oldest first
        assert http.get("/v1/asks", params={"limit": 1001}).status_code == 422
        bad = http.get("/v1/asks", params={"cursor": "not-a-cursor"})
        assert bad.status_code == 422 and "cursor" in bad.json()["detail"]

    page.goto(server.url + "/")
    expect(page.locator("tr.ask-row")).to_have_count(100)
    expect(page.locator("#asks-count")).to_have_text("(page 1: 100)")
    expect(page.locator("tr.ask-row").first.locator("td.conversation")).to_have_text("bulk-00000")
    page.click("#asks-next")
    expect(page.locator("tr.ask-row").first.locator("td.conversation")).to_have_text("bulk-00100")
    expect(page.locator("#asks-count")).to_have_text("(page 2: 100)")
    row = page.locator("tr.ask-row").first
    page.once("dialog", lambda dialog: dialog.accept())  # the console asks before it cancels
    row.locator("button.cancel").click()
    expect(page.locator("#status")).to_contain_text("cancelled")
    expect(page.locator("tr.ask-row").first.locator("td.conversation")).to_have_text("bulk-00101")
    page.click("#asks-first")
    expect(page.locator("tr.ask-row").first.locator("td.conversation")).to_have_text("bulk-00000")
    with server.client() as http:
        assert http.post(messages_path("bulk-00100"), json={"text": "1"}).json()["kind"] == "pass"
        assert http.post(messages_path("bulk-00099"), json={"text": "1"}).json()["kind"] == "selected"
