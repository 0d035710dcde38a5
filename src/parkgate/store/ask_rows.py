"""The rows of asks and runs, derived from their declarations (:mod:`parkgate.core.shape`):
the columns every statement names, the values an insert or an update writes, and the value
a row holds, each field read from its column by name.

A field is stored as its codec says: its JSON value, its JSON as text (``NULL`` for an
empty list where the codec says so), or the store's own time type (the dialect's
``encode_time``). Three columns of an ask are the store's own, derived from the ask for
its indexes: ``due_at`` (when a watched ask falls due; ``NULL``: nobody waits on it, which
is how its ``watched`` is kept), ``event_offset`` and ``event_at`` (its next reminder or
escalation, :attr:`~parkgate.core.model.Ask.next_event_at`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any, Generic, TypeVar

from parkgate.core.model import Ask, Run
from parkgate.core.shape import VALUE_OF, Codec, Declared, compiled, declared

T = TypeVar("T")

EncodeTime = Callable[[datetime], Any]
DecodeTime = Callable[[Any], datetime]


class Rows(Generic[T]):
    """The rows of one declared value: its columns, and how a value is written and read.

    A row is read on every message, so the reader and the writers are compiled once from
    the declaration (as :mod:`dataclasses` compiles ``__init__``): the generated code is
    the hand-written constructor call it replaces, each field taken from its column by
    the column's position in :attr:`columns`.
    """

    def __init__(self, kind: type[T], derived: Sequence[str] = (), given: Sequence[str] = ()) -> None:
        """Args:
        kind: The declared dataclass a row holds.
        derived: Columns after the declared ones that the store derives from a value.
        given: Fields without a column of their own: :attr:`read` takes them as keywords.
        """
        self.kind = kind
        self._stored = {item.name: item for item in declared(kind) if item.column is not None}
        #: Every column, in the order :attr:`columns` names them.
        self.names: tuple[str, ...] = (*(str(item.column) for item in self._stored.values()), *derived)
        #: The columns, comma-separated, as a statement names them.
        self.columns = ", ".join(self.names)
        self._at = {name: at for at, name in enumerate(self.names)}
        self._namespace: dict[str, Any] = {"kind": kind}
        #: ``read(row, decode_time, *, given...)``: the value a row of :attr:`columns` holds,
        #: its times read with the dialect's ``decode_time``.
        self.read: Callable[..., T] = self._compile_reader(given)
        self._values = self.writer(tuple(self._stored))

    def at(self, column: str) -> int:
        """Where ``column`` is in a row of :attr:`columns`."""
        return self._at[column]

    def placeholders(self) -> str:
        """One ``?`` a column, comma-separated: an insert's ``VALUES``."""
        return ", ".join("?" * len(self.names))

    def assignments(self, fields: Sequence[str]) -> str:
        """``column = ?`` for each of ``fields``, comma-separated: an update's ``SET``."""
        return ", ".join(f"{self._stored[name].column} = ?" for name in fields)

    def values(self, value: T, encode_time: EncodeTime) -> tuple[Any, ...]:
        """The stored values of every field of ``value``, in :attr:`columns`' order."""
        return self._values(value, encode_time)

    def writer(self, fields: Sequence[str]) -> Callable[[T, EncodeTime], tuple[Any, ...]]:
        """A function of a value and the dialect's ``encode_time`` that gives the stored
        values of ``fields``, in that order."""
        parts = [self._written(self._stored[name]) for name in fields]
        return compiled(f"{self.kind.__name__} row", "value, encode_time", f"({', '.join(parts)},)", self._namespace)

    def _written(self, item: Declared) -> str:
        """The expression of ``item``'s stored value, read off ``value``."""
        codec, get = item.codec, f"value.{item.name}"
        if codec.stored == "time":
            return f"(None if (v := {get}) is None else encode_time(v))"
        if codec.stored == "value" and codec.to_json is None:
            return get
        if codec.enum is not None:
            return f"(None if (v := {get}) is None else {VALUE_OF})"
        encode = self._bind(f"encode_{item.name}", _text_writer(codec) if codec.stored == "text" else codec.to_json)
        if codec.empty_is_null:
            return f"({encode}(v) if (v := {get}) else None)"
        return f"(None if (v := {get}) is None else {encode}(v))"

    def _compile_reader(self, given: Sequence[str]) -> Callable[..., T]:
        """``read(row, decode_time, *, given...)``: the value a row of :attr:`columns` holds."""
        parts = [f"{item.name}={self._field_read(item)}" for item in self._stored.values()]
        parts += [f"{name}={name}" for name in given]
        arguments = ", ".join(["row", "decode_time", *(["*", *given] if given else [])])
        return compiled(f"{self.kind.__name__} from row", arguments, f"kind({', '.join(parts)})", self._namespace)

    def _field_read(self, item: Declared) -> str:
        """The expression of ``item``'s value, read from its column of ``row``."""
        codec, raw = item.codec, f"row[{self._at[str(item.column)]}]"
        default = self._bind(f"default_{item.name}", item.default)
        if codec.stored == "time":
            decode = "decode_time"
        else:
            function = _text_reader(codec) if codec.stored == "text" else codec.from_json
            if function is None:
                return raw if item.default is None else f"({default} if (v := {raw}) is None else v)"
            decode = self._bind(f"decode_{item.name}", function)
        return f"({default} if (v := {raw}) is None else {decode}(v))"

    def _bind(self, name: str, value: object) -> str:
        self._namespace[name] = value
        return name


