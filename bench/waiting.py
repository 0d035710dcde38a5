"""Benchmark 5: the waiting side, how soon whoever waits on an ask hears that it closed.

Real ``parkgate serve`` processes (``--workers 1``) on loopback, on a SQLite file and on a
PostgreSQL schema of their own, and this process as client, answerer and callback
receiver. Every figure is a distribution measured in the run, or a ratio against a
baseline sampled in turn with it:

- **wake**: a long-poll ``GET /v1/asks/{id}?wait=S`` waits on an open ask; the ask is
  answered (``POST /v1/conversations/{id}/messages``, text ``1``), timed from just before
  that POST is sent to the long-poll's response arriving. *One process*: the long-poll
  and the answer go to the same server, whose close signal fires in process. *Two
  processes*: the long-poll waits on a second server on the same database, which hears
  the commit through ``LISTEN``/``NOTIFY`` (PostgreSQL) or ``PRAGMA data_version``
  (SQLite).
- **floor**, sampled in turn with the wake-ups on the answering server: a ``POST`` of a
  message with a fresh ``message_id`` to a conversation with nothing parked. That is one
  loopback round trip and one commit (the reply is stored for redelivery, one
  ``INSERT``) that closes nothing.
- **callback**: an ask parked with a ``callback_url`` on this process's receiver is
  answered; the receiver's arrival is timed from the answering POST's return (which
  comes after its commit) and from just before it was sent.
- **due**: ``due_asks`` asks are parked in a short window (four threads of a library
  gateway in this process) with the same TTL and a callback, and nothing else touches
  them. Each one's lateness is its callback's arrival minus its due time
  (``last_touched`` + ``ttl_seconds``, from the payload), split into the due read's delay
  (the event's ``timestamp``, the moment the read closed it, minus the due time) and the
  delivery after it.
- **due-time cost**: benchmark 1's mix in one process with plain asks (no due time),
  ``watched`` asks (a due time, moved by every miss through migration 5's trigger) and
  asks with a callback (a due time, and an outbox row at each close), in alternating
  cells, each against its own raw ``UPDATE`` (``bench.reply_path``).

Each HTTP client holds one keep-alive connection (the standard library's
``http.client``), opened before the timed part, so no figure includes a TCP connect.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import logging
import os
import queue
import random
import socket
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import quote

from bench.common import StoreTarget, latency_summary, percentile, ratio, store_target
from bench.http_load import free_port, schema_url, start_server, stop_server, wait_healthy

OPTIONS = ("Deploy", "Hold")
PROMPT = "Deploy the release?"
#: How long a long-poll may wait; a wake-up that took this long was not woken.
LONG_POLL_SECONDS = 30
#: Pause between sending a long-poll (or parking a callback ask) and answering, so the
#: server has read the open ask and sleeps on the signal (and the deliverer's pass that
#: the park set off is over).
SETTLE_SECONDS = 0.05
#: uvicorn closes a keep-alive connection idle for 5 s; reconnect (untimed) before that.
IDLE_RECONNECT_SECONDS = 3.0
#: Threads parking the due asks.
PARKERS = 4
#: The goals of issue 18, in milliseconds (due lateness in seconds).
GOALS: dict[str, Any] = {
    "wake_two_processes_p99_ms": {"postgres": 10.0, "sqlite": 25.0},
    "callback_p99_ms": 25.0,
    "due_lateness_p99_s": 1.0,
}
ENGINES = ("sqlite", "postgres")
VARIANTS = ("plain", "watched", "callback")


def messages_path(conversation_id: str) -> str:
    """The messages route of a conversation, the id percent-encoded."""
    return f"/v1/conversations/{quote(conversation_id, safe='')}/messages"


class Http:
    """One keep-alive HTTP/1.1 connection to a server on loopback, JSON in and out."""

    def __init__(self, port: int) -> None:
        self.port = port
        self._conn: http.client.HTTPConnection | None = None
        self._used = 0.0

    def ready(self) -> None:
        """Open the connection if it is closed or has idled long enough for the server to drop it."""
        if self._conn is not None and time.monotonic() - self._used < IDLE_RECONNECT_SECONDS:
            return
        self.close()
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=LONG_POLL_SECONDS + 30)
        conn.connect()
        assert conn.sock is not None
        conn.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._conn = conn

    def send(self, method: str, path: str, body: dict[str, Any] | None = None) -> None:
        """Send a request on the open connection (call :meth:`ready` first)."""
        assert self._conn is not None, "call ready() first"
        data = json.dumps(body).encode() if body is not None else None
        headers = {"Content-Type": "application/json"} if data is not None else {}
        self._conn.request(method, path, body=data, headers=headers)

    def receive(self) -> tuple[int, Any]:
        """The response to the request sent: its status and JSON body."""
        assert self._conn is not None
        response = self._conn.getresponse()
        payload = response.read()
        self._used = time.monotonic()
        return response.status, json.loads(payload) if payload else None

    def call(self, method: str, path: str, body: dict[str, Any] | None = None) -> tuple[int, Any]:
        """One request and its response (the connection made ready first)."""
        self.ready()
        self.send(method, path, body)
        return self.receive()

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None


class LongPoll:
    """A thread holding long-polls on one server: :meth:`start` one, :meth:`result` its arrival."""

    def __init__(self, port: int) -> None:
        self._http = Http(port)
        self._asks: queue.Queue[str | None] = queue.Queue()
        self._results: queue.Queue[tuple[int, int, Any] | BaseException] = queue.Queue()
        self._sent = threading.Event()
        self._thread = threading.Thread(target=self._main, name="bench-long-poll", daemon=True)
        self._thread.start()

    def _main(self) -> None:
        while (ask_id := self._asks.get()) is not None:
            try:
                self._http.ready()
                self._http.send("GET", f"/v1/asks/{ask_id}?wait={LONG_POLL_SECONDS}")
                self._sent.set()
                status, body = self._http.receive()
                self._results.put((time.perf_counter_ns(), status, body))
            except BaseException as error:  # handed to the caller
                self._sent.set()
                self._results.put(error)
        self._http.close()

    def start(self, ask_id: str) -> None:
        """Send a long-poll on ``ask_id`` and return once it is on the wire."""
        self._sent.clear()
        self._asks.put(ask_id)
        self._sent.wait(30)

    def result(self) -> tuple[int, int, Any]:
        """(arrival in ``perf_counter_ns``, status, body) of the long-poll started last."""
        got = self._results.get(timeout=LONG_POLL_SECONDS + 30)
        if isinstance(got, BaseException):
            raise got
        return got

    def stop(self) -> None:
        self._asks.put(None)
        self._thread.join(10)


@dataclass(frozen=True)
class Hit:
    """One callback the receiver got: when (``perf_counter_ns`` and wall clock), its event's
    ask (``data``) and its type."""

    ns: int
    wall: float
    body: dict[str, Any]
    type: str = "ask.closed"
    #: The event's ``timestamp``: when the gateway decided it (a due read's moment for an expiry).
    timestamp: str | None = None


class _QuietServer(ThreadingHTTPServer):
    """A threaded HTTP server that does not print a traceback when a client hangs up.

    Its listen backlog holds every connection a deliverer opens at once (socketserver's
    default, 5, drops the rest, and a dropped SYN is resent only a second later).
    """

    request_queue_size = 128

    def handle_error(self, request: Any, client_address: Any) -> None:
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class Receiver:
    """A callback receiver on loopback (keep-alive HTTP/1.1) recording each POST's arrival."""

    def __init__(self) -> None:
        self.hits: dict[str, Hit] = {}
        self.duplicates = 0
        self._changed = threading.Condition()
        #: The ids the current :meth:`wait_for` still waits for.
        self._missing: set[str] = set()
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                arrived, wall = time.perf_counter_ns(), time.time()
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()
                event = json.loads(body)
                owner._record(Hit(arrived, wall, event["data"], event["type"], event.get("timestamp")))

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._server = _QuietServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/callback"
        self._thread = threading.Thread(target=self._server.serve_forever, name="bench-receiver", daemon=True)
        self._thread.start()

    def _record(self, hit: Hit) -> None:
        with self._changed:
            ask_id = str(hit.body["ask_id"])
            if ask_id in self.hits:
                self.duplicates += 1
            else:
                self.hits[ask_id] = hit
            self._missing.discard(ask_id)
            if not self._missing:  # the waiter wakes once, when its last hit is in
                self._changed.notify_all()

    def wait_for(self, ask_ids: list[str], timeout: float) -> list[Hit]:
        """The hits of ``ask_ids`` once all have arrived, or those that arrived by ``timeout``."""
        deadline = time.monotonic() + timeout
        with self._changed:
            self._missing = {ask_id for ask_id in ask_ids if ask_id not in self.hits}
            while self._missing:
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self._changed.wait(left)
            self._missing = set()
            return [self.hits[ask_id] for ask_id in ask_ids if ask_id in self.hits]

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()


