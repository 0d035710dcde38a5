"""The reliability suite's client of a live server: it records which messages were acknowledged.

The server itself is the suite's one live-server harness, :class:`Server` in
``tests/http/live_server.py`` (a process here: these tests kill it with SIGKILL and
restart it on the same port and database). What this module adds is the client side: a
message is acknowledged only by a 200 with a reply; a lost connection or a 503 (with a
clear JSON error) leaves it unacknowledged, to be re-sent with the same ``message_id``.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from ._support import Message, Sent

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "http"))
from live_server import Server, free_port, messages_path

__all__ = [
    "Server",
    "StreamResult",
    "Unacknowledged",
    "free_port",
    "messages_path",
    "post_message",
    "stream",
    "stream_in_threads",
]


class Unacknowledged(Exception):
    """The server did not acknowledge a message (connection lost, or 503)."""


def post_message(http: httpx.Client, message: Message) -> dict[str, Any]:
    """POST one message; its reply if acknowledged (200), else :class:`Unacknowledged`."""
    try:
        response = http.post(
            messages_path(message.conversation_id), json={"text": message.text, "message_id": message.message_id}
        )
    except httpx.TransportError as error:
        raise Unacknowledged(repr(error)) from None
    if response.status_code == 503:
        body = response.json()
        assert body.get("error") and body.get("detail"), f"a 503 without a clear JSON error: {response.text}"
        raise Unacknowledged(response.text)
    assert response.status_code == 200, f"{response.status_code}: {response.text}"
    reply: dict[str, Any] = response.json()
    assert reply.get("kind"), f"a reply without a kind: {reply}"
    return reply


@dataclass
class StreamResult:
    """What one client saw: acknowledged messages, the one in flight at the fault, the rest."""

    acked: list[Sent] = field(default_factory=list)
    pending: list[tuple[Message, float]] = field(default_factory=list)  # (message, first send time)
    unsent: list[Message] = field(default_factory=list)


def stream(http: httpx.Client, plan: Sequence[Message], stop_on_failure: bool, pace: float = 0.0) -> StreamResult:
    """Send ``plan`` in order. On a failure either stop (kill tests) or keep re-sending."""
    out = StreamResult()
    for position, message in enumerate(plan):
        started = time.monotonic()
        attempts = 0
        while True:
            attempts += 1
            try:
                reply = post_message(http, message)
            except Unacknowledged:
                if stop_on_failure:
                    out.pending.append((message, started))
                    out.unsent.extend(plan[position + 1 :])
                    return out
                if attempts > 600:
                    raise
                time.sleep(0.05)  # real time: the client backs off while the server is away
                continue
            out.acked.append(Sent(message.message_id, reply, started, time.monotonic(), attempts))
            break
        if pace:
            time.sleep(pace)  # real time: the sending rate is what the test sets
    return out


def stream_in_threads(
    server: Server, plans: Sequence[Sequence[Message]], stop_on_failure: bool, pace: float
) -> list[StreamResult]:
    """One client thread per plan (each with the server's token); bounded by a join timeout."""
    results: list[StreamResult | None] = [None] * len(plans)
    errors: list[BaseException] = []

    def body(index: int) -> None:
        try:
            with server.client() as http:
                results[index] = stream(http, plans[index], stop_on_failure, pace)
        except BaseException as error:
            errors.append(error)

    threads = [threading.Thread(target=body, args=(i,), daemon=True) for i in range(len(plans))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(180)
        assert not thread.is_alive(), "a client thread did not finish"
    if errors:
        raise errors[0]
    return [result or StreamResult() for result in results]