def _text_reader(codec: Codec) -> Callable[[str], Any]:
    """How a ``"text"`` codec's value is read from its stored text: its own decoder when it has one."""
    return codec.from_text or codec.from_stored_text


def _text_writer(codec: Codec) -> Callable[[Any], str]:
    """How a ``"text"`` codec's value is written as stored text: its own encoder when it has one."""
    return codec.to_text or codec.text_of


#: An ask's row: its declared columns, then those the store derives for its indexes.
ASK_ROWS = Rows(Ask, derived=("due_at", "event_offset", "event_at"), given=("watched",))
#: A run's row.
RUN_ROWS = Rows(Run)
ASK_COLUMNS = ASK_ROWS.columns
RUN_COLUMNS = RUN_ROWS.columns
_DUE_AT = ASK_ROWS.at("due_at")

#: What a step may change in an ask besides its status, in the order ``parkgate_step``
#: takes them (:func:`mutable_values`; ``save_ask`` writes them).
MUTABLE_FIELDS = (
    "outcome",
    "answer",
    "option_index",
    "last_touched",
    "answered_at",
    "mismatches",
    "votes",
    "answered_by",
    "closed_by",
    "closed_at",
)
MUTABLE_ASK_SET = ASK_ROWS.assignments(MUTABLE_FIELDS)
_mutable = ASK_ROWS.writer(MUTABLE_FIELDS)
#: What firing a reminder or the escalation changes (the derived event columns follow).
SCHEDULED_FIELDS = ("reminders_sent", "escalated_at", "responders")
SCHEDULE_SET = ASK_ROWS.assignments(SCHEDULED_FIELDS) + ", event_offset = ?, event_at = ?"
_scheduled = ASK_ROWS.writer(SCHEDULED_FIELDS)


def ask_values(ask: Ask, encode_time: EncodeTime, encode_due: EncodeTime) -> tuple[Any, ...]:
    """An ask's values in :data:`ASK_COLUMNS`' order (an insert's)."""
    due = ask.next_event_at
    return (
        *ASK_ROWS.values(ask, encode_time),
        encode_due(ask.due_at) if ask.watched else None,
        ask.event_offset,
        None if due is None else encode_due(due),
    )


def mutable_values(ask: Ask, encode_time: EncodeTime) -> tuple[Any, ...]:
    """The values of :data:`MUTABLE_ASK_SET` for ``ask``, in its order."""
    return _mutable(ask, encode_time)


def schedule_values(ask: Ask, encode_time: EncodeTime, encode_due: EncodeTime) -> tuple[Any, ...]:
    """The values of :data:`SCHEDULE_SET` for an ask whose reminders or escalation fired."""
    due = ask.next_event_at
    return (*_scheduled(ask, encode_time), ask.event_offset, None if due is None else encode_due(due))


def ask_from_row(row: Sequence[Any], decode_time: DecodeTime) -> Ask:
    """An ask from its row (:data:`ASK_COLUMNS`), times read with ``decode_time``."""
    return ASK_ROWS.read(row, decode_time, watched=row[_DUE_AT] is not None)


__all__ = [
    "ASK_COLUMNS",
    "ASK_ROWS",
    "MUTABLE_ASK_SET",
    "RUN_COLUMNS",
    "RUN_ROWS",
    "SCHEDULE_SET",
    "Rows",
    "ask_from_row",
    "ask_values",
    "mutable_values",
    "schedule_values",
]
