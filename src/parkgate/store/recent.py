"""What this process last committed about each conversation's open ask.

Both stores use it to decide a message without reading first: they guess that the
conversation's open ask is the one this process last wrote or read, and let the writes
check it. PostgreSQL sends, at the head of the same round trip as the writes, a check
that aborts the whole transaction if the guess is wrong (see ``parkgate_claim`` in
migration 3); SQLite's ``UPDATE`` changes the ask only if it is still as remembered
(see :class:`parkgate.store.sqlite.SQLiteTransaction`). A wrong guess therefore costs a
retry, never a wrong answer: the memory is a hint, the database stays the only truth,
and nothing here needs to be invalidated in time.

Bounded (least recently used first out), so a million parked conversations cost no
more memory than a thousand.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterable, Mapping

from parkgate.core.model import Ask

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