@dataclass
class Served:
    """A ``parkgate serve --workers 1`` process on loopback."""

    name: str
    port: int
    log_path: Path
    pid: int


@contextlib.contextmanager
def serving(target: StoreTarget, work: Path, name: str) -> Iterator[Served]:
    """``parkgate serve --workers 1`` on ``target``'s database, stopped afterwards."""
    port = free_port()
    log_path = work / f"waiting-{target.engine}-{name}-{uuid.uuid4().hex[:6]}.log"
    db_url = schema_url(target.url, target.schema) if target.schema else target.url
    proc = start_server(db_url, target.schema, 1, port, log_path)
    try:
        wait_healthy(f"http://127.0.0.1:{port}", proc)
        yield Served(name, port, log_path, proc.pid)
    finally:
        stop_server(proc)


class Sampler:
    """The timed samples of the wake, floor and callback cells, against one answering server."""

    def __init__(self, answering: Served, receiver: Receiver) -> None:
        self.tag = uuid.uuid4().hex[:8]
        self.http = Http(answering.port)
        self.receiver = receiver
        self._count = 0
        self.floor_conversation = f"floor-{self.tag}"
        #: The floor's message ids: each one's reply must be stored (its commit happened).
        self.floor_ids: list[str] = []

    def _next(self, prefix: str) -> str:
        self._count += 1
        return f"{prefix}-{self.tag}-{self._count}"

    def _park(self, conversation: str, callback: bool = False) -> str:
        body: dict[str, Any] = {"conversation_id": conversation, "prompt": PROMPT, "options": list(OPTIONS)}
        if callback:
            body["callback_url"] = self.receiver.url
        status, reply = self.http.call("POST", "/v1/asks", body)
        if status != 201:
            raise RuntimeError(f"parking failed: {status} {reply}")
        return str(reply["ask_id"])

    def _answer(self, conversation: str) -> tuple[int, int]:
        """POST the answer ``1``: (just before it was sent, its response's arrival), perf_counter_ns."""
        self.http.ready()
        began = time.perf_counter_ns()
        self.http.send("POST", messages_path(conversation), {"text": "1", "message_id": f"{conversation}-a"})
        status, reply = self.http.receive()
        returned = time.perf_counter_ns()
        if status != 200 or reply["kind"] != "selected":
            raise RuntimeError(f"the answer was not taken: {status} {reply}")
        return began, returned

    def floor(self) -> int:
        """One round trip and one commit: a message where nothing is parked (its reply stored)."""
        time.sleep(SETTLE_SECONDS)  # as before an answer: the server is done with the last sample
        self.http.ready()
        message_id = self._next("f")
        self.floor_ids.append(message_id)
        began = time.perf_counter_ns()
        self.http.send("POST", messages_path(self.floor_conversation), {"text": "hello", "message_id": message_id})
        status, reply = self.http.receive()
        took = time.perf_counter_ns() - began
        if status != 200 or reply["kind"] != "pass":
            raise RuntimeError(f"the floor's message was not a pass: {status} {reply}")
        return took

    def wake(self, poll: LongPoll) -> tuple[int, int, int]:
        """(answer POST's latency, answer sent -> long-poll woken, answer returned -> woken), in ns.

        The last can be below zero: the long-poll's response may arrive before the POST's.
        """
        conversation = self._next("w")
        ask_id = self._park(conversation)
        poll.start(ask_id)
        time.sleep(SETTLE_SECONDS)
        began, returned = self._answer(conversation)
        arrived, status, ask = poll.result()
        if status != 200 or ask["status"] != "answered":
            raise RuntimeError(f"the long-poll did not see the answer: {status} {ask}")
        return returned - began, arrived - began, arrived - returned

    def callback(self) -> tuple[int, int, int]:
        """(answer POST's latency, callback after the POST returned, after it was sent), in ns."""
        conversation = self._next("c")
        ask_id = self._park(conversation, callback=True)
        time.sleep(SETTLE_SECONDS)
        began, returned = self._answer(conversation)
        hits = self.receiver.wait_for([ask_id], LONG_POLL_SECONDS)
        if not hits:
            raise RuntimeError(f"no callback for {ask_id} within {LONG_POLL_SECONDS} s")
        if hits[0].body["status"] != "answered":
            raise RuntimeError(f"the callback did not carry the answer: {hits[0].body}")
        arrived = hits[0].ns
        return returned - began, arrived - returned, arrived - began

    def close(self) -> None:
        self.http.close()


