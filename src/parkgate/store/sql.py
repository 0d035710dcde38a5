"""What both SQL engines share on a message's path: the statements and row codecs, and
the memory of open asks they decide from. No class hierarchy: an engine's transaction is
a :class:`Runner` that calls these functions and holds a :class:`Guesses`.

Statements are written once with ``?`` placeholders; the engine's :class:`Dialect`
rewrites them for its driver, and every value travels as a parameter. The memory is a
hint, never the truth: an engine guesses that a conversation's open ask is the one this
process last committed, and its writes check the guess (``parkgate_step`` or
``parkgate_claim`` on PostgreSQL, a conditional ``UPDATE`` on SQLite). A wrong guess costs
a retry with a real read, never a wrong answer. The memory is bounded (least recently
used first out).
"""

from __future__ import annotations

import enum
import json
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from parkgate.core.events import NewEvent
from parkgate.core.model import Ask, Run, RunStatus, encode_votes
from parkgate.store.ask_rows import MUTABLE_ASK_SET, RUN_ROWS, ask_from_row, mutable_values
from parkgate.store.dialect import Dialect, Runner, Statement
from parkgate.store.sql_inserts import (
    ask_insert,
    callback_insert,
    channel_job_inserts,
    follow_up_insert,
    read_reply,
    read_run,
    schedule_update,
)
from parkgate.store.writes import RunChange, StoredReply, Writes

__all__ = [
    "Runner",
    "Statement",
    "ask_from_row",
    "ask_insert",
    "callback_insert",
    "encode_votes",
    "follow_up_insert",
    "read_reply",
    "read_run",
]


def mutable_fields(ask: Ask, dialect: Dialect) -> tuple[Any, ...]:
    """The values of :data:`~parkgate.store.ask_rows.MUTABLE_ASK_SET` for ``ask``, in its order."""
    return mutable_values(ask, dialect.encode_time)


#: A run's insert, or the update of what changes in it (its status, outcome, answers and pending ask).
_RUN_UPSERT = (
    f"INSERT INTO runs ({RUN_ROWS.columns}) VALUES ({RUN_ROWS.placeholders()}) "
    "ON CONFLICT (id) DO UPDATE SET status = excluded.status, outcome = excluded.outcome, "
    "context = excluded.context, pending_ask_id = excluded.pending_ask_id, "
    "updated_at = excluded.updated_at, output = excluded.output"
)


def run_upsert(run: Run, dialect: Dialect) -> Statement:
    return _RUN_UPSERT, tuple(RUN_ROWS.values(run, dialect.encode_time))


def _stored_status(status: object) -> object:
    """A run status as the driver binds it fastest: the enum's plain string value."""
    return status.value if isinstance(status, RunStatus) else status


def run_change_values(change: RunChange, dialect: Dialect) -> tuple[Any, ...]:
    """A run change's values: id, status, outcome, pending ask, time (``parkgate_step``'s order)."""
    status = _stored_status(change.status)
    return (change.run_id, status, change.outcome, change.pending_ask_id, dialect.encode_time(change.at))


def run_change(change: RunChange, dialect: Dialect) -> Statement:
    status = _stored_status(change.status)
    return (
        "UPDATE runs SET status = ?, outcome = ?, pending_ask_id = ?, updated_at = ? WHERE id = ?",
        (status, change.outcome, change.pending_ask_id, dialect.encode_time(change.at), change.run_id),
    )


_REPLY_INSERT = "INSERT INTO inbound_messages (conversation_id, message_id, reply, received_at)"


def reply_insert(reply: StoredReply, dialect: Dialect) -> Statement:
    return (
        f"{_REPLY_INSERT} VALUES (?, ?, ?, ?)",
        (reply.conversation_id, reply.message_id, reply.reply, dialect.encode_time(reply.at)),
    )


_PASS_INSERT = (
    f"{_REPLY_INSERT} SELECT ?, ?, ?, ? "
    "WHERE NOT EXISTS (SELECT 1 FROM asks WHERE conversation_id = ? AND status = 'open') "
    "ON CONFLICT DO NOTHING RETURNING 1"
)


def store_pass(runner: Runner, reply: StoredReply) -> bool:
    """:func:`reply_insert` of a ``pass``, only where its conversation has no open ask
    (:meth:`MessageTransaction.store_pass <parkgate.store.base.MessageTransaction.store_pass>`);
    a row that is not inserted (an ask is open, or the ``message_id`` is stored already)
    raises nothing."""
    conversation_id, at = reply.conversation_id, runner.dialect.encode_time(reply.at)
    row = (conversation_id, reply.message_id, reply.reply, at, conversation_id)
    return bool(runner.query(_PASS_INSERT, row).fetchall())


