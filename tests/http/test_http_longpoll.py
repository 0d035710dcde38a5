"""``GET /v1/asks/{id}?wait=S`` through a real server: it wakes when the ask closes.

The server serves from a thread of the test process: its gateway's close signal says
when a long-poll sleeps on its ask, which orders the test's threads without waiting.
"""

from __future__ import annotations

import asyncio
import threading
import time
import uuid
from typing import Any

import httpx
from live_server import Server, messages_path, wait_until


def park(http: httpx.Client, conversation: str) -> str:
    response = http.post(
        "/v1/asks", json={"conversation_id": conversation, "prompt": "Ship?", "options": ["Yes", "No"]}
    )
    assert response.status_code == 201, response.text
    return str(response.json()["ask_id"])


def test_a_long_poll_wakes_when_the_ask_is_answered(served: Server, conv: str) -> None:
    wait_seconds = 50
    with served.client(timeout=90) as http:
        ask_id = park(http, conv)
        result: dict[str, Any] = {}

        def poll() -> None:
            with served.client(timeout=90) as poller:
                result["response"] = poller.get(f"/v1/asks/{ask_id}", params={"wait": wait_seconds})
                result["returned"] = time.monotonic()

        started = time.monotonic()
        thread = threading.Thread(target=poll, daemon=True)
        thread.start()
        # The poll is in flight and holds: it read the open ask and sleeps on it.
        assert served.gateway.signal.wait_until_asleep(ask_id, 10), "the long-poll never slept on the open ask"
        assert thread.is_alive() and "response" not in result
        answered_at = time.monotonic()
        reply = http.post(messages_path(conv), json={"text": "2"}).json()
        assert reply["kind"] == "selected"
        thread.join(wait_seconds + 30)
        assert not thread.is_alive()
    response = result["response"]
    assert response.status_code == 200, response.text
    ask = response.json()
    assert (ask["status"], ask["answer"], ask["option_index"]) == ("answered", "No", 2)
    # It woke on the answer, not at the end of its wait.
    assert answered_at <= result["returned"] < started + wait_seconds


def test_a_long_poll_on_an_open_ask_returns_it_open_when_the_wait_ends(served: Server, conv: str) -> None:
    with served.client() as http:
        ask_id = park(http, conv)
        started = time.monotonic()
        # Real time is the point: the wait is seconds of real time, and it is held to the end.
        response = http.get(f"/v1/asks/{ask_id}", params={"wait": 0.5})
        assert time.monotonic() - started >= 0.5
        assert response.status_code == 200 and response.json()["status"] == "open"
        # A closed ask answers at once, whatever the wait.
        http.post(f"/v1/asks/{ask_id}/cancel")
        closed = http.get(f"/v1/asks/{ask_id}", params={"wait": 60}).json()
        assert closed["status"] == "cancelled"


def test_several_long_polls_on_one_ask_all_wake_on_an_operator_cancel(served: Server, conv: str) -> None:
    with served.client(timeout=90) as http:
        ask_id = park(http, conv)
        seen: list[str] = []
        lock = threading.Lock()

        def poll() -> None:
            with served.client(timeout=90) as poller:
                status = poller.get(f"/v1/asks/{ask_id}", params={"wait": 45}).json()["status"]
                with lock:
                    seen.append(status)

        threads = [threading.Thread(target=poll, daemon=True) for _ in range(4)]
        for thread in threads:
            thread.start()
        assert served.gateway.signal.wait_until_asleep(ask_id, 10, count=4), "not every poll slept on the open ask"
        assert all(thread.is_alive() for thread in threads), "a poll ended on an open ask"
        assert http.post(f"/v1/asks/{ask_id}/cancel").json()["status"] == "cancelled"
        wait_until(lambda: len(seen) == 4, 40, "all four long-polls to return")
    assert seen == ["cancelled"] * 4


#: More long-polls at once than the server's worker threads (anyio's 40 a loop).
MANY_WAITERS = 60


def test_long_polls_past_the_thread_limit_hold_no_thread(served: Server) -> None:
    """Waiters sleep on the loop: with more of them in flight than there are worker
    threads, a message is still answered at once and every waiter wakes on its answer."""
    conversations = [f"many-{uuid.uuid4().hex[:8]}-{n}" for n in range(MANY_WAITERS)]
    with served.client() as http:
        ask_ids = [park(http, conversation) for conversation in conversations]

    async def scenario() -> tuple[list[httpx.Response], float]:
        limits = httpx.Limits(max_connections=MANY_WAITERS + 5)
        async with httpx.AsyncClient(base_url=served.url, timeout=90, limits=limits) as client:
            polls = [asyncio.create_task(client.get(f"/v1/asks/{ask_id}", params={"wait": 40})) for ask_id in ask_ids]
            signal = served.gateway.signal
            asleep = await asyncio.to_thread(lambda: all(signal.wait_until_asleep(a, 20) for a in ask_ids))
            assert asleep, "a long-poll never slept on its open ask"
            assert not any(poll.done() for poll in polls), "a long-poll returned while its ask was open"
            started = time.monotonic()
            first = await client.post(messages_path(conversations[0]), json={"text": "1"})
            answered_in = time.monotonic() - started
            assert first.json()["kind"] == "selected"
            for conversation in conversations[1:]:
                await client.post(messages_path(conversation), json={"text": "2"})
            async with asyncio.timeout(30):
                return await asyncio.gather(*polls), answered_in

    responses, answered_in = asyncio.run(scenario())
    # Not a speed limit: a message queued behind the long-polls would wait out their 40 s.
    assert answered_in < 40, f"a message waited {answered_in:.1f} s behind {MANY_WAITERS} long-polls"
    assert [response.json()["status"] for response in responses] == ["answered"] * MANY_WAITERS
