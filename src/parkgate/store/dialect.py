"""How each SQL engine spells the shared statements: a :class:`Dialect`. The column lists
every statement names are derived from the asks' and runs' declarations
(:mod:`parkgate.store.ask_rows`).

A dialect is data: the placeholder, the locks, how times are stored, and the locked
reads of a message built once per dialect.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import cached_property
from typing import Any, Protocol

from parkgate.store.ask_rows import ASK_COLUMNS


@dataclass(frozen=True)
class Dialect:
    """How an engine writes SQL: its placeholder, locks, and how times are stored."""

    placeholder: str  # "?" or "%s"
    lock_suffix: str  # "" or " FOR UPDATE"
    encode_time: Callable[[datetime], Any]
    decode_time: Callable[[Any], datetime]
    #: ``due_at`` as stored (Unix seconds on SQLite, a timestamp on PostgreSQL), both ways.
    encode_due: Callable[[datetime], Any]
    decode_due: Callable[[Any], datetime]
    #: An ask row's due time computed from its columns, in ``due_at``'s form.
    due_expression: str
    #: The lock of the due read: rows another worker is reading are skipped, not waited for.
    skip_locked_suffix: str
    #: The text at a top-level key of a JSON text column: ``{column}`` and ``{key}`` (a
    #: placeholder) filled in; a list's JSON text, a number's digits.
    json_text: str = "CAST(json_extract({column}, '$.' || {key}) AS TEXT)"
    #: The function that finds text in text: ``position(haystack, needle)``, 0 when absent.
    position: str = "instr"

    # The locked reads, built once per dialect: they run on every message, and an f-string
    # rebuilt per call is a new string each time (hashed again by the statement cache).
    @cached_property
    def open_ask_sql(self) -> str:
        return f"SELECT {ASK_COLUMNS} FROM asks WHERE conversation_id = ? AND status = 'open'" + self.lock_suffix

    @cached_property
    def message_context_sql(self) -> str:
        # One statement for both reads of a message: its stored reply (a redelivery) and
        # the conversation's open ask, locked. The LEFT JOIN keeps the row when no ask is open.
        return (
            "SELECT (SELECT reply FROM inbound_messages WHERE conversation_id = ? AND message_id = ?), a.* "
            f"FROM (SELECT 1) AS one LEFT JOIN ({self.open_ask_sql}) AS a ON 1 = 1"
        )

    @cached_property
    def ask_by_id_sql(self) -> str:
        return f"SELECT {ASK_COLUMNS} FROM asks WHERE id = ?" + self.lock_suffix

    def sql(self, statement: str) -> str:
        """``statement`` with this driver's placeholder."""
        if self.placeholder == "?":
            return statement
        rewritten = _rewritten.get(statement)
        if rewritten is None:
            rewritten = _rewritten[statement] = statement.replace("?", self.placeholder)
        return rewritten


#: Statements are a fixed set of literals, so their rewrite for "%s" drivers is cached.
_rewritten: dict[str, str] = {}


#: A statement and its parameters.
Statement = tuple[str, tuple[Any, ...]]


class Runner(Protocol):
    """What the shared SQL runs on: an engine's transaction and its :class:`Dialect`."""

    @property
    def dialect(self) -> Dialect: ...

    def query(self, statement: str, params: Sequence[Any] = ()) -> Any:
        """Run a statement whose rows the caller reads; returns the cursor to read them from."""
        ...

    def send(self, statement: str, params: Sequence[Any] = ()) -> None:
        """Run a statement whose result nobody reads (an engine may defer it)."""
        ...