def save_ask(ask: Ask, dialect: Dialect) -> Statement:
    """Write the mutable fields of ``ask`` (status, answer, counters, stamps)."""
    return (
        f"UPDATE asks SET status = ?, {MUTABLE_ASK_SET} WHERE id = ?",
        (ask.status.value, *mutable_fields(ask, dialect), ask.id),
    )


#: One event, numbered after its ask's last. The number is a scalar subquery in VALUES:
#: ``INSERT ... SELECT ... FROM ask_events`` would have SQLite copy the SELECT's row into
#: a temporary table first (it reads the table it writes), about three times the cost.
_INSERT = (
    "INSERT INTO ask_events (ask_id, seq, at, type, sender, owner, data) "
    "VALUES (?, (SELECT COALESCE(MAX(seq), 0) + 1 FROM ask_events WHERE ask_id = ?), ?, ?, ?, ?, ?)"
)


#: The compact JSON encoder of events' ``data`` (one object: no options parsed per event).
_ENCODE = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), default=str).encode
#: The ``data`` of a miss, a menu or a refusal (its reply kind alone), encoded once per kind.
_KIND_ONLY: dict[str, str] = {}


def encoded_data(data: Any) -> str:
    """An event's ``data`` as the text the log keeps (compact JSON)."""
    if len(data) == 1 and "kind" in data:  # most messages' events: a reply kind alone
        kind = data["kind"]
        text = _KIND_ONLY.get(kind)
        if text is None:
            text = _KIND_ONLY[kind] = _ENCODE(data)
        return text
    return _ENCODE(data)


def event_insert(event: NewEvent, dialect: Dialect) -> Statement:
    """The INSERT of ``event``, numbered after the events its ask has (those written before it included)."""
    return _INSERT, (
        event.ask_id,
        event.ask_id,
        dialect.encode_time(event.at),
        event.type.value,
        event.sender,
        event.owner,
        encoded_data(event.data),
    )


# -- the reads and writes of a message -----------------------------------------------------


def read_open_ask(runner: Runner, conversation_id: str) -> Ask | None:
    """The conversation's open ask as the database has it (locked where the dialect locks)."""
    dialect = runner.dialect
    row = runner.query(dialect.open_ask_sql, (conversation_id,)).fetchone()
    return ask_from_row(row, dialect.decode_time) if row else None


def read_message_context(runner: Runner, conversation_id: str, message_id: str | None) -> tuple[str | None, Ask | None]:
    """Both reads of a message in one statement: ``(stored reply, None)`` for a message
    seen before, else ``(None, the open ask)``."""
    if message_id is None:
        return None, read_open_ask(runner, conversation_id)
    dialect = runner.dialect
    row = runner.query(dialect.message_context_sql, (conversation_id, message_id, conversation_id)).fetchone()
    earlier = row[0]
    if earlier is not None:
        return str(earlier), None
    return None, (ask_from_row(row[1:], dialect.decode_time) if row[1] is not None else None)


def read_ask(runner: Runner, ask_id: str) -> Ask | None:
    """Any ask by id, locked where the dialect locks."""
    dialect = runner.dialect
    row = runner.query(dialect.ask_by_id_sql, (ask_id,)).fetchone()
    return ask_from_row(row, dialect.decode_time) if row else None


def apply_writes(writes: Writes, runner: Runner, save: Callable[[Ask], None], insert: Callable[[Ask], None]) -> None:
    """Send ``writes`` statement by statement, in the order :class:`Writes` gives; an
    ask's update and insert go through the engine's ``save`` and ``insert``."""
    dialect, send = runner.dialect, runner.send
    for step in writes.steps:
        save(step.ask)
        if step.run is not None:
            send(*run_change(step.run, dialect))
    for run in writes.runs:
        send(*run_upsert(run, dialect))
    if writes.park is not None:
        send(*run_upsert(writes.park.run, dialect))
        insert(writes.park.ask)
        if writes.park.follow_up:
            send(*follow_up_insert(writes.park.ask.id, writes.park.watcher))
    if writes.reply is not None:
        send(*reply_insert(writes.reply, dialect))
    for callback in writes.callbacks:
        send(*callback_insert(callback, dialect))
    for job in writes.channel_jobs:
        for statement in channel_job_inserts(job, dialect):
            send(*statement)
    for ask in writes.fired:
        send(*schedule_update(ask, dialect))
    for event in writes.events:
        send(*event_insert(event, dialect))


# -- the memory of open asks ------------------------------------------------------------------

#: How many conversations a store remembers by default: an entry is one small Ask, or
#: nothing for a conversation with none open (the usual one, whose messages with a
#: ``message_id`` SQLite then decides without a read); a few MB at most.
DEFAULT_SIZE = 16384


