"""What this process last committed about each conversation's open ask, and the
transactions that decide from it.

Both stores use it to decide a message without reading first: they guess that the
conversation's open ask is the one this process last wrote or read, and let the writes
check it. PostgreSQL sends, at the head of the same round trip as the writes, a check
that aborts the whole transaction if the guess is wrong (see ``parkgate_claim`` in
migration 3); SQLite's ``UPDATE`` changes the ask only if it is still as remembered
(see :class:`parkgate.store.sqlite_transaction.SQLiteTransaction`). A wrong guess therefore costs a
retry, never a wrong answer: the memory is a hint, the database stays the only truth,
and nothing here needs to be invalidated in time.

Bounded (least recently used first out), so a million parked conversations cost no
more memory than a thousand.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from typing import Any

from parkgate.core.model import Ask
from parkgate.store.base import StoreConflict, StoreError
from parkgate.store.sql import Dialect, SqlTransaction
from parkgate.store.writes import Writes

#: How many conversations a store remembers by default (an entry is one small Ask).
DEFAULT_SIZE = 4096


class Marker:
    """A state that is not an ask: see :data:`UNSEEN` and :data:`STALE`."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name


#: Not remembered: never seen by this process, or pushed out by newer conversations.
UNSEEN = Marker("UNSEEN")
#: The last transaction here failed (maybe on a wrong guess): read it for real next time.
STALE = Marker("STALE")


class RecentOpenAsks:
    """conversation id -> its open ask (or ``None``: nothing open), as last committed here."""

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
                if keep_stale and self._entries.get(conversation_id) is STALE:
                    state = STALE
                self._entries[conversation_id] = state
                self._entries.move_to_end(conversation_id)
            while len(self._entries) > self.size:
                self._entries.popitem(last=False)

    def __len__(self) -> int:
        return len(self._entries)


class RememberingTransaction(SqlTransaction):
    """A transaction whose reads of a conversation's open ask may be answered from what
    this process last committed.

    One read per transaction may be answered from memory (the guess); the engine checks
    it with its writes (:meth:`_guessed` tells it what to check). The transaction records
    what it leaves each conversation in, ``states``, for the store to remember once it
    commits, or to mark stale if it fails.
    """

    #: Whether a message may be decided on a remembered "nothing open": PostgreSQL checks
    #: that in the same round trip as the writes; SQLite would need the read it saves.
    decides_on_nothing_open = False

    def __init__(self, cursor: Any, dialect: Dialect, recent: RecentOpenAsks | None) -> None:
        super().__init__(cursor, dialect)
        self._recent = recent if recent is not None and recent.size else None
        #: Whether a read was answered from memory (and so is checked only by the writes).
        self.guessed = False
        #: conversation -> its open ask (None: none) as this transaction leaves it.
        self.states: dict[str, Ask | None] = {}

    def _guess(self, conversation_id: str, message_id: str | None, *, parking: bool) -> Ask | Marker | None:
        """The state to answer a read from (an ask, or None: none open), or a marker: read
        for real. Parking where this process has seen nothing guesses "none open": that is
        the usual case, the unique index on open asks checks it, and a wrong guess costs
        one retry."""
        if self._recent is None or self.guessed:
            return STALE  # one guess per transaction: its check covers one conversation
        known = self._recent.get(conversation_id)
        if known is UNSEEN and parking:
            known = None
        if isinstance(known, Marker) or (known is None and not parking and not self.decides_on_nothing_open):
            return STALE
        self.guessed = True
        self.states[conversation_id] = known
        self._guessed(conversation_id, message_id, known)
        return known

    def _guessed(self, conversation_id: str, message_id: str | None, known: Ask | None) -> None:
        """Note what the writes must check: ``known`` is the conversation's state as guessed."""

    def _before_read(self, conversation_id: str) -> None:
        """Runs before a real read of the conversation's open ask (PostgreSQL locks it)."""

    def open_ask(self, conversation_id: str) -> Ask | None:
        known = self._guess(conversation_id, None, parking=True)
        if not isinstance(known, Marker):
            return known
        self._before_read(conversation_id)
        found = self._read_open_ask(conversation_id)
        self.states[conversation_id] = found
        return found

    def message_context(self, conversation_id: str, message_id: str | None) -> tuple[str | None, Ask | None]:
        known = self._guess(conversation_id, message_id, parking=False)
        if not isinstance(known, Marker):
            return None, known
        self._before_read(conversation_id)
        earlier, found = super().message_context(conversation_id, message_id)
        if earlier is None:
            self.states[conversation_id] = found
        return earlier, found

    def write(self, writes: Writes) -> None:
        for step in writes.steps:
            self.states[step.ask.conversation_id] = step.ask if step.ask.is_open else None
        if writes.park is not None:
            self.states[writes.park.ask.conversation_id] = writes.park.ask
        self._apply(writes)

    #: Writes ``writes`` in the engine's form: statement by statement here; PostgreSQL
    #: holds a guessed unit's writes back to send them with its check.
    _apply = SqlTransaction.write


def retry_after_guess(error: BaseException | None) -> StoreConflict | None:
    """The conflict to raise when a transaction that answered a read from memory failed
    with ``error`` that is not the store's (an ask already open, say, or a stale guess):
    the state it acted on may have been stale, so the gateway retries with a real read,
    which raises the caller's error again if it stands. ``None``: let ``error`` through."""
    if isinstance(error, Exception) and not isinstance(error, StoreError):
        return StoreConflict(f"retrying with a real read after {type(error).__name__}: {error}")
    return None
