"""The clock check on a LangGraph checkpointer's tables (``SqliteSaver``, ``PostgresSaver``,
``ShallowPostgresSaver``).

A thread is parked when its latest checkpoint in the root namespace has pending writes
to the ``__interrupt__`` channel from a task with no ``__resume__`` write: the graph
stopped in ``interrupt()`` and nothing has answered it. It was interrupted when that
checkpoint was taken (the checkpoint's ``ts``). The tables are read in one read-only
transaction (:mod:`~parkgate.audit.readonly`); the values are decoded with LangGraph's
own serializer, so reading needs ``langgraph`` installed (``parkgate[adapters]``).

The layouts read: ``SqliteSaver`` keeps ``checkpoints`` (``checkpoint`` a serialized
BLOB with its ``type``) and ``writes`` (``value``); ``PostgresSaver`` and
``ShallowPostgresSaver`` keep ``checkpoints`` (``checkpoint`` JSONB, holding its ``id``
and ``ts``; the shallow one has no ``checkpoint_id`` column and one row a thread) and
``checkpoint_writes`` (``blob``). All key a write by ``thread_id``, ``checkpoint_ns``,
``checkpoint_id``, ``task_id`` and ``idx``.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from typing import Any

from parkgate.audit.clock import Parked, as_utc, shorten
from parkgate.audit.readonly import Reader, read_only
from parkgate.errors import MissingExtra, StoreError

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


def _pending_sql(writes: str, value: str, id_sql: str) -> str:
    """The interrupt and resume writes on each thread's latest root checkpoint."""
    return f"""
        WITH latest AS (
            SELECT thread_id, MAX({id_sql}) AS checkpoint_id
            FROM checkpoints WHERE checkpoint_ns = '' GROUP BY thread_id
        )
        SELECT w.thread_id, w.checkpoint_id, w.task_id, w.channel, w.type, w.{value}
        FROM {writes} w JOIN latest l ON w.thread_id = l.thread_id AND w.checkpoint_id = l.checkpoint_id
        WHERE w.checkpoint_ns = '' AND w.channel IN ('{INTERRUPT}', '{RESUME}')
        ORDER BY w.thread_id, w.task_id, w.idx
    """


def _serializer() -> Callable[[tuple[str, bytes]], Any]:
    """LangGraph's own decoder for a ``(type, bytes)`` value."""
    try:
        from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
    except ModuleNotFoundError as missing:
        raise MissingExtra("reading a LangGraph checkpointer", missing) from None
    loads: Callable[[tuple[str, bytes]], Any] = JsonPlusSerializer().loads_typed
    return loads


def _interrupt_values(decoded: Any) -> list[Any]:
    """The payloads of an ``__interrupt__`` write (a list of ``Interrupt``, or one)."""
    items = decoded if isinstance(decoded, (list, tuple)) else [decoded]
    return [getattr(item, "value", item) for item in items]


def parked_threads(url: str) -> list[Parked]:
    """The threads of the checkpointer at ``url`` that wait in ``interrupt()``.

    Args:
        url: ``sqlite:///checkpoints.db`` (or a path) for ``SqliteSaver``, or
            ``postgresql://...`` for ``PostgresSaver`` (its schema through the URL's
            ``options=-csearch_path=...``).

    Returns:
        One :class:`~parkgate.audit.clock.Parked` a thread: its ``thread_id`` and its
        ``interrupt`` value, shortened.

    Raises:
        StoreError: The database is missing, out of reach, or holds no checkpointer's tables.
        MissingExtra: ``langgraph`` is not installed.
    """
    loads = _serializer()
    with read_only(url) as reader:
        writes, value, id_sql, checkpoint_sql = _LAYOUTS[reader.engine]
        try:
            found = reader.rows(_pending_sql(writes, value, id_sql))
        except StoreError as error:
            raise StoreError(f"not a LangGraph checkpointer's tables ({error})") from None
        resumed = {(row[0], row[1], row[2]) for row in found if row[3] == RESUME}
        interrupts: dict[tuple[str, str], list[Any]] = defaultdict(list)
        for thread_id, checkpoint_id, task_id, channel, kind, blob in found:
            if channel == INTERRUPT and (thread_id, checkpoint_id, task_id) not in resumed:
                interrupts[(thread_id, checkpoint_id)].extend(_interrupt_values(loads((kind, bytes(blob)))))
        where = f"{checkpoint_sql} WHERE thread_id = ? AND checkpoint_ns = '' AND {id_sql} = ?"
        return [_parked(reader, where, key, values, loads) for key, values in interrupts.items()]


def _parked(
    reader: Reader, checkpoint_sql: str, key: tuple[str, str], values: list[Any], loads: Callable[..., Any]
) -> Parked:
    """One thread's row, stamped with its checkpoint's ``ts``."""
    thread_id = key[0]
    rows = reader.rows(checkpoint_sql, key)
    kind, stored = rows[0]
    ts = stored if kind is None else loads((kind, bytes(stored)))["ts"]
    value = values[0] if len(values) == 1 else values
    fields = {"thread_id": thread_id, "interrupt": shorten(value)}
    return Parked(fields, as_utc(ts, f"thread {thread_id!r}'s checkpoint ts"))