class Marker(enum.Enum):
    """A remembered state that is not an ask."""

    #: Not remembered: never seen by this process, or pushed out by newer conversations.
    UNSEEN = "UNSEEN"
    #: The last transaction here failed (maybe on a wrong guess): read it for real next time.
    STALE = "STALE"


UNSEEN, STALE = Marker.UNSEEN, Marker.STALE


class RecentOpenAsks:
    """conversation id -> its open ask (or ``None``: nothing open), as last committed here:
    the policy a store holds and hands to each transaction's :class:`Guesses`."""

    def __init__(self, size: int = DEFAULT_SIZE) -> None:
        if size < 0:
            raise ValueError("size must be 0 (remember nothing) or more")
        self.size = size
        self._entries: OrderedDict[str, Ask | Marker | None] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, conversation_id: str) -> Ask | Marker | None:
        """The remembered state, :data:`UNSEEN`, or :data:`STALE`."""
        with self._lock:
            found = self._entries.get(conversation_id, UNSEEN)
            if found is not UNSEEN:
                self._entries.move_to_end(conversation_id)
            return found

    def committed(self, states: Mapping[str, Ask | None]) -> None:
        """Remember the state a committed transaction left each conversation in.

        A conversation marked :data:`STALE` stays so: a wrong guess there means another
        process serves it too, and guessing again would mostly cost more retries.
        """
        if states:  # most reads (get, audit) leave nothing to remember
            self._put(states.items(), keep_stale=True)

    def failed(self, conversation_ids: Iterable[str]) -> None:
        """After a failed transaction: its conversations are read for real from now on."""
        self._put(((conversation_id, STALE) for conversation_id in conversation_ids), keep_stale=False)

    def _put(self, entries: Iterable[tuple[str, Ask | Marker | None]], *, keep_stale: bool) -> None:
        if not self.size:
            return
        with self._lock:
            for conversation_id, state in entries:
                if isinstance(state, Ask) and state.escalate_after is not None and state.escalated_at is None:
                    # An escalation may add responders from another process, and no check of
                    # a remembered ask covers them: such an ask is read for real until it escalates.
                    self._entries.pop(conversation_id, None)
                    continue
                if keep_stale and self._entries.get(conversation_id) is STALE:
                    state = STALE
                self._entries[conversation_id] = state
                self._entries.move_to_end(conversation_id)
            while len(self._entries) > self.size:
                self._entries.popitem(last=False)

    def __len__(self) -> int:
        return len(self._entries)


class Guesses:
    """One transaction's use of a store's :class:`RecentOpenAsks`: at most one read answered
    from memory (the guess, whose check covers one conversation), and ``states``, what the
    transaction leaves each conversation in, remembered when it commits (:meth:`end`).
    ``decides_on_nothing_open``: whether a message may be decided on a remembered "nothing
    open" (PostgreSQL checks it in the writes' round trip; SQLite would need the read it saves).
    """

    __slots__ = ("_on_nothing_open", "_recent", "guessed", "states")

    def __init__(self, recent: RecentOpenAsks, *, decides_on_nothing_open: bool) -> None:
        self._recent = recent
        self._on_nothing_open = decides_on_nothing_open
        #: Whether a read was answered from memory (and so is checked only by the writes).
        self.guessed = False
        #: conversation -> its open ask (None: none) as this transaction leaves it.
        self.states: dict[str, Ask | None] = {}

    def guess(self, conversation_id: str, *, parking: bool) -> Ask | Marker | None:
        """The state to answer a read from (an ask, or None: none open), or :data:`STALE`:
        read for real. Parking where this process has seen nothing guesses "none open":
        the usual case, which the unique index on open asks checks."""
        if self.guessed or not self._recent.size:
            return STALE
        known = self._recent.get(conversation_id)
        if known is UNSEEN and parking:
            known = None
        if isinstance(known, Marker) or (known is None and not parking and not self._on_nothing_open):
            return STALE
        self.guessed = True
        self.states[conversation_id] = known
        return known

    def remembers_nothing_open(self, conversation_id: str) -> bool:
        """Whether this process last left (or read) the conversation with no open ask."""
        return bool(self._recent.size) and self._recent.get(conversation_id) is None

    def wrote(self, writes: Writes) -> None:
        """Note the state ``writes`` leave their conversations in."""
        for step in writes.steps:
            self.states[step.ask.conversation_id] = step.ask if step.ask.is_open else None
        if writes.park is not None:
            self.states[writes.park.ask.conversation_id] = writes.park.ask
        for ask in writes.fired:
            self.states[ask.conversation_id] = ask

    def end(self, committed: bool) -> None:
        """Remember what a committed transaction left, or mark a failed one's conversations stale."""
        if committed:
            self._recent.committed(self.states)
        else:
            self._recent.failed(self.states)
