"""kill -9 never leaves a change of an ask without its event, nor an event without its change (issue 42).

Every state change of an ask is written with its event in one transaction. These tests
kill the writer with SIGKILL where a crash could split them, on both stores, and then
read the database as it was left:

- **at every kill point of a scripted history**: a child process (forked, so a kill costs
  milliseconds, not a restart) runs one step of the script (a park, a miss, a refusal, a
  vote, a reminder or escalation fired by a due read, an expiry, a cancel) and kills
  itself at its k-th point: the start of each statement it sends (on SQLite each
  statement of the transaction, the ask's UPDATE and the events' INSERT separately, and
  the COMMIT; on PostgreSQL each statement, the pipeline's closing Sync) and the moment
  after the transaction returned, before the caller saw the result. The step is then
  tried again with k + 1, until it completes: every point of every step is a kill. A
  retried step is a redelivery (the same ``message_id``, the same park ``key``), as a
  client that lost its answer would send;
- **during bursts of concurrent messages**: 8 threads of one child send at once (on
  SQLite they share commits, the store's group commit) while another fires due
  reminders, and the child is killed at a random point mid-burst; then the unanswered
  messages are sent again.

After every kill the log must explain the asks (:func:`check_log`): each ask's events
are numbered 1..n from its ``parked``; a closed ask has exactly one ``closed`` event that
states its status and outcome and follows every change; an open ask has none; each
stored message that reached an ask has exactly one ``touched``/``voted``/``refused``
event, and each acknowledged message is stored with the reply its client saw; reminders
and the escalation are counted by their events, and an open ask's misses by the misses
since its last vote. About 200 kills per store on the script and 3 mid-burst, in seconds.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import select
import signal
import threading
import traceback
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from functools import partial
from typing import Any

from parkgate import Gateway
from parkgate.clock import ManualClock
from parkgate.store import Store

from ._support import T0, StoreSpec

#: How long one child may take before the test calls it hung.
CHILD_TIMEOUT = 60.0
#: Events that may follow an ask's ``closed`` one (they record what happened after the close).
AFTER_CLOSE = {"delivered", "posted", "late"}
#: The event types a message writes (one per stored message that reached an ask).
MESSAGE_EVENTS = {"touched", "voted", "refused"}
MISSES = {"retry", "escalated"}
#: Statements that change nothing: a kill before one leaves what a kill before the next
#: write leaves, so they are not kill points of their own.
READS = ("SELECT", "BEGIN")


# -- kill points in a child process ----------------------------------------------------


class KillPoints:
    """Counts the child's kill points once armed; SIGKILLs the child at the ``at``-th one.

    Before dying it writes which point it was (``!kill`` and the statement about to
    run) to the parent's pipe, so the test can say where its kills landed.
    """

    def __init__(self, at: int | None, fd: int) -> None:
        self.at, self.fd = at, fd
        self.count = 0
        self.armed = False
        self._lock = threading.Lock()

    def point(self, where: str) -> None:
        if not self.armed or where.lstrip().upper().startswith(READS):
            return
        with self._lock:
            self.count += 1
            hit = self.count == self.at
        if hit:
            os.write(self.fd, (json.dumps({"killed_before": statement_kind(where)}) + "\n").encode())
            os.kill(os.getpid(), signal.SIGKILL)

    def install(self, engine: str) -> None:
        """Count every statement the driver sends (and, on PostgreSQL, the pipeline's Sync)."""
        if engine == "sqlite":
            import sqlite3

            connect = sqlite3.connect

            def traced(*args: Any, **kwargs: Any) -> sqlite3.Connection:
                conn = connect(*args, **kwargs)
                # The checkpointer's PRAGMAs run off the commit path, on a thread of their own.
                conn.set_trace_callback(lambda sql: None if sql.startswith("PRAGMA") else self.point(sql))
                return conn

            sqlite3.connect = traced  # type: ignore[assignment]  # this child process only
            return
        import psycopg

        def before(method: Callable[..., Any], name: str) -> Callable[..., Any]:
            def wrapped(obj: Any, query: Any = None, *args: Any, **kwargs: Any) -> Any:
                self.point(name if query is None else str(query))
                return method(obj, query, *args, **kwargs) if query is not None else method(obj, *args, **kwargs)

            return wrapped

        psycopg.Cursor.execute = before(psycopg.Cursor.execute, "execute")  # type: ignore[method-assign]
        psycopg.Connection.execute = before(psycopg.Connection.execute, "execute")  # type: ignore[method-assign]
        exit_pipeline = psycopg.Pipeline.__exit__

        def sync_then_exit(pipeline: Any, *args: Any) -> Any:
            self.point("the pipeline's Sync (its commit)")
            return exit_pipeline(pipeline, *args)

        psycopg.Pipeline.__exit__ = sync_then_exit  # type: ignore[method-assign]

    def after_commits(self, store: Store) -> Store:
        """A kill point right after each transaction of ``store`` returned (committed, unanswered)."""
        begin = store.transaction

        @contextlib.contextmanager
        def transaction(*args: Any, **kwargs: Any) -> Iterator[Any]:
            with begin(*args, **kwargs) as tx:
                yield tx
            self.point("after the commit, before the caller saw it")

        store.transaction = transaction  # type: ignore[method-assign]  # this child process only
        return store


@dataclass
class ChildResult:
    """What a child said before it ended, and whether a SIGKILL ended it."""

    killed: bool
    lines: list[dict[str, Any]] = field(default_factory=list)

    @property
    def killed_before(self) -> str | None:
        return next((line["killed_before"] for line in self.lines if "killed_before" in line), None)

    def acks(self) -> list[dict[str, Any]]:
        return [line["ack"] for line in self.lines if "ack" in line]


def in_child(
    spec: StoreSpec, kill_at: int | None, body: Callable[[Gateway, KillPoints, Callable[[Any], None]], None]
) -> ChildResult:
    """Fork; in the child open a Gateway on ``spec`` (at ``T0``), arm the kill points and run
    ``body(gateway, points, ack)``; ``ack(value)`` reports an acknowledged result at once."""
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        code = 0
        try:
            os.close(read_fd)
            points = KillPoints(kill_at, write_fd)
            points.install(spec.engine)
            gateway = Gateway(store=points.after_commits(spec.store()), clock=ManualClock(T0))

            def ack(value: Any) -> None:
                os.write(write_fd, (json.dumps({"ack": value}) + "\n").encode())

            body(gateway, points, ack)
        except BaseException:
            os.write(write_fd, (json.dumps({"error": traceback.format_exc()}) + "\n").encode())
            code = 1
        finally:
            os._exit(code)
    os.close(write_fd)
    chunks: list[bytes] = []
    try:
        while True:
            ready, _, _ = select.select([read_fd], [], [], CHILD_TIMEOUT)
            if not ready:
                os.kill(pid, signal.SIGKILL)
                raise AssertionError(f"a child ran past {CHILD_TIMEOUT:.0f} s")
            chunk = os.read(read_fd, 65536)
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        os.close(read_fd)
        _, status = os.waitpid(pid, 0)
    lines = [json.loads(line) for line in b"".join(chunks).decode().splitlines() if line]
    errors = [line["error"] for line in lines if "error" in line]
    assert not errors, "the child failed:\n" + "\n".join(errors)
    killed = os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL
    assert killed or (os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0), f"child ended with {status}"
    return ChildResult(killed, lines)


# -- what the log must explain -----------------------------------------------------------


def _json(raw: Any) -> Any:
    return json.loads(raw) if isinstance(raw, str | bytes) else raw


Query = Callable[[str], list[tuple[Any, ...]]]
#: One consistent read of the database: every query made inside it sees the same commits.
Snapshot = Callable[[], contextlib.AbstractContextManager[Query]]


@contextlib.contextmanager
def reader(spec: StoreSpec) -> Iterator[Snapshot]:
    """Reads of the database for :func:`check_log`, each check in one snapshot, over one
    connection kept for the test (the children never use it).

    One snapshot matters on PostgreSQL: the server process of a killed child may still
    be committing the child's last transaction (its statements and commit had arrived
    before the kill), so reads in separate snapshots could see an ask before that commit
    and its events after it.
    """
    if spec.engine != "postgres":
        import sqlite3

        from parkgate.store.sqlite_file import path_from_url

        lite = sqlite3.connect(path_from_url(spec.url), isolation_level=None)

        @contextlib.contextmanager
        def lite_snapshot() -> Iterator[Query]:
            lite.execute("BEGIN")
            try:
                yield lambda statement: list(lite.execute(statement).fetchall())
            finally:
                lite.execute("ROLLBACK")

        try:
            yield lite_snapshot
        finally:
            lite.close()
        return
    import psycopg
    from psycopg import sql as pgsql

    with psycopg.connect(spec.url, autocommit=True) as conn:
        conn.execute(pgsql.SQL("SET search_path TO {}").format(pgsql.Identifier(spec.schema or "public")))
        conn.isolation_level = psycopg.IsolationLevel.REPEATABLE_READ

        @contextlib.contextmanager
        def pg_snapshot() -> Iterator[Query]:
            with conn.transaction():
                yield lambda statement: list(conn.execute(statement.encode()).fetchall())

        yield pg_snapshot


def check_log(
    snapshot: Snapshot, acked: Mapping[str, Mapping[str, Any]]
) -> dict[str, list[tuple[str, str | None, Any]]]:
    """Assert the event log explains every ask as the database holds it (read in one
    snapshot); each ask's events as (type, sender, data), by conversation."""
    with snapshot() as query:
        asks = query("SELECT id, conversation_id, status, outcome, mismatches, reminders_sent, escalated_at FROM asks")
        event_rows = query("SELECT ask_id, seq, type, sender, data FROM ask_events")
        stored_rows = query("SELECT message_id, reply FROM inbound_messages")
    events: dict[str, list[tuple[int, str, str | None, Any]]] = defaultdict(list)
    for ask_id, seq, kind, sender, data in event_rows:
        events[ask_id].append((int(seq), kind, sender, _json(data)))
    stored = {mid: _json(reply) for mid, reply in stored_rows}
    messages_on: Counter[str] = Counter(r["ask_id"] for r in stored.values() if r.get("ask_id") and r["kind"] != "pass")
    ids = {row[0] for row in asks}
    assert set(events) <= ids, f"events of asks that do not exist: {sorted(set(events) - ids)[:3]}"
    for mid, reply in acked.items():
        assert mid in stored, f"{mid}: acknowledged, and not stored"
        assert (stored[mid]["kind"], stored[mid].get("ask_id")) == (reply["kind"], reply.get("ask_id")), mid
    timelines: dict[str, list[tuple[str, str | None, Any]]] = {}
    for ask_id, conversation, status, outcome, misses, reminders, escalated_at in asks:
        log = sorted(events.get(ask_id, []))
        where = f"{conversation} ({status})"
        assert log, f"{where}: an ask without its events"
        assert [seq for seq, *_ in log] == list(range(1, len(log) + 1)), f"{where}: seq is not 1..n: {log}"
        kinds = [kind for _, kind, _, _ in log]
        assert kinds[0] == "parked", f"{where}: the first event is {kinds[0]}"
        assert kinds.count("parked") == 1, f"{where}: {kinds}"
        closes = [i for i, kind in enumerate(kinds) if kind == "closed"]
        if status == "open":
            assert not closes, f"{where}: an open ask has a closed event: {kinds}"
            last_vote = max((i for i, kind in enumerate(kinds) if kind == "voted"), default=0)
            counted = sum(1 for _, kind, _, data in log[last_vote:] if kind == "touched" and data["kind"] in MISSES)
            assert misses == counted, f"{where}: {misses} misses, {counted} in the log since the last vote"
        else:
            assert len(closes) == 1, f"{where}: {len(closes)} closed events: {kinds}"
            closed = log[closes[0]][3]
            assert (closed["status"], closed["outcome"]) == (status, outcome), f"{where}: {closed}"
            assert set(kinds[closes[0] + 1 :]) <= AFTER_CLOSE, f"{where}: changes after the close: {kinds}"
        written = sum(1 for kind in kinds if kind in MESSAGE_EVENTS)
        assert written == messages_on[ask_id], f"{where}: {written} message events, {messages_on[ask_id]} messages"
        # Reminders that fell due together fire as one (its number the count so far).
        numbers = [data["number"] for _, kind, _, data in log if kind == "reminded"]
        assert numbers == sorted(set(numbers)) and max(numbers, default=0) == reminders, f"{where}: {numbers}"
        assert kinds.count("escalated") == (escalated_at is not None), f"{where}: escalated at {escalated_at}: {kinds}"
        timelines[conversation] = [(kind, sender, data) for _, kind, sender, data in log]
    return timelines


# -- the scripted history -------------------------------------------------------------------

VOTERS = ["alice", "bob", "carol"]


@dataclass(frozen=True)
class Step:
    """One step of the script, at ``at`` seconds after ``T0``."""

    at: float
    kind: str  # park | message | due | cancel
    conversation: str = ""
    text: str = ""
    sender: str | None = None
    fields: Mapping[str, Any] = field(default_factory=dict)

    @property
    def message_id(self) -> str:
        return f"{self.conversation}@{self.at:g}"


def park(at: float, conversation: str, options: list[str] | None, **fields: Any) -> Step:
    return Step(at, "park", conversation, fields={"options": options, "ttl": 3600, **fields})


def message(at: float, conversation: str, text: str, sender: str | None = None) -> Step:
    return Step(at, "message", conversation, text, sender)


SCRIPT = [
    # vote: responders, a quorum of 2, a reminder, an escalation that adds dave
    park(
        0,
        "vote",
        ["Go", "Hold"],
        responders=VOTERS,
        quorum=2,
        remind_after=[60],
        escalate_after=300,
        escalate_to=["dave"],
    ),
    # the door script: park, two misses, a selection
    park(1, "door", ["Open", "Keep shut"]),
    park(2, "ttl", None, ttl=120),
    park(3, "abandoned", ["A", "B"]),
    park(4, "misses", ["A", "B"], ttl=600),
    message(10, "vote", "nope", "carol"),
    message(11, "vote", "1", "mallory"),
    message(12, "vote", "2", "alice"),
    message(13, "door", "nope"),
    message(14, "door", "still no"),
    message(15, "door", "2"),
    message(16, "ttl", "", "erin"),
    message(17, "abandoned", "what?"),
    Step(18, "cancel", "abandoned"),
    message(20, "misses", "nope"),
    message(21, "misses", "no idea"),
    message(22, "misses", "what?"),
    Step(80, "due"),  # vote's reminder
    message(90, "vote", "maybe", "bob"),
    Step(200, "due"),  # ttl expires
    message(201, "ttl", "too late", "erin"),  # after the close: a pass, no event
    Step(400, "due"),  # vote's escalation (300 s after the park)
    message(401, "vote", "menu", "dave"),
    message(402, "vote", "2", "bob"),
    message(700, "misses", "well"),  # past its TTL: the message's read closes it as expired
]

EXPECTED = {
    "vote": [
        ("parked", None),
        ("touched", "carol"),
        ("refused", "mallory"),
        ("voted", "alice"),
        ("reminded", None),
        ("touched", "bob"),
        ("escalated", None),
        ("touched", "dave"),
        ("voted", "bob"),
        ("closed", "bob"),
    ],
    "door": [("parked", None), ("touched", None), ("touched", None), ("touched", None), ("closed", None)],
    "ttl": [("parked", None), ("touched", "erin"), ("closed", None)],
    "abandoned": [("parked", None), ("touched", None), ("closed", "operator")],
    "misses": [("parked", None), ("touched", None), ("touched", None), ("touched", None), ("closed", None)],
}


def run_step(gateway: Gateway, step: Step, ask_ids: Mapping[str, str]) -> Any:
    """Do ``step`` at its moment; what its caller would be told."""
    clock = gateway.clock
    assert isinstance(clock, ManualClock)
    clock.set(T0 + timedelta(seconds=step.at))
    if step.kind == "park":
        fields = dict(step.fields)
        options = fields.pop("options")
        reply = gateway.ask(step.conversation, f"Decide {step.conversation}?", options, key=step.conversation, **fields)
        return {"ask_id": reply.ask_id}
    if step.kind == "message":
        reply = gateway.handle(step.conversation, step.text, message_id=step.message_id, sender=step.sender)
        return reply.to_dict()
    if step.kind == "due":
        return {"fired": gateway.read_due()}
    assert step.kind == "cancel"
    return {"status": gateway.cancel(ask_ids[step.conversation]).status.value}


def test_kill_9_at_every_point_of_every_change_leaves_it_with_its_event(spec: StoreSpec) -> None:
    spec.store().close()
    ask_ids: dict[str, str] = {}
    acked: dict[str, dict[str, Any]] = {}
    landed: Counter[str] = Counter()
    kills = 0
    with reader(spec) as snapshot:
        for position, step in enumerate(SCRIPT):
            # Every other message finds its conversation remembered, as a long-running
            # process does (the store's guess: on PostgreSQL the change, its events and
            # the stored reply in one statement), the others read it first.
            warm = step.kind == "message" and position % 2 == 0
            point = 1
            while True:

                def body(
                    gateway: Gateway,
                    points: KillPoints,
                    ack: Callable[[Any], None],
                    step: Step = step,
                    warm: bool = warm,
                ) -> None:
                    if warm:  # what this process would remember had it served the last message
                        with gateway.store.transaction() as tx:
                            ask = tx.ask(ask_ids[step.conversation])
                        assert ask is not None
                        gateway.store.recent.committed({step.conversation: ask if ask.is_open else None})
                    points.armed = True
                    result = run_step(gateway, step, ask_ids)
                    points.armed = False
                    ack(result)

                child = in_child(spec, point, body)
                check_log(snapshot, acked)
                if not child.killed:
                    break
                kills += 1
                landed[child.killed_before or "?"] += 1
                point += 1
                assert point < 40, f"{step}: more kill points than any step has"
            (result,) = child.acks()
            if step.kind == "park":
                ask_ids[step.conversation] = result["ask_id"]
            elif step.kind == "message":
                acked[step.message_id] = result
            assert point > 2, f"{step}: fewer kill points than a transaction has"
        timelines = check_log(snapshot, acked)
    seen = {conversation: [(kind, sender) for kind, sender, _ in log] for conversation, log in timelines.items()}
    assert seen == EXPECTED, "a retried step after a kill added or lost an event"
    assert timelines["vote"][-1][2]["status"] == "answered" and timelines["ttl"][-1][2]["status"] == "expired"
    # Where the kills landed: between each change and its events, where the engine sends
    # them apart, and with the change and its events sent, before and after the commit.
    assert landed["events insert"] >= 15 and landed["commit"] >= 15 and landed["after commit"] >= 15, landed
    if spec.engine == "postgres":
        assert landed["change with its events"] >= 5, landed
    assert kills >= 100, f"only {kills} kills"


def statement_kind(statement: str) -> str:
    """What a kill point is, in a word or three (the test counts where its kills landed)."""
    text = " ".join(statement.split()).upper()
    if text.startswith("AFTER THE COMMIT"):
        return "after commit"
    if text.startswith("COMMIT") or text.startswith("THE PIPELINE"):
        return "commit"
    if text.startswith("WITH") and "ASK_EVENTS" in text:  # PostgreSQL's one statement
        return "change with its events"
    if text.startswith("INSERT INTO ASK_EVENTS"):
        return "events insert"
    return text.split(" ")[0].lower()


# -- bursts ---------------------------------------------------------------------------------

BURSTS = 3
THREADS = 8
PER_THREAD = 12
BURST_TEXTS = ["nope", "menu", "1", "2", "what?", "hmm"]


def _burst_plan(tag: str, rng: random.Random) -> list[list[tuple[str, str, str]]]:
    """(conversation, text, message_id + sender) per thread: most messages miss or are refused."""
    plans: list[list[tuple[str, str, str]]] = []
    for n in range(THREADS):
        plan = []
        for m in range(PER_THREAD):
            conversation = f"{tag}-{rng.randrange(4)}"
            text = rng.choices(BURST_TEXTS, weights=[5, 1, 1, 1, 3, 3])[0]
            sender = rng.choice([*VOTERS, "mallory"])
            plan.append((conversation, text, f"{tag}-{n}-{m}/{sender}"))
        plans.append(plan)
    return plans


def _send_burst(
    gateway: Gateway,
    points: KillPoints,
    ack: Callable[[Any], None],
    plans: list[list[tuple[str, str, str]]],
    done: set[str],
    tag: str,
) -> None:
    """Park the round's asks, then send every plan from its own thread while one more
    thread fires due reminders; each answer is reported as it comes, and the kill points
    are armed from the first answer."""
    clock = gateway.clock
    assert isinstance(clock, ManualClock)
    for c in range(4):
        conversation = f"{tag}-{c}"
        fields: dict[str, Any] = {"responders": VOTERS, "quorum": 2} if c % 2 == 0 else {}
        gateway.ask(conversation, "Deploy?", ["Go", "Hold"], key=conversation, remind_after=[30, 60], **fields)
    clock.advance(100)  # every reminder is due
    start = threading.Barrier(THREADS + 1)

    def send(plan: list[tuple[str, str, str]]) -> None:
        start.wait(30)
        for conversation, text, mid in plan:
            if mid not in done:
                reply = gateway.handle(conversation, text, message_id=mid, sender=mid.rsplit("/", 1)[1])
                ack({"message_id": mid, "reply": reply.to_dict()})
                # Points are counted from the first answer on: a kill lands mid-burst, with
                # some messages answered, however many the first group commit holds.
                points.armed = True

    def remind() -> None:
        start.wait(30)
        for _ in range(5):
            gateway.read_due()

    threads = [threading.Thread(target=send, args=(plan,)) for plan in plans]
    threads.append(threading.Thread(target=remind))
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(CHILD_TIMEOUT)
    points.armed = False
    ack({"points": points.count})


def test_kill_9_during_bursts_of_concurrent_messages_leaves_every_change_with_its_event(spec: StoreSpec) -> None:
    spec.store().close()
    rng = random.Random(42)
    acked: dict[str, dict[str, Any]] = {}
    # A burst with no kill measures how many points a burst has after its first answer:
    # the kills aim inside it.
    tally = in_child(spec, None, partial(_send_burst, plans=_burst_plan("m", rng), done=set(), tag="m"))
    assert not tally.killed
    points = tally.acks()[-1]["points"]
    acked.update({item["message_id"]: item["reply"] for item in tally.acks() if "message_id" in item})
    total = THREADS * PER_THREAD
    with reader(spec) as snapshot:
        for round_no in range(BURSTS):
            tag = f"b{round_no}"
            plans = _burst_plan(tag, rng)
            kill_at = rng.randrange(points // 10, points * 2 // 3)
            first = in_child(spec, kill_at, partial(_send_burst, plans=plans, done=set(), tag=tag))
            assert first.killed, "the burst ended before its kill"
            answered = {item["message_id"]: item["reply"] for item in first.acks() if "message_id" in item}
            assert 0 < len(answered) < total, f"the kill landed outside the burst ({len(answered)} of {total})"
            acked.update(answered)
            check_log(snapshot, acked)
            # The clients send again what was not answered (same message_id): no event twice.
            again = in_child(spec, None, partial(_send_burst, plans=plans, done=set(answered), tag=tag))
            acked.update({item["message_id"]: item["reply"] for item in again.acks() if "message_id" in item})
            assert len(acked) == (round_no + 2) * total, "a message was never answered"
            timelines = check_log(snapshot, acked)
    kinds = {kind for conversation, log in timelines.items() if conversation.startswith("b") for kind, _, _ in log}
    assert {"touched", "voted", "refused", "reminded"} <= kinds, f"the bursts wrote only {sorted(kinds)}"
