"""The SQLite transaction: decided from memory before the write lock is taken, its guess
checked by the writes themselves (see :class:`SQLiteTransaction`)."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from parkgate.core.model import Ask, AskStatus
from parkgate.store.recent import RecentOpenAsks, RememberingTransaction
from parkgate.store.sql import MUTABLE_ASK_SET, Dialect, mutable_fields

#: The last time encoded and its text. A message's writes stamp one ``now`` several times
#: (asked_at, last_touched, the run's updated_at...), and isoformat() is costly enough to
#: do once. One tuple, read and replaced whole, so threads never see a torn pair.
_last_encoded: tuple[datetime, str] | None = None


def _encode(moment: datetime) -> str:
    global _last_encoded
    last = _last_encoded
    if last is not None and last[0] is moment:
        return last[1]
    utc = moment if moment.tzinfo is UTC else moment.astimezone(UTC)  # the clock's times are UTC already
    text = utc.isoformat(timespec="microseconds")
    _last_encoded = (moment, text)
    return text


def _decode(raw: str) -> datetime:
    return datetime.fromisoformat(raw)


def _encode_due(moment: datetime) -> float:
    return moment.timestamp()


def _decode_due(raw: float) -> datetime:
    return datetime.fromtimestamp(raw, UTC)


DIALECT = Dialect(
    placeholder="?",
    lock_suffix="",
    encode_time=_encode,
    decode_time=_decode,
    encode_due=_encode_due,
    decode_due=_decode_due,
    # As migration 5's trigger computes due_at.
    due_expression=(
        "(round((julianday(substr(last_touched, 1, 19)) - 2440587.5) * 86400.0) "
        "+ CAST(substr(last_touched, 21, 6) AS INTEGER) / 1000000.0 + ttl_seconds)"
    ),
    skip_locked_suffix="",  # one writer at a time: BEGIN IMMEDIATE holds the file
)


class _StaleGuess(Exception):
    """The conversation was not as this process remembered it: retry with a real read."""


class SQLiteTransaction(RememberingTransaction):
    """One write transaction, begun at its first statement, that may decide from memory.

    ``BEGIN IMMEDIATE`` is sent just before the first statement, not on entry: a message
    whose conversation ``recent`` remembers reads nothing, so it is decided (the matcher,
    the reply) before the write lock is taken, and another writer on the file waits only
    for the writes. The remembered open ask is then checked by the first write that
    touches it: the ``UPDATE`` changes the row only if it is still open exactly as
    remembered (id, last touch, miss count and TTL, as PostgreSQL's ``parkgate_step``
    checks), and the stored reply's primary key refuses a ``message_id`` seen before. A
    new ask where nothing is remembered open is checked by the unique index on open
    asks. Any failed check raises, everything rolls back, and the gateway retries the
    message with a real read (see :mod:`parkgate.store.recent`).
    """

    def __init__(self, cursor: sqlite3.Cursor, recent: RecentOpenAsks | None) -> None:
        super().__init__(cursor, DIALECT, recent)
        self.began = False
        #: The state answered from memory and not yet checked by a write: the remembered
        #: open ask, or the id of a conversation remembered (or guessed) to have none.
        self._unchecked: Ask | str | None = None

    def _exec(self, statement: str, params: Sequence[Any] = ()) -> Any:
        if not self.began:
            self._cur.execute("BEGIN IMMEDIATE")
            self.began = True
        return self._cur.execute(statement, params)

    def _guessed(self, conversation_id: str, message_id: str | None, known: Ask | None) -> None:
        """A reply is guessed only onto a remembered open ask (see ``decides_on_nothing_open``);
        parking guesses "none open" unless an ask is remembered."""
        self._unchecked = known if known is not None else conversation_id

    # -- writes (each the check of a guess it touches) -----------------------------------------
    def insert_ask(self, ask: Ask) -> None:
        if self._unchecked == ask.conversation_id:
            self._unchecked = None  # the unique index on open asks refuses it if one is open
        super().insert_ask(ask)

    def save_ask(self, ask: Ask) -> None:
        expected = self._unchecked
        if isinstance(expected, Ask) and expected.id == ask.id:
            self._unchecked = None
            self._save_if_unchanged(ask, expected)
            return
        if ask.status is AskStatus.OPEN:
            # An ask that stays open (a bounce, a re-show) changes only when it was last
            # touched and its miss count: an open ask has no outcome, answer or answer time.
            # Writing just those leaves `status` out of the SET, so SQLite does not rewrite
            # the two partial indexes keyed on it, and binds no NULLs (each costs the sqlite3
            # module an adaptation lookup). The row is still open (this transaction holds the
            # write lock), so the result is the same; if it is not, the full UPDATE runs.
            self._exec(
                "UPDATE asks SET last_touched = ?, mismatches = ? WHERE id = ? AND status = 'open'",
                (self._dialect.encode_time(ask.last_touched), ask.mismatches, ask.id),
            )
            if self._cur.rowcount == 1:
                return
        super().save_ask(ask)

    def _save_if_unchanged(self, ask: Ask, expected: Ask) -> None:
        """Write ``ask`` over the row only if it is still ``expected``; else the guess was stale."""
        check = self._as_remembered(expected)
        if ask.status is AskStatus.OPEN:  # as in save_ask: the partial indexes stay untouched
            self._exec(_TOUCH_IF_UNCHANGED, (self._dialect.encode_time(ask.last_touched), ask.mismatches, *check))
        else:
            self._exec(_SAVE_IF_UNCHANGED, (ask.status.value, *mutable_fields(ask, self._dialect), *check))
        if self._cur.rowcount != 1:
            raise _StaleGuess(f"ask {expected.id} changed since this process last saw it")

    def finish(self) -> None:
        """Check a guess that no write checked (a body that wrote nothing it touched)."""
        unchecked, self._unchecked = self._unchecked, None
        if unchecked is None:
            return
        if isinstance(unchecked, Ask):
            self._exec(_STILL_UNCHANGED, self._as_remembered(unchecked))
            as_remembered = self._cur.fetchone() is not None
        else:
            self._exec("SELECT 1 FROM asks WHERE conversation_id = ? AND status = 'open'", (unchecked,))
            as_remembered = self._cur.fetchone() is None
        if not as_remembered:
            raise _StaleGuess("the conversation changed since this process last saw it")

    def _as_remembered(self, expected: Ask) -> tuple[Any, ...]:
        """The parameters of :data:`_UNCHANGED` for ``expected``."""
        touched = self._dialect.encode_time(expected.last_touched)
        return (expected.id, touched, expected.mismatches, expected.ttl_seconds)


_UNCHANGED = "id = ? AND status = 'open' AND last_touched = ? AND mismatches = ? AND ttl_seconds = ?"
_TOUCH_IF_UNCHANGED = f"UPDATE asks SET last_touched = ?, mismatches = ? WHERE {_UNCHANGED}"
_SAVE_IF_UNCHANGED = f"UPDATE asks SET status = ?, {MUTABLE_ASK_SET} WHERE {_UNCHANGED}"
_STILL_UNCHANGED = f"SELECT 1 FROM asks WHERE {_UNCHANGED}"
