"""``wait``: a long-poll that returns when the ask closes (answered, expired) or the time is up,
and loops past the longest one request may be held (the server's 60 s cap, or less)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest
from live_server import Server

from parkgate import AskStatus, ReplyKind
from parkgate.client import AsyncClient, Client
from polling import until


@pytest.fixture
def answer_later(served: Server) -> Iterator[Any]:
    """``answer_later(conversation_id, text, polls)``: send the message from another thread
    once ``polls()`` lists ``after`` long-polls the waiting client has sent (1 by default):
    the answer lands while the client waits."""
    threads: list[threading.Thread] = []

    def answer(conversation_id: str, text: str, polls: Callable[[], list[str]], after: int = 1) -> None:
        def send() -> None:
            until(lambda: len(polls()) >= after, 30, f"{after} long-polls from the waiting client")
            with Client(served.url) as other:
                other.handle(conversation_id, text)

        thread = threading.Thread(target=send)
        thread.start()
        threads.append(thread)

    yield answer
    for thread in threads:
        thread.join(30)


def test_wait_returns_the_ask_once_it_is_answered(
    served: Server, connect: Any, conv: str, answer_later: Any, flavour: str
) -> None:
    counted = CountingTransport() if flavour == "sync" else AsyncCountingTransport()
    client = connect(served, transport=counted)
    asked = client.ask(conv, "Deploy?", ["Yes", "No"])
    answer_later(conv, "1", counted.polls)
    ask = client.wait(asked.ask_id, 30)
    assert (ask.status, ask.answer, ask.option_index) == (AskStatus.ANSWERED, "Yes", 1)


def test_wait_returns_the_open_ask_when_its_time_is_up(served: Server, connect: Any, conv: str) -> None:
    client = connect(served)
    asked = client.ask(conv, "Deploy?", ["Yes", "No"])
    ask = client.wait(asked.ask_id, 0.5)
    assert ask.is_open and ask.ask_id == asked.ask_id
    assert client.wait(asked.ask_id, 0).is_open  # 0: one read, no wait
    assert client.handle(conv, "2").kind is ReplyKind.SELECTED  # the waits changed nothing


def test_wait_returns_an_ask_that_expires_meanwhile_with_its_default(served: Server, connect: Any, conv: str) -> None:
    client = connect(served)
    asked = client.ask(conv, "Deploy?", ["Yes", "No"], ttl=1, default="No")
    ask = client.wait(asked.ask_id, 30)
    assert (ask.status, ask.outcome, ask.answer) == (AskStatus.EXPIRED, "expired", "No")


class _Counting:
    """Keeps the ``wait`` of every request a transport sends."""

    def __init__(self) -> None:
        super().__init__()
        self.waits: list[str | None] = []

    def polls(self) -> list[str]:
        """The long-polls sent so far (requests with a ``wait``)."""
        return [wait for wait in list(self.waits) if wait is not None]


class CountingTransport(_Counting, httpx.HTTPTransport):
    """The ordinary transport, keeping the ``wait`` of every request it sends."""

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        self.waits.append(request.url.params.get("wait"))
        return super().handle_request(request)


class AsyncCountingTransport(_Counting, httpx.AsyncHTTPTransport):
    """The ordinary async transport, keeping the ``wait`` of every request it sends."""

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        self.waits.append(request.url.params.get("wait"))
        return await super().handle_async_request(request)


def test_a_wait_longer_than_one_long_poll_is_a_loop_of_them(served: Server, conv: str, answer_later: Any) -> None:
    counted = CountingTransport()
    with Client(served.url, long_poll=0.2, transport=counted) as client:
        asked = client.ask(conv, "Deploy?", ["Yes", "No"])
        answer_later(conv, "2", counted.polls, after=3)  # answered once a third long-poll is out
        ask = client.wait(asked.ask_id, 30)
    assert (ask.status, ask.answer) == (AskStatus.ANSWERED, "No")
    polls = counted.polls()
    assert len(polls) >= 3, counted.waits  # the answer came after several 0.2 s polls
    assert all(float(wait) <= 0.2 for wait in polls)


async def test_an_async_wait_loops_its_long_polls_and_holds_no_thread(served: Server, conv: str) -> None:
    counted = AsyncCountingTransport()
    async with AsyncClient(served.url, long_poll=0.2, transport=counted) as client:
        asked = await client.ask(conv, "Deploy?", ["Yes", "No"])

        async def answer() -> None:
            await asyncio.sleep(1.0)
            await client.handle(conv, "1")

        ask, _ = await asyncio.gather(client.wait(asked.ask_id, 30), answer())
        timed_out = await client.wait((await client.ask(conv + "-2", "Again?", ["A"])).ask_id, 0.5)
    assert (ask.status, ask.answer) == (AskStatus.ANSWERED, "Yes")
    assert timed_out.is_open
    polls = counted.polls()
    assert len(polls) >= 3 and all(float(wait) <= 0.2 for wait in polls), counted.waits