def _ms(values: list[int]) -> dict[str, float]:
    return latency_summary(values)


def _wake_cell(engine: str, topology: str, wakes: list[tuple[int, int, int]], floors: list[int]) -> dict[str, Any]:
    wake = _ms([w for _, w, _ in wakes])
    floor = _ms(floors)
    cell: dict[str, Any] = {
        "store": engine,
        "topology": topology,
        "wake": wake,
        "answer_post": _ms([a for a, _, _ in wakes]),
        "after_answer_returned": _ms([r for _, _, r in wakes]),
        "floor": floor,
        "wake_over_floor_p50": ratio(wake["p50_ms"], floor["p50_ms"]),
        "wake_over_floor_p99": ratio(wake["p99_ms"], floor["p99_ms"]),
        "wake_minus_floor_p50_ms": wake["p50_ms"] - floor["p50_ms"],
    }
    if topology == "two processes":
        goal = GOALS["wake_two_processes_p99_ms"][engine]
        cell["goal_p99_ms"] = goal
        cell["goal_met"] = wake["p99_ms"] <= goal
    return cell


def measure_engine(
    target: StoreTarget, samples: int, work: Path, receiver: Receiver, log: Callable[[str], None]
) -> dict[str, Any]:
    """The wake, floor and callback cells on one database: one server, then two."""
    engine = target.engine
    floors_one: list[int] = []
    wakes_one: list[tuple[int, int, int]] = []
    callbacks: list[tuple[int, int, int]] = []
    floors_two: list[int] = []
    wakes_two: list[tuple[int, int, int]] = []
    with serving(target, work, "a") as first:
        sampler = Sampler(first, receiver)
        poll = LongPoll(first.port)
        try:
            for _ in range(3):  # warm-up: the server's pool, statements, the deliverer's client
                sampler.floor(), sampler.wake(poll), sampler.callback()
            log(f"    {engine}: one server, {samples} samples each of floor, wake, callback ...")
            for _ in range(samples):
                floors_one.append(sampler.floor())
                wakes_one.append(sampler.wake(poll))
                callbacks.append(sampler.callback())
        finally:
            poll.stop()
        with serving(target, work, "b") as second:
            poll = LongPoll(second.port)
            try:
                for _ in range(3):
                    sampler.floor(), sampler.wake(poll)
                log(f"    {engine}: two servers, {samples} samples each of floor, wake across ...")
                for _ in range(samples):
                    floors_two.append(sampler.floor())
                    wakes_two.append(sampler.wake(poll))
            finally:
                poll.stop()
                sampler.close()
    stored = _stored_replies(target, sampler.floor_conversation, sampler.floor_ids)
    callback = {
        "store": engine,
        "answer_post": _ms([a for a, _, _ in callbacks]),
        "after_post_returned": _ms([r for _, r, _ in callbacks]),
        "after_post_sent": _ms([s for _, _, s in callbacks]),
        "floor": _ms(floors_one),
        "goal_p99_ms": GOALS["callback_p99_ms"],
    }
    callback["goal_met"] = callback["after_post_sent"]["p99_ms"] <= GOALS["callback_p99_ms"]
    wake = [
        _wake_cell(engine, "one process", wakes_one, floors_one),
        _wake_cell(engine, "two processes", wakes_two, floors_two),
    ]
    for cell in wake:
        cell["floor_messages"], cell["floor_replies_stored"] = len(sampler.floor_ids), stored
    return {"wake": wake, "callback": callback}


