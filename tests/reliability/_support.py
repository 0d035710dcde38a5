"""Shared helpers of the reliability suite: store specs, the sequential replay, workers.

Everything here is importable by a ``spawn``-ed child process (the race and
contention tests run real processes, each with its own Gateway on the same database).
"""

from __future__ import annotations

import contextlib
import multiprocessing
import queue as queue_module
import random
import threading
import time
import traceback
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import psycopg
from psycopg import sql as pgsql

from parkgate import Gateway
from parkgate.clock import ManualClock
from parkgate.core import machine
from parkgate.core.kinds import ReplyKind
from parkgate.core.model import Ask
from parkgate.core.phrases import PHRASES
from parkgate.errors import InputError
from parkgate.reply import Reply
from parkgate.store import Store, StoreUnavailable
from polling import until

#: The fixed "now" of every race/redelivery run: time never moves there, so the
#: final state depends only on the order the database committed the messages.
T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)

#: The reply fields a caller sees; replies are compared on exactly these.
REPLY_FIELDS = ("kind", "text", "parked", "ask_id", "expired_ask_id", "answer", "option_index")

#: How often a client re-sends a message the store refused as unavailable (same message_id).
CLIENT_RETRIES = 200


@dataclass(frozen=True)
class StoreSpec:
    """Where a test's database lives; picklable, so a child process can open it too."""

    engine: str  # "sqlite" | "postgres"
    url: str
    schema: str | None = None

    def store(self, **options: Any) -> Store:
        """A new store object (a new connection/pool) on this database."""
        if self.engine == "postgres":
            from parkgate.store.postgres import PostgresStore

            return PostgresStore(self.url, schema=self.schema, **options)
        from parkgate.store.sqlite import SQLiteStore

        return SQLiteStore(self.url, **options)

    def gateway(self, clock: ManualClock | None = None, **options: Any) -> Gateway:
        """A new Gateway with its own store on this database."""
        return Gateway(store=self.store(), clock=clock or ManualClock(T0), **options)

    def query(self, statement: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """Run ``statement`` (``?`` placeholders) on a fresh raw connection; rows or []."""
        if self.engine == "postgres":
            with psycopg.connect(self.url, autocommit=True) as conn:
                conn.execute(pgsql.SQL("SET search_path TO {}").format(pgsql.Identifier(self.schema or "public")))
                cur = conn.execute(statement.replace("?", "%s").encode(), tuple(params))
                return list(cur.fetchall()) if cur.description else []
        import sqlite3

        from parkgate.store.sqlite_file import path_from_url

        conn = sqlite3.connect(path_from_url(self.url), isolation_level=None)
        try:
            cur = conn.execute(statement, tuple(params))
            return list(cur.fetchall())
        finally:
            conn.close()

    def instrument_commit_order(self) -> None:
        """Make the commit order of inbound messages readable afterwards.

        SQLite: a trigger numbers each recorded message in a side table of this test's
        own file (``inbound_messages`` has no rowid); the number is assigned under the
        write lock that ``BEGIN IMMEDIATE`` holds until COMMIT. PostgreSQL: a sequence
        column this test adds to its own throwaway schema; ``nextval`` runs inside the
        message's transaction after the conversation's lock is taken, so per conversation
        (and per client, whose calls do not overlap) it follows commit order.
        """
        if self.engine == "postgres":
            self.query("ALTER TABLE inbound_messages ADD COLUMN commit_seq BIGSERIAL")
            return
        self.query(
            "CREATE TABLE commit_seq_log (seq INTEGER PRIMARY KEY AUTOINCREMENT, "
            "conversation_id TEXT NOT NULL, message_id TEXT NOT NULL)"
        )
        self.query(
            "CREATE TRIGGER commit_seq_number AFTER INSERT ON inbound_messages BEGIN "
            "INSERT INTO commit_seq_log (conversation_id, message_id) VALUES (new.conversation_id, new.message_id); END"
        )

    def commit_order(self) -> list[tuple[str, str, str]]:
        """(conversation_id, message_id, stored reply JSON) in the order they committed."""
        return [(c, m, r) for c, m, r, _ in self.commit_log()]

    def commit_log(self) -> list[tuple[str, str, str, datetime]]:
        """Like :meth:`commit_order`, with each message's ``received_at`` (its "now")."""
        if self.engine == "postgres":
            statement = (
                "SELECT conversation_id, message_id, reply, received_at FROM inbound_messages ORDER BY commit_seq"
            )
        else:
            statement = (
                "SELECT i.conversation_id, i.message_id, i.reply, i.received_at FROM inbound_messages AS i "
                "JOIN commit_seq_log AS l USING (conversation_id, message_id) ORDER BY l.seq"
            )
        rows = self.query(statement)
        return [(str(a), str(b), str(c), _as_time(d)) for a, b, c, d in rows]

    def count(self, table: str) -> int:
        """Rows in ``table``."""
        return int(self.query(f"SELECT count(*) FROM {table}")[0][0])


def _as_time(raw: Any) -> datetime:
    return raw if isinstance(raw, datetime) else datetime.fromisoformat(str(raw))


def reply_view(reply: Reply | dict[str, Any]) -> dict[str, Any]:
    """The caller-visible fields of a reply, as plain data."""
    data = reply.to_dict() if isinstance(reply, Reply) else reply
    view = {key: data.get(key) for key in REPLY_FIELDS}
    view["kind"] = str(view["kind"])
    return view


def pass_view(expired_ask_id: str | None = None) -> dict[str, Any]:
    """What a ``pass`` reply looks like (optionally for an ask that just expired)."""
    return {
        "kind": ReplyKind.PASS.value,
        "text": PHRASES[ReplyKind.PASS],
        "parked": False,
        "ask_id": None,
        "expired_ask_id": expired_ask_id,
        "answer": None,
        "option_index": None,
    }


def replay(
    initial: Ask, texts: Iterable[str], now: datetime | Sequence[datetime], escalate_after: int = 3
) -> tuple[list[dict[str, Any]], Ask]:
    """Feed ``texts`` one after another through the pure machine, as the gateway would.

    Returns the expected reply of every message and the ask's final state. Once the
    ask is closed every further message is ``pass`` (no workflow parks a next ask here).
    """
    ask = initial
    expected: list[dict[str, Any]] = []
    moments = list(now) if isinstance(now, Sequence) else None
    for position, text in enumerate(texts):
        moment = moments[position] if moments is not None else now
        assert isinstance(moment, datetime)
        if not ask.is_open:
            expected.append(pass_view())
            continue
        result = machine.step(ask, text, moment, escalate_after)
        ask = result.ask
        if result.expired:
            expected.append(pass_view(expired_ask_id=ask.id))
            continue
        expected.append(
            {
                "kind": result.kind.value,
                "text": result.text,
                "parked": result.parked,
                "ask_id": ask.id,
                "expired_ask_id": None,
                "answer": result.answer,
                "option_index": result.option_index,
            }
        )
    return expected, ask


# -- message plans -------------------------------------------------------------------

CHOICE_OPTIONS = ("Sequence", "Class", "Stop")
#: Per choice conversation: misses, a re-show, two selections (one by a label that is
#: also a control word) and a slash cancel. Which one commits first decides the outcome.
CHOICE_SCRIPT = ("nope", "menu", "still wrong", "maybe three?", "2", "stop", "/cancel", "/options")
#: Per text conversation: empty/blank misses, slash re-show, bare control word as data.
TEXT_SCRIPT = ("", "   ", "/menu", "cancel", "my answer", "/cancel", "", "/exit")


@dataclass(frozen=True)
class Message:
    """One inbound message of a plan."""

    conversation_id: str
    text: str
    message_id: str


@dataclass
class Sent:
    """What a client saw for one message: the reply, and when it sent/received it."""

    message_id: str
    reply: dict[str, Any]
    started: float
    finished: float
    attempts: int = 1


def park_conversations(gateway: Gateway, count: int, prefix: str) -> dict[str, Ask]:
    """Park one ask in each of ``count`` conversations (even: choice, odd: text)."""
    asks: dict[str, Ask] = {}
    for n in range(count):
        conversation = f"{prefix}-{n:03d}"
        if n % 2 == 0:
            reply = gateway.ask(
                conversation, f"Which diagram, {n}?", list(CHOICE_OPTIONS), run_id=f"run-{conversation}"
            )
        else:
            reply = gateway.ask(conversation, f"Describe it, {n}.", kind="text", run_id=f"run-{conversation}")
        assert reply.ask_id is not None
        asks[conversation] = gateway.get(reply.ask_id)
    return asks


def script_for(ask: Ask) -> tuple[str, ...]:
    """The messages a conversation receives in a race: the script for its ask's kind."""
    return CHOICE_SCRIPT if ask.options else TEXT_SCRIPT


def interleaved_plan(asks: dict[str, Ask], workers: int, seed: int) -> list[list[Message]]:
    """Deal every conversation's script out to ``workers`` clients, interleaved.

    All clients walk the conversations in one shared (seeded) order and each takes a
    share of every conversation's messages (in a seeded order), so several clients
    hit the same conversation at the same moment: the race is real, not incidental.
    """
    return _deal(asks, workers, seed, redeliver=False)


def redelivery_plan(asks: dict[str, Ask], workers: int, seed: int) -> list[list[Message]]:
    """Like :func:`interleaved_plan`, but each message is delivered 1-3 times, by different clients."""
    return _deal(asks, workers, seed, redeliver=True)


def _deal(asks: dict[str, Ask], workers: int, seed: int, *, redeliver: bool) -> list[list[Message]]:
    rng = random.Random(seed)
    plans: list[list[Message]] = [[] for _ in range(workers)]
    order = sorted(asks)
    rng.shuffle(order)
    for conversation in order:
        script = list(enumerate(script_for(asks[conversation])))
        rng.shuffle(script)
        offset = rng.randrange(workers)
        for j, (k, text) in enumerate(script):
            message = Message(conversation, text, f"{conversation}/m{k}")
            for copy in range(rng.randint(1, 3) if redeliver else 1):
                plans[(j + offset + copy) % workers].append(message)
    return plans


def send_all(
    gateway: Gateway,
    plan: Sequence[Message],
    barrier: Any | None = None,
    pace: float = 0.0,
    lockstep: int = 0,
) -> list[Sent]:
    """Send ``plan`` in order, one call at a time; re-send (same message_id) when unavailable.

    ``pace`` seconds pass between messages (to stretch a stream over a fault). With
    ``lockstep=k`` every client waits at the barrier each k-th time it moves on to the
    next conversation, so all clients hit that conversation at the same moment (plans
    from :func:`interleaved_plan` give every client a share of every conversation).
    """
    if barrier is not None:
        barrier.wait(timeout=120)
    out: list[Sent] = []
    previous: str | None = None
    changes = 0
    for message in plan:
        if previous is not None and message.conversation_id != previous:
            changes += 1
            if lockstep and barrier is not None and changes % lockstep == 0:
                barrier.wait(timeout=120)
        previous = message.conversation_id
        started = time.monotonic()
        for attempt in range(1, CLIENT_RETRIES + 1):
            try:
                reply = gateway.handle(message.conversation_id, message.text, message_id=message.message_id)
            except StoreUnavailable:
                if attempt == CLIENT_RETRIES:
                    raise
                time.sleep(0.002 * attempt)  # real time: the client backs off while the database is locked
                continue
            out.append(Sent(message.message_id, reply.to_dict(), started, time.monotonic(), attempt))
            break
        if pace:
            time.sleep(pace)  # real time: the sending rate is what the test sets
    return out


def _process_worker(
    index: int,
    spec: StoreSpec,
    plan: list[Message],
    barrier: Any,
    results: Any,
    start: str,
    busy_timeout_ms: int | None,
    lockstep: int,
) -> None:
    """Child-process body: its own Gateway on the shared database, then ``send_all``."""
    gateway: Gateway | None = None
    try:
        if busy_timeout_ms is not None:
            import parkgate.store.sqlite_file as sqlite_file

            sqlite_file.BUSY_TIMEOUT_MS = busy_timeout_ms
        # Opening migrates, which takes the write lock: it may be refused too, for a while.
        gateway = until(
            lambda: spec.gateway(clock=ManualClock(datetime.fromisoformat(start))),
            60,
            "the database to let this process open it",
            interval=0.01,
            retry_on=(StoreUnavailable,),
        )
        sent = send_all(gateway, plan, barrier, lockstep=lockstep)
        results.put(("ok", index, sent))
    except BaseException:
        results.put(("error", index, traceback.format_exc()))
        with contextlib.suppress(Exception):
            barrier.abort()
    finally:
        if gateway is not None:
            gateway.close()


def run_in_processes(
    spec: StoreSpec,
    plans: Sequence[list[Message]],
    start: datetime = T0,
    busy_timeout_ms: int | None = None,
    timeout: float = 180.0,
    lockstep: int = 0,
) -> list[list[Sent]]:
    """One spawned process per plan, all released together by a barrier."""
    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(len(plans))
    results = ctx.Queue()
    procs = [
        ctx.Process(
            target=_process_worker,
            args=(index, spec, list(plan), barrier, results, start.isoformat(), busy_timeout_ms, lockstep),
            daemon=True,
        )
        for index, plan in enumerate(plans)
    ]
    for proc in procs:
        proc.start()
    collected: list[tuple[str, int, Any]] = []
    deadline = time.monotonic() + timeout
    try:
        while len(collected) < len(procs):
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise AssertionError(f"workers did not finish in {timeout:.0f} s")
            try:
                collected.append(results.get(timeout=min(remaining, 5.0)))
            except queue_module.Empty:
                if all(not p.is_alive() for p in procs) and results.empty():
                    raise AssertionError("a worker process died without reporting") from None
    finally:
        for proc in procs:
            proc.join(timeout=10)
            if proc.is_alive():
                proc.kill()
    errors = [detail for status, _, detail in collected if status != "ok"]
    assert not errors, "worker failed:\n" + "\n".join(errors)
    by_index = {index: sent for _, index, sent in collected}
    return [by_index[index] for index in range(len(plans))]


def run_in_threads(
    gateway: Gateway,
    plans: Sequence[list[Message]],
    timeout: float = 180.0,
    pace: float = 0.0,
    lockstep: int = 0,
) -> list[list[Sent]]:
    """One thread per plan on one shared Gateway, all released together by a barrier."""
    barrier = threading.Barrier(len(plans))
    out: list[list[Sent] | None] = [None] * len(plans)
    errors: list[str] = []

    def body(index: int) -> None:
        try:
            out[index] = send_all(gateway, plans[index], barrier, pace, lockstep)
        except BaseException:
            errors.append(traceback.format_exc())
            barrier.abort()

    threads = [threading.Thread(target=body, args=(i,), daemon=True) for i in range(len(plans))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=timeout)
        assert not thread.is_alive(), f"a worker thread did not finish in {timeout:.0f} s"
    assert not errors, "worker failed:\n" + "\n".join(errors)
    return [sent or [] for sent in out]


def bounded(call: Callable[[], object], seconds: float = 60.0) -> BaseException | None:
    """Run ``call`` in a thread; assert it comes back at all; return what it raised (or None)."""
    outcome: list[BaseException | None] = []

    def body() -> None:
        try:
            call()
            outcome.append(None)
        except BaseException as error:
            outcome.append(error)

    thread = threading.Thread(target=body, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), "the call did not come back: the wait is not bounded"
    return outcome[0]


def wait_for_rows(spec: StoreSpec, table: str, at_least: int, seconds: float = 120.0) -> None:
    """Block until ``table`` holds ``at_least`` rows (bounded): "the stream is under way"."""
    until(lambda: spec.count(table) >= at_least, seconds, f"{table} to reach {at_least} rows", interval=0.02)


def until_ok(call: Callable[[], Any], seconds: float = 60.0, pause: float = 0.2) -> Any:
    """Call until it stops raising StoreUnavailable (bounded by ``seconds``)."""
    return until(lambda: (call(),), seconds, "the store to answer", interval=pause, retry_on=(StoreUnavailable,))[0]


# -- the model spy -------------------------------------------------------------------


@dataclass
class ModelSpy:
    """A stand-in model that records every call and what was open when it was called.

    ``open_asks_for`` tells it which asks are open in a conversation at call time.
    """

    open_asks_for: Callable[[str], list[str]]
    calls: list[tuple[str, str, list[str]]] = field(default_factory=list)

    def __call__(self, conversation_id: str, text: str) -> str:
        self.calls.append((conversation_id, text, self.open_asks_for(conversation_id)))
        return "[spy model]"

    def calls_while_open(self) -> list[tuple[str, str, list[str]]]:
        """Calls made while the conversation had an open ask: must always be empty."""
        return [call for call in self.calls if call[2]]


@dataclass
class Driver:
    """A chat surface in miniature: gateway first; the model only for ``pass``."""

    gateway: Gateway
    model: ModelSpy

    def deliver(self, conversation_id: str, text: Any, message_id: str | None = None) -> Reply | InputError:
        """One message: the gateway's reply, or the InputError that refused it."""
        try:
            reply = self.gateway.handle(conversation_id, text, message_id=message_id)
        except InputError as error:
            return error
        if reply.kind is ReplyKind.PASS:
            self.model(conversation_id, text)
        return reply


# -- the linearizability-style check ---------------------------------------------------


@dataclass
class RaceReport:
    """What a checked run looked like: real overlaps on one conversation, outcomes."""

    overlaps: int
    outcomes: dict[str, int]


def check_against_replay(
    spec: StoreSpec,
    gateway: Gateway,
    initial: dict[str, Ask],
    plans: Sequence[Sequence[Message]],
    sent: Sequence[Sequence[Sent]],
    escalate_after: int = 3,
    real_clock: bool = False,
    read: Callable[[str], Ask] | None = None,
    partial: bool = False,
) -> RaceReport:
    """Assert the run is explained by one sequential history: the database's commit order.

    - every message committed exactly once (one ``inbound_messages`` row per message_id),
      and every redelivery of a message_id got the same reply as its first delivery;
    - the commit order respects real time: a message acknowledged before another was
      sent (same client, or any client on the same conversation) committed first;
    - replaying each conversation's messages in commit order through the pure
      ``machine.step`` gives exactly the reply every client saw, the stored reply, and
      the final state of every ask (status, outcome, answer, index, misses, stamps)
      and of its run.

    With ``real_clock`` each message is replayed at its own ``received_at`` (servers
    on the system clock); otherwise at the fixed ``T0``. ``read`` fetches an ask's
    stored state (default ``gateway.get``). With ``partial`` (right after a crash,
    before clients re-send) only what committed is replayed: every acknowledged
    message must be among it; an unacknowledged one may or may not have committed.
    """
    import json
    from collections import Counter, defaultdict

    from parkgate.core.kinds import AskStatus

    messages = {m.message_id: m for plan in plans for m in plan}
    deliveries: dict[str, list[Sent]] = defaultdict(list)
    for worker in sent:
        for item in worker:
            deliveries[item.message_id].append(item)
    if not partial:
        assert set(deliveries) == set(messages), "a client lost track of a message"
    for mid, items in deliveries.items():
        first = reply_view(items[0].reply)
        assert all(reply_view(i.reply) == first for i in items), f"{mid}: redeliveries got different replies"
    log = spec.commit_log()
    stray = [m for c, m, _, _ in log if c in initial and m not in messages]
    assert not stray, f"messages nobody sent were recorded: {stray[:5]}"
    log = [row for row in log if row[1] in messages]
    order = [(c, m, r) for c, m, r, _ in log]
    received = {m: t for _, m, _, t in log}
    committed = [mid for _, mid, _ in order]
    assert len(committed) == len(set(committed)), "a message_id was recorded twice"
    if partial:
        missing = set(deliveries) - set(committed)
        assert not missing, f"acknowledged messages are not in the database: {sorted(missing)[:5]}"
    else:
        assert set(committed) == set(messages), "committed messages differ from the messages sent"
    position = {mid: i for i, mid in enumerate(committed)}
    stored = {mid: raw for _, mid, raw in order}
    if partial:
        messages = {mid: messages[mid] for mid in committed}

    if not partial and all(len(items) == 1 for items in deliveries.values()):
        for worker in sent:
            positions = [position[s.message_id] for s in worker]
            assert positions == sorted(positions), "a client's messages committed out of its send order"

    # Real time: if every delivery of b started after some delivery of a was acknowledged,
    # a took effect first.
    first_ack = {mid: min(i.finished for i in items) for mid, items in deliveries.items()}
    first_send = {mid: min(i.started for i in items) for mid, items in deliveries.items()}
    if partial:  # only acknowledged messages have known send/ack times
        first_ack = {mid: first_ack.get(mid, float("inf")) for mid in messages}
        first_send = {mid: first_send.get(mid, float("-inf")) for mid in messages}
    by_conversation: dict[str, list[str]] = defaultdict(list)
    for mid in messages:
        by_conversation[messages[mid].conversation_id].append(mid)
    overlaps = 0
    for mids in by_conversation.values():
        for a in mids:
            for b in mids:
                if first_ack[a] < first_send[b]:
                    assert position[a] < position[b], f"{b} was sent after {a} was acknowledged but committed first"
                elif a != b and first_send[a] < first_ack[b] and first_send[b] < first_ack[a]:
                    overlaps += 1

    outcomes: Counter[str] = Counter()
    for conversation, ask in initial.items():
        mids = sorted((m for m in messages if messages[m].conversation_id == conversation), key=position.__getitem__)
        moments = [received[m] for m in mids] if real_clock else [T0] * len(mids)
        expected, final = replay(ask, [messages[m].text for m in mids], moments, escalate_after)
        for mid, want in zip(mids, expected, strict=True):
            if mid in deliveries:
                assert reply_view(deliveries[mid][0].reply) == want, (
                    f"{mid}: the client saw a reply no sequential order explains"
                )
            assert reply_view(json.loads(stored[mid])) == want, f"{mid}: the stored reply differs"
        stored_ask = read(ask.id) if read is not None else gateway.get(ask.id)
        assert stored_ask == final, f"{conversation}: final ask differs from the sequential replay"
        run = gateway.run(ask.run_id)
        assert run is not None
        if final.status is AskStatus.CANCELLED:
            assert (run.status, run.outcome, run.pending_ask_id) == ("complete", "cancelled", None)
        elif final.is_open:
            assert (run.status, run.pending_ask_id) == ("running", ask.id)
        else:
            assert (run.status, run.pending_ask_id) == ("running", None)
        outcomes[final.outcome or final.status.value] += 1
    return RaceReport(overlaps // 2, dict(outcomes))
