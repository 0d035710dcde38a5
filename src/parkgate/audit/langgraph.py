"""The clock check on a LangGraph checkpointer's tables (``SqliteSaver``, ``PostgresSaver``,
``ShallowPostgresSaver``).

A thread is parked when its latest checkpoint in the root namespace has pending writes
to the ``__interrupt__`` channel from a task with no ``__resume__`` write: the graph
stopped in ``interrupt()`` and nothing has answered it. It was interrupted when that
checkpoint was taken (the checkpoint's ``ts``). The tables are read in one read-only,
bounded transaction (:mod:`~parkgate.audit.readonly`).

The values are decoded as plain data (:mod:`~parkgate.audit.plain`), never with
LangGraph's serializer: that one imports and calls whatever a stored msgpack extension
names, so one row written by anyone would run code here. An ``Interrupt`` is recognised
by the names its extension carries and its ``value`` read as data; a value that is not
read (a pickle, a malformed blob) is shown as a note in its place. Reading needs
``ormsgpack``, which ``langgraph`` brings (``parkgate[adapters]``).

The layouts read: ``SqliteSaver`` keeps ``checkpoints`` (``checkpoint`` a serialized
BLOB with its ``type``) and ``writes`` (``value``); ``PostgresSaver`` and
``ShallowPostgresSaver`` keep ``checkpoints`` (``checkpoint`` JSONB, holding its ``id``
and ``ts``; the shallow one has no ``checkpoint_id`` column and one row a thread) and
``checkpoint_writes`` (``blob``). All key a write by ``thread_id``, ``checkpoint_ns``,
``checkpoint_id``, ``task_id`` and ``idx``.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from parkgate.audit.clock import Parked, as_utc, shorten
from parkgate.audit.plain import Typed, loads_plain, plain
from parkgate.audit.readonly import Bounds, Reader, read_only
from parkgate.errors import OutOfBounds, StoreError

INTERRUPT = "__interrupt__"
RESUME = "__resume__"

#: Each engine's table of pending writes and its value column, how a checkpoint's id is
#: read (``ShallowPostgresSaver`` keeps it only inside the JSONB), and how its ``ts`` is read.
_LAYOUTS = {
    "sqlite": ("writes", "value", "checkpoint_id", "SELECT type, checkpoint FROM checkpoints"),
    "postgres": (
        "checkpoint_writes",
        "blob",
        "checkpoint ->> 'id'",
        "SELECT NULL, checkpoint ->> 'ts' FROM checkpoints",
    ),
}


def _pending_sql(writes: str, value: str, id_sql: str, limit: int) -> str:
    """The interrupt and resume writes on each thread's latest root checkpoint, at most ``limit``."""
    return f"""
        WITH latest AS (
            SELECT thread_id, MAX({id_sql}) AS checkpoint_id
            FROM checkpoints WHERE checkpoint_ns = '' GROUP BY thread_id
        )
        SELECT w.thread_id, w.checkpoint_id, w.task_id, w.channel, w.type, w.{value}
        FROM {writes} w JOIN latest l ON w.thread_id = l.thread_id AND w.checkpoint_id = l.checkpoint_id
        WHERE w.checkpoint_ns = '' AND w.channel IN ('{INTERRUPT}', '{RESUME}')
        ORDER BY w.thread_id, w.task_id, w.idx
        LIMIT {int(limit)}
    """


def _interrupt_values(decoded: Any) -> list[Any]:
    """The payloads of an ``__interrupt__`` write (a list of ``Interrupt``, or one), as
    plain data: an ``Interrupt``'s ``value``, anything else as it is."""
    items = decoded if isinstance(decoded, (list, tuple)) else [decoded]
    return [plain(_interrupt_value(item)) for item in items]


def _interrupt_value(item: Any) -> Any:
    """An ``Interrupt`` extension's ``value`` (recognised by the names it carries, never
    imported); any other item as it is."""
    if (
        isinstance(item, Typed)
        and (item.module, item.name) == ("langgraph.types", "Interrupt")
        and isinstance(item.data, dict)
        and "value" in item.data
    ):
        return item.data["value"]
    return item


def _text(value: object) -> str:
    """A key column's value as text (a hostile SQLite file may store anything in it)."""
    return value if isinstance(value, str) else shorten(plain(value))


def parked_threads(url: str, bounds: Bounds | None = None) -> list[Parked]:
    """The threads of the checkpointer at ``url`` that wait in ``interrupt()``.

    Args:
        url: ``sqlite:///checkpoints.db`` (or a path) for ``SqliteSaver``, or
            ``postgresql://...`` for ``PostgresSaver`` (its schema through the URL's
            ``options=-csearch_path=...``).
        bounds: The time limit for the whole read and the most pending writes read
            (default :class:`~parkgate.audit.readonly.Bounds`).

    Returns:
        One :class:`~parkgate.audit.clock.Parked` a thread: its ``thread_id`` and its
        ``interrupt`` value, shortened.

    Raises:
        StoreError: The database is missing, out of reach, holds no checkpointer's
            tables, a checkpoint has no readable ``ts``, or the read runs past its bounds.
        MissingExtra: ``ormsgpack`` is not installed.
    """
    bounds = bounds or Bounds()
    with read_only(url, bounds) as reader:
        writes, value, id_sql, checkpoint_sql = _LAYOUTS[reader.engine]
        try:
            found = reader.rows(_pending_sql(writes, value, id_sql, bounds.max_rows + 1))
        except OutOfBounds:
            raise
        except StoreError as error:
            raise StoreError(f"not a LangGraph checkpointer's tables ({error})") from None
        resumed = {(row[0], row[1], row[2]) for row in found if row[3] == RESUME}
        interrupts: dict[tuple[Any, Any], list[Any]] = defaultdict(list)
        for thread_id, checkpoint_id, task_id, channel, kind, blob in found:
            if channel == INTERRUPT and (thread_id, checkpoint_id, task_id) not in resumed:
                interrupts[(thread_id, checkpoint_id)].extend(_interrupt_values(loads_plain(kind, blob)))
        where = f"{checkpoint_sql} WHERE thread_id = ? AND checkpoint_ns = '' AND {id_sql} = ? LIMIT 1"
        return [_parked(reader, where, key, values) for key, values in interrupts.items()]


def _parked(reader: Reader, checkpoint_sql: str, key: tuple[Any, Any], values: list[Any]) -> Parked:
    """One thread's row, stamped with its checkpoint's ``ts``."""
    thread_id = _text(key[0])
    rows = reader.rows(checkpoint_sql, key)
    if not rows:
        raise StoreError(f"thread {thread_id!r} has no checkpoint to read its ts from")
    kind, stored = rows[0]
    if kind is None:
        ts = stored
    else:
        checkpoint = loads_plain(kind, stored)
        ts = plain(checkpoint.get("ts")) if isinstance(checkpoint, dict) else None
    value = values[0] if len(values) == 1 else values
    fields = {"thread_id": thread_id, "interrupt": shorten(value)}
    return Parked(fields, as_utc(ts, f"thread {thread_id!r}'s checkpoint ts"))
