"""What a surface and an agent over HTTP need: the conversation's parked ask read and waited
for (``parked``), the list kept to one conversation or owner, idempotent parks with a
``key``, an operator's cancel with its outcome, and the library's field names, through
both clients against real servers on SQLite and PostgreSQL."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest
from live_server import Server

from parkgate import AskStatus, Gateway, ReplyKind
from parkgate.client import Client
from parkgate.client.views import AskView, run_from_dict
from parkgate.gateway.shapes import ask_to_dict
from parkgate.http.responses import run_to_dict
from polling import until


class CountingTransport(httpx.HTTPTransport):
    """The ordinary transport, keeping the ``wait`` of every request it sends."""

    def __init__(self) -> None:
        super().__init__()
        self.waits: list[str | None] = []

    def polls(self) -> list[str]:
        """The long-polls sent so far (requests with a ``wait``)."""
        return [wait for wait in list(self.waits) if wait is not None]

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        self.waits.append(request.url.params.get("wait"))
        return super().handle_request(request)


@pytest.fixture
def park_later(served: Server) -> Iterator[Callable[[str, Callable[[], list[str]]], None]]:
    """``park_later(conversation_id, polls)``: park a question from another thread once the
    waiting client has a long-poll out (``polls()`` lists one)."""
    threads: list[threading.Thread] = []

    def park(conversation_id: str, polls: Callable[[], list[str]]) -> None:
        def send() -> None:
            until(lambda: len(polls()) >= 1, 30, "a long-poll from the waiting client")
            with Client(served.url) as other:
                other.ask(conversation_id, "Ship it?", ["Ship", "Hold"])

        thread = threading.Thread(target=send)
        thread.start()
        threads.append(thread)

    yield park
    for thread in threads:
        thread.join(30)


def test_parked_reads_the_conversations_ask_or_none(served: Server, connect: Any, conv: str) -> None:
    client = connect(served)
    assert client.parked(conv) is None
    asked = client.ask(conv, "Deploy?", ["Yes", "No"])
    parked = client.parked(conv)
    assert parked is not None and parked.ask_id == asked.ask_id and parked.is_open
    client.handle(conv, "1")
    assert client.parked(conv) is None


def test_parked_with_wait_returns_as_soon_as_an_ask_is_parked(served: Server, conv: str, park_later: Any) -> None:
    counted = CountingTransport()
    with Client(served.url, transport=counted) as client:
        park_later(conv, counted.polls)
        parked = client.parked(conv, wait=30)
    assert parked is not None and parked.prompt == "Ship it?" and parked.options == ("Ship", "Hold")
    assert counted.polls(), "the client never long-polled"


def test_parked_with_wait_gives_none_when_nothing_is_parked_in_time(served: Server, connect: Any, conv: str) -> None:
    assert connect(served).parked(conv, wait=0.5) is None


def test_the_http_view_of_a_conversation(served: Server, conv: str) -> None:
    with httpx.Client(base_url=served.url) as http:
        empty = http.get(f"/v1/conversations/{conv}")
        assert empty.status_code == 200 and empty.json() == {"conversation_id": conv, "ask": None}
        asked = http.post("/v1/asks", json={"conversation_id": conv, "prompt": "Name?"}).json()
        shown = http.get(f"/v1/conversations/{conv}", params={"wait": 5}).json()
        assert shown["ask"]["ask_id"] == asked["ask_id"] and shown["ask"]["status"] == "open"


def test_open_asks_keep_to_a_conversation(served: Server, connect: Any, conv: str) -> None:
    client = connect(served)
    mine = client.ask(conv, "Deploy?", ["Yes", "No"])
    client.ask(conv + "-other", "Deploy?", ["Yes", "No"])
    page = client.open_asks(conversation_id=conv)
    assert [ask.ask_id for ask in page.asks] == [mine.ask_id]
    assert client.open_asks(owner="nobody-parks-as-this").asks == ()


def test_a_key_parks_once_and_then_returns_the_answer(served: Server, connect: Any, conv: str) -> None:
    client = connect(served)
    first = client.ask(conv, "Deploy?", ["Yes", "No"], key=f"{conv}/approve")
    again = client.ask(conv, "Deploy?", ["Yes", "No"], key=f"{conv}/approve")
    assert again.ask_id == first.ask_id and again.parked
    client.handle(conv, "2")
    closed = client.ask(conv, "Deploy?", ["Yes", "No"], key=f"{conv}/approve")
    assert (closed.ask_id, closed.kind, closed.parked, closed.answer) == (first.ask_id, ReplyKind.ASKED, False, "No")
    assert client.wait(closed.ask_id, 0).status is AskStatus.ANSWERED


def test_cancel_records_the_outcome_given(served: Server, connect: Any, conv: str) -> None:
    client = connect(served)
    asked = client.ask(conv, "Deploy?", ["Yes", "No"], run_id=f"{conv}-run")
    cancelled = client.cancel(asked.ask_id, outcome="abandoned")
    assert (cancelled.status, cancelled.outcome, cancelled.closed_by) == (AskStatus.CANCELLED, "abandoned", "operator")
    run = client.run(f"{conv}-run")
    assert run is not None and run.outcome == "abandoned"
    plain = client.ask(conv, "Again?", ["Yes", "No"])
    assert client.cancel(plain.ask_id).outcome == "cancelled"


def test_the_client_and_the_library_name_fields_alike(gateway: Gateway) -> None:
    parked = gateway.ask("c-1", "Deploy?", ["Yes", "No"], run_id="run-1")
    ask = gateway.get(parked.ask_id or "")
    view = AskView.from_dict(ask_to_dict(ask))
    assert (view.id, view.ask_id) == (ask.id, ask.ask_id) == (parked.ask_id, parked.ask_id)
    run = gateway.run("run-1")
    assert run is not None
    over_http = run_from_dict(run_to_dict(run))
    assert (over_http.run_id, over_http.answers) == (run.run_id, run.answers) == ("run-1", {})