def _stored_replies(target: StoreTarget, conversation: str, message_ids: list[str]) -> int:
    """How many of the floor's messages have their reply stored: each one's commit happened."""
    store = target.open()
    try:
        with store.transaction() as tx:
            return sum(1 for message_id in message_ids if tx.message_context(conversation, message_id)[0] is not None)
    finally:
        store.close()


def _seconds_summary(values: list[float]) -> dict[str, float]:
    if not values:
        return {"count": 0, "p50_s": 0.0, "p99_s": 0.0, "max_s": 0.0, "min_s": 0.0}
    return {
        "count": len(values),
        "p50_s": percentile(values, 0.5),
        "p99_s": percentile(values, 0.99),
        "max_s": max(values),
        "min_s": min(values),
    }


def _park_through_gateway(gateway: Any, tag: str, count: int, ttl: float, url: str) -> list[str]:
    """``count`` asks parked by :data:`PARKERS` threads, each through ``Gateway.ask`` (one transaction each)."""
    ids: list[str] = []
    lock = threading.Lock()

    def park(worker: int) -> None:
        mine = [
            str(gateway.ask(f"due-{tag}-{n}", PROMPT, list(OPTIONS), ttl=ttl, callback_url=url).ask_id)
            for n in range(worker, count, PARKERS)
        ]
        with lock:
            ids.extend(mine)

    threads = [threading.Thread(target=park, args=(w,)) for w in range(PARKERS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return ids


def _park_in_one_transaction(gateway: Any, tag: str, count: int, ttl: float, url: str) -> list[str]:
    """``count`` asks, and a run each, written in one store transaction: the rows ``Gateway.ask``
    writes, all with one ``last_touched``, so they all fall due at the same instant."""
    from datetime import UTC

    from parkgate.core.kinds import AskKind, AskStatus
    from parkgate.core.model import Ask, Run

    now = datetime.now(UTC)
    ids = []
    with gateway.store.transaction() as tx:
        for n in range(count):
            conversation, run_id, ask_id = f"due-{tag}-{n}", uuid.uuid4().hex, uuid.uuid4().hex
            tx.save_run(Run(run_id, conversation, None, "running", None, {}, ask_id, now, now))
            tx.insert_ask(
                Ask(
                    ask_id,
                    conversation,
                    run_id,
                    AskKind.CHOICE,
                    PROMPT,
                    OPTIONS,
                    AskStatus.OPEN,
                    now,
                    now,
                    ttl,
                    callback_url=url,
                    watched=True,
                )
            )
            ids.append(ask_id)
    return ids


#: How the due asks are parked: through the gateway (the real path; they fall due across
#: the window it takes) or in one transaction (one due instant for all).
DUE_PARKING = {"gateway": _park_through_gateway, "one transaction": _park_in_one_transaction}


def _cpu_seconds(pids: Sequence[int]) -> float:
    """User plus system CPU seconds the processes ``pids`` have used (0 for one that is gone)."""
    total = 0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += int(fields[11]) + int(fields[12])  # utime, stime (fields 14 and 15 of proc(5))
    return total / os.sysconf("SC_CLK_TCK")


def due_round(
    target: StoreTarget, receiver: Receiver, count: int, ttl: float, parking: str, server_pids: Sequence[int] = ()
) -> dict[str, Any]:
    """Park ``count`` asks with one TTL and a callback (``parking``: a :data:`DUE_PARKING` key);
    time each one's callback against its due time. ``server_pids``: the ``parkgate serve``
    processes, whose CPU time from the parking's end to the last callback is reported per
    callback (a figure a busy machine moves less than the wall clock)."""
    from parkgate import Gateway

    tag = uuid.uuid4().hex[:8]
    gateway = Gateway(store=target.open())
    try:
        gateway.ask(f"due-warm-{tag}", PROMPT, list(OPTIONS), ttl=3600)  # the store's connections opened
        began = time.time()
        ids = DUE_PARKING[parking](gateway, tag, count, ttl, receiver.url)
        parked_in = time.time() - began
        cpu_before = _cpu_seconds(server_pids)
        hits = receiver.wait_for(ids, ttl + parked_in + 120)
        server_cpu = _cpu_seconds(server_pids) - cpu_before
    finally:
        gateway.close()
    lateness, read_delay, delivery = [], [], []
    statuses: dict[str, int] = {}
    due_times = []
    for hit in hits:
        body = hit.body
        due = datetime.fromisoformat(body["last_touched"]).timestamp() + float(body["ttl_seconds"])
        closed = datetime.fromisoformat(hit.timestamp or body["closed_at"]).timestamp()
        due_times.append(due)
        lateness.append(hit.wall - due)
        read_delay.append(closed - due)
        delivery.append(hit.wall - closed)
        statuses[body["status"]] = statuses.get(body["status"], 0) + 1
    arrivals = sorted(hit.wall for hit in hits)
    return {
        "parking": parking,
        "asks": count,
        "ttl_s": ttl,
        "parked_within_s": parked_in,
        "due_within_s": max(due_times) - min(due_times) if due_times else 0.0,
        "callbacks": len(hits),
        "statuses": statuses,
        "lateness": _seconds_summary(lateness),
        "due_read_delay": _seconds_summary(read_delay),
        "delivery_after_close": _seconds_summary(delivery),
        "arrivals_span_s": arrivals[-1] - arrivals[0] if arrivals else 0.0,
        "callbacks_per_s": ratio(len(arrivals) - 1, arrivals[-1] - arrivals[0]) if len(arrivals) > 1 else 0.0,
        "server_cpu_ms_per_callback": server_cpu * 1000 / len(hits) if hits and server_pids else None,
    }


#: The due cells: (how the asks are parked, servers on the database). Two servers are two
#: deliverers sharing the outbox through its leases.
DUE_CELLS = (("gateway", 1), ("one transaction", 1), ("one transaction", 2))


def measure_due(
    target: StoreTarget, scale: Any, work: Path, receiver: Receiver, log: Callable[[str], None]
) -> list[dict[str, Any]]:
    """Due lateness: each of :data:`DUE_CELLS`, ``due_rounds`` rounds of ``due_asks`` asks."""
    rows = []
    with contextlib.ExitStack() as servers:
        running: list[int] = []
        for parking, count in DUE_CELLS:
            while len(running) < count:
                running.append(servers.enter_context(serving(target, work, f"due-{len(running)}")).pid)
            rounds = []
            for number in range(scale.due_rounds):
                log(
                    f"    {target.engine}: {scale.due_asks} asks due at once (TTL {scale.due_ttl_seconds:g} s, "
                    f"parked {'through the gateway' if parking == 'gateway' else 'in one transaction'}, "
                    f"{count} server{'s' if count > 1 else ''}), round {number + 1} ..."
                )
                rounds.append(due_round(target, receiver, scale.due_asks, scale.due_ttl_seconds, parking, running))
            worst = max((r["lateness"]["p99_s"] for r in rounds), default=0.0)
            complete = all(r["callbacks"] == r["asks"] for r in rounds)
            rows.append(
                {
                    "store": target.engine,
                    "parking": parking,
                    "servers": count,
                    "rounds": rounds,
                    "lateness_p99_s_worst_round": worst,
                    "goal_p99_s": GOALS["due_lateness_p99_s"],
                    "goal_met": worst <= GOALS["due_lateness_p99_s"] and complete,
                }
            )
    return rows


def measure_due_cost(engine: str, scale: Any, work: Path, pg_url: str, log: Callable[[str], None]) -> dict[str, Any]:
    """Benchmark 1's mix in one process on one store, with each of :data:`VARIANTS` in turn.

    Each round runs every variant (the order rotated round by round) on conversations of
    its own, each right after a raw ``UPDATE`` batch of as many writes, so the variants
    share the store, its size and the hour. Per variant: gateway/raw, wall and CPU time a
    gateway call (CPU of this process, and on PostgreSQL of the gateway's own backends).
    """
    # The callback variant queues callbacks that nothing sends, on purpose: not worth a warning.
    quiet = _NotTheNoDelivererWarning()
    logging.getLogger("parkgate").addFilter(quiet)
    try:
        with store_target(engine, work, pg_url, "due-cost") as target:
            return _due_cost(target, scale, log)
    finally:
        logging.getLogger("parkgate").removeFilter(quiet)


class _NotTheNoDelivererWarning(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith("callbacks were queued")


def _backend_pids(store: Any) -> list[int]:
    """The PostgreSQL backends of the store's pooled connections (not the rest of a shared server)."""
    with contextlib.ExitStack() as held:
        conns = [held.enter_context(store._pool.connection()) for _ in range(store._pool.get_stats()["pool_size"])]
        return [conn.info.backend_pid for conn in conns]


def _due_cost(target: StoreTarget, scale: Any, log: Callable[[str], None]) -> dict[str, Any]:
    from collections import Counter

    from bench import cpu_split, reply_path
    from parkgate import Gateway

    chunk = max(1, scale.reply_conversations // scale.reply_rounds)
    rounds = scale.reply_rounds * scale.due_cost_repeats
    gateway = Gateway(store=target.open())
    sums = {v: {"ops": 0, "wall": 0.0, "raw_ops": 0, "raw_wall": 0.0, "cpu": cpu_split.Cpu()} for v in VARIANTS}
    per_round: dict[str, list[float]] = {v: [] for v in VARIANTS}
    kinds: Counter[str] = Counter()
    wrong: list[str] = []
    handle_ns: dict[str, list[int]] = {v: [] for v in VARIANTS}
    ask_ns: dict[str, list[int]] = {v: [] for v in VARIANTS}
    try:
        raw_ids = reply_path._park_raw_targets(gateway, 1)[0]
        raw = reply_path._raw_loop(target, gateway.store)
        plan = reply_path.Plan(0, (), tuple(raw_ids), warm_up_writes=scale.warm_up_writes)
        reply_path._warm_up(target, gateway, raw, plan)
        for number, variant in enumerate(VARIANTS):  # each variant's statements prepared before round 1
            warm = reply_path.script(range(10**6 + 20 * number, 10**6 + 20 * (number + 1)))
            reply_path._gateway_ops(gateway, warm, [], [], Counter(), wrong, variant)
        pids = _backend_pids(gateway.store) if target.engine == "postgres" else []
        first = 0
        for number in range(rounds):
            shift = number % len(VARIANTS)
            for variant in VARIANTS[shift:] + VARIANTS[:shift]:
                calls = reply_path.script(range(first, first + chunk))
                first += chunk
                picker = random.Random(number * 7919 + first)
                targets = [picker.choice(raw_ids) for _ in calls]
                began = time.perf_counter()
                raw(targets, [])
                raw_wall = time.perf_counter() - began
                began = time.perf_counter()
                cpu = cpu_split.measured(
                    lambda calls=calls, variant=variant: reply_path._gateway_ops(
                        gateway, calls, handle_ns[variant], ask_ns[variant], kinds, wrong, variant
                    ),
                    pids,
                )
                wall = time.perf_counter() - began
                totals = sums[variant]
                totals["ops"] += len(calls)
                totals["wall"] += wall
                totals["raw_ops"] += len(targets)
                totals["raw_wall"] += raw_wall
                totals["cpu"] = totals["cpu"] + cpu
                per_round[variant].append(ratio(len(calls) / wall, len(targets) / raw_wall))
    finally:
        gateway.close()
    out: dict[str, Any] = {
        "store": target.label,
        "mode": "single",
        "conversations_per_variant": chunk * rounds,
        "rounds": rounds,
        "unexpected": wrong[:10],
        "variants": {},
    }
    for variant in VARIANTS:
        t = sums[variant]
        cpu: Any = t["cpu"]
        server = None if cpu.server_user is None or not pids else (cpu.server_user + cpu.server_system)
        out["variants"][variant] = {
            "ratio": ratio(t["ops"] / t["wall"], t["raw_ops"] / t["raw_wall"]),
            "ratio_per_round": per_round[variant],
            "wall_us_per_op": t["wall"] * 1e6 / t["ops"],
            "client_cpu_us_per_op": (cpu.client_user + cpu.client_system) * 1e6 / t["ops"],
            "server_cpu_us_per_op": None if server is None else server * 1e6 / t["ops"],
            "handle": latency_summary(handle_ns[variant]),
            "ask": latency_summary(ask_ns[variant]),
        }
    plain = out["variants"]["plain"]
    for variant in VARIANTS:
        row = out["variants"][variant]
        row["ratio_vs_plain"] = ratio(row["ratio"], plain["ratio"])
        row["wall_vs_plain"] = ratio(row["wall_us_per_op"], plain["wall_us_per_op"])
        # Medians: the figures a busy shared machine moves least.
        row["handle_p50_vs_plain"] = ratio(row["handle"]["p50_ms"], plain["handle"]["p50_ms"])
        row["ask_p50_vs_plain"] = ratio(row["ask"]["p50_ms"], plain["ask"]["p50_ms"])
        log(
            f"    due-time cost, {target.label}, {variant}: gateway/raw {row['ratio']:.2f}, "
            f"handle p50 {row['handle']['p50_ms']:.3f} ms ({row['handle_p50_vs_plain']:.3f} of plain)"
        )
    return out


def run(
    scale: Any,
    work: Path,
    pg_url: str | None,
    log: Callable[[str], None] = print,
    engines: tuple[str, ...] = ENGINES,
    parts: tuple[str, ...] = ("wake", "due", "cost"),
) -> dict[str, Any]:
    """Benchmark 5 on each store in ``engines`` (PostgreSQL skipped without ``pg_url``)."""
    chosen = [engine for engine in engines if engine != "postgres" or pg_url]
    result: dict[str, Any] = {
        "samples": scale.waiting_samples,
        "settle_s": SETTLE_SECONDS,
        "goals": GOALS,
        "wake": [],
        "callback": [],
        "due": [],
        "due_cost": [],
    }
    if "postgres" in engines and not pg_url:
        result["skipped"] = "PostgreSQL is not reachable: its cells were not run"
    receiver = Receiver()
    try:
        for engine in chosen:
            if "wake" in parts or "due" in parts:
                with store_target(engine, work, pg_url or "", "waiting") as target:
                    if "wake" in parts:
                        found = measure_engine(target, scale.waiting_samples, work, receiver, log)
                        result["wake"].extend(found["wake"])
                        result["callback"].append(found["callback"])
                    if "due" in parts:
                        result["due"].extend(measure_due(target, scale, work, receiver, log))
            if "cost" in parts:
                result["due_cost"].append(measure_due_cost(engine, scale, work, pg_url or "", log))
    finally:
        result["callback_duplicates"] = receiver.duplicates
        receiver.stop()
    return result
