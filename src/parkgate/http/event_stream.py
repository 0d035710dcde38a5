"""The event stream (``GET /v1/events/stream``): the event log's new events as server-sent
events, one frame an event::

    id: 42
    event: closed
    data: {"id": 42, "seq": 5, "at": "...", "type": "closed", "ask_id": "...", "sender": ..., "data": {...}}

``id`` is the event's place in the whole log, so a client that reconnects with
``Last-Event-ID`` (a browser's ``EventSource`` sends it by itself) gets exactly the events
after the last one it saw. A stream opens with ``retry`` (how soon to reconnect) and an
``id`` frame without data naming where it starts, so a client that saw no event yet still
resumes from there.

How a stream waits: one :class:`EventTail` per process reads the log's last id for all
its streams, every :data:`TAIL_POLL_SECONDS` and at once when the close signal
(:mod:`parkgate.store.signal`) says something changed here or in another process; a
stream reads its next page when the tail says the log grew. While nothing arrives a
comment goes out every :data:`~parkgate.core.events.STREAM_HEARTBEAT_SECONDS`. A stream
counts as a long-poll (:mod:`parkgate.http.longpolls`: the same cap, the same read turns)
and ends after its ``wait`` (at most 60 s, as a long-poll's), when its client leaves, or
as soon as the server is told to stop (:mod:`parkgate.http.stopping`); the client then
reconnects and resumes.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import AsyncIterator, Iterator
from typing import Any

from parkgate.core.events import STREAM_HEARTBEAT_SECONDS, LoggedEvent
from parkgate.errors import ParkgateError
from parkgate.gateway.async_gateway import AsyncGateway
from parkgate.http.longpolls import LongPolls
from parkgate.http.stopping import Stopping

log = logging.getLogger("parkgate")

#: How often the tail reads the log's last id while some stream follows it, in seconds
#: (a change the close signal announces is read at once).
TAIL_POLL_SECONDS = 0.5
#: The most events one read of a stream takes from the log.
STREAM_PAGE = 100
#: How soon a client reconnects after a stream ends, in milliseconds (its ``retry`` field).
RECONNECT_MILLISECONDS = 1000
#: The comment a stream writes while no event arrives.
HEARTBEAT = b": heartbeat\n\n"
#: The stream's media type.
EVENT_STREAM = "text/event-stream"


def json_text(value: Any) -> str:
    """``value`` as compact JSON text that always encodes as UTF-8 (text a client sent with
    lone surrogates is escaped)."""
    text = json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(value, ensure_ascii=True, allow_nan=False, separators=(",", ":"))
    return text


def frame(event: LoggedEvent) -> bytes:
    """One event as a server-sent event: ``id``, ``event`` (its type) and ``data`` (its JSON,
    ``id`` included; JSON holds no line break, so it is one ``data`` line)."""
    body = json_text(event.to_json(with_id=True))
    return f"id: {event.id}\nevent: {event.type.value}\ndata: {body}\n\n".encode()


def opening(start: int) -> bytes:
    """A stream's first frame: how soon to reconnect, and the id it starts after (no data,
    so no event: a client keeps the id to resume from)."""
    return f"retry: {RECONNECT_MILLISECONDS}\nid: {start}\n\n".encode()


class EventTail:
    """Tells one process's streams that the log grew: one reader of its last id for them all.

    Its task runs on the serving loop while a stream follows (:meth:`following`) and stops
    with the last one.
    """

    def __init__(self, gateway: AsyncGateway, poll_seconds: float = TAIL_POLL_SECONDS) -> None:
        self._gateway = gateway
        self.poll_seconds = poll_seconds
        #: How many streams follow the log now.
        self.followers = 0
        self._grown = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._last = -1

    def grown(self) -> asyncio.Event:
        """The event set when the log next grows: taken before a read, a growth after the
        read still sets it."""
        return self._grown

    @contextlib.contextmanager
    def following(self) -> Iterator[None]:
        """Count a stream for the block, starting the tail's task for the first one."""
        self.followers += 1
        if self._task is None:
            self._grown = asyncio.Event()
            self._task = asyncio.get_running_loop().create_task(self._run(), name="parkgate-event-tail")
        try:
            yield
        finally:
            self.followers -= 1

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        nudge = asyncio.Event()

        def heard(*_: object) -> None:  # any signal, from any thread: read the last id now
            with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
                loop.call_soon_threadsafe(nudge.set)

        stop_listening = self._gateway.sync.signal.listen(heard)
        try:
            while self.followers:
                nudge.clear()
                with contextlib.suppress(ParkgateError):  # out of reach: the streams' own reads say so
                    last = await self._gateway.last_event_id()
                    if last != self._last:
                        self._last = last
                        grown, self._grown = self._grown, asyncio.Event()
                        grown.set()
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(self.poll_seconds):
                        await nudge.wait()
        finally:
            self._task = None  # in the same step as the check above: a new follower starts a new task
            stop_listening()


async def follow(
    gateway: AsyncGateway,
    tail: EventTail,
    polls: LongPolls,
    stopping: Stopping,
    *,
    start: int,
    owner: str | None,
    hold: float,
) -> AsyncIterator[bytes]:
    """The stream's bytes: its opening, then each event after ``start`` (only ``owner``'s
    asks' when given) as it is written, and heartbeats, for ``hold`` seconds at most.

    Args:
        gateway: The gateway whose log is followed.
        tail: The process's tail (it says when to read again).
        polls: The process's long-polls: the stream holds one of their places.
        stopping: Whether the server is stopping (the stream then ends).
        start: The id of the last event the client has (0: from the first kept).
        owner: Only the events of this owner's asks (a tenant's stream).
        hold: How long the stream lasts before it ends for the client to reconnect.
    """
    async with polls.admit() as turns:
        with tail.following():
            loop = asyncio.get_running_loop()
            deadline = loop.time() + hold
            after = start
            yield opening(start)
            beat = loop.time() + STREAM_HEARTBEAT_SECONDS
            while not stopping.stopping:
                grown = tail.grown()
                try:
                    async with turns:
                        page = await gateway.events_after(after, STREAM_PAGE, owner=owner)
                except ParkgateError as error:  # the store went out of reach: the client reconnects
                    log.warning("event stream ended: %s", error)
                    return
                now = loop.time()
                if page:
                    after = page[-1].id
                    yield b"".join(frame(event) for event in page)
                    beat = now + STREAM_HEARTBEAT_SECONDS
                    if len(page) == STREAM_PAGE and now < deadline:
                        continue
                if now >= deadline:
                    return
                if now >= beat:
                    yield HEARTBEAT
                    beat = now + STREAM_HEARTBEAT_SECONDS
                await _woken(grown, stopping.event, min(beat, deadline) - now)


async def _woken(grown: asyncio.Event, stop: asyncio.Event | None, timeout: float) -> None:
    """Wait until the log grew, the server stops, or ``timeout`` seconds pass."""
    waits = [asyncio.ensure_future(event.wait()) for event in (grown, stop) if event is not None]
    try:
        await asyncio.wait(waits, timeout=max(0.0, timeout), return_when=asyncio.FIRST_COMPLETED)
    finally:
        for wait in waits:
            wait.cancel()
