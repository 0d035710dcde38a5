"""Durable homes for asks: SQLite (embedded default) and PostgreSQL (shared).

:func:`open_store` opens one by URL. The names below are also the plug-in interface an
engine implements: :class:`Store` and its :class:`Transaction`, the narrower interfaces a
transaction is made of (:class:`OpenAsks`, :class:`Outbox`, :class:`ChannelTables`,
:class:`EventLog`, :class:`FollowUps`, :class:`Heartbeats`, :class:`AgentStates`, :class:`AskKeys`,
:class:`History`), the
values they pass (:class:`Writes` and its parts, :class:`Callback`, :class:`Intent`), and
the close signal an engine's :class:`Watcher` feeds (:class:`CloseSignal`).
"""

from parkgate.core.events import NewEvent
from parkgate.store.base import (
    AgentStates,
    AskGauges,
    AskKeys,
    Callback,
    EventLog,
    FollowUps,
    Heartbeats,
    History,
    Intent,
    MessageTransaction,
    OpenAsks,
    Outbox,
    SchemaMissing,
    Store,
    StoreClosed,
    StoreConflict,
    StoreError,
    StoreUnavailable,
    Transaction,
    Watcher,
)
from parkgate.store.channel_tables import ChannelJob, ChannelPost, ChannelTables
from parkgate.store.signal import Change, CloseSignal, Waiter
from parkgate.store.writes import AskStep, NewAsk, QueuedCallback, QueuedChannelJob, RunChange, StoredReply, Writes

DEFAULT_URL = "sqlite:///parkgate.db"
#: The environment variable that puts a deployment's PostgreSQL store in a schema of its
#: own; the server's workers and every CLI command that opens a store honour it.
ENV_PG_SCHEMA = "PARKGATE_PG_SCHEMA"


def is_postgres_url(url: str) -> bool:
    """True for a ``postgresql://`` (or ``postgres://``) URL: the PostgreSQL store's."""
    return url.startswith(("postgres://", "postgresql://"))


def open_store(url: str = DEFAULT_URL, **options: object) -> Store:
    """The store a URL names, opened and migrated.

    Args:
        url: ``sqlite:///file.db``, a bare path, or ``postgresql://...``.
        **options: The engine's own options (for PostgreSQL ``schema`` and the pool's).

    Returns:
        A SQLite or PostgreSQL store.

    Raises:
        StoreError: The URL is empty or names another engine.
    """
    if not isinstance(url, str) or not url.strip():
        raise StoreError("the store URL is empty")
    if is_postgres_url(url):
        from parkgate.store.postgres import PostgresStore

        return PostgresStore(url, **options)  # type: ignore[arg-type]
    if "://" in url and not url.startswith("sqlite:"):
        raise StoreError(f"unknown store URL {url!r}: use sqlite:///file.db or postgresql://...")
    from parkgate.store.sqlite import SQLiteStore

    return SQLiteStore(url, **options)  # type: ignore[arg-type]


def open_deployed_store(url: str = DEFAULT_URL, **options: object) -> Store:
    """:func:`open_store`, in the schema ``PARKGATE_PG_SCHEMA`` names for a PostgreSQL URL.

    For the programs a deployment runs (the CLI, the server), so that all of them open
    the same tables. ``options`` (including an explicit ``schema``) win over the variable.
    """
    schema = deployed_schema(url)
    if schema is not None:
        options.setdefault("schema", schema)
    return open_store(url, **options)


def deployed_schema(url: str) -> str | None:
    """The schema ``PARKGATE_PG_SCHEMA`` names for a PostgreSQL ``url``; None if unset or not PostgreSQL."""
    import os

    schema = os.environ.get(ENV_PG_SCHEMA, "").strip()
    return schema if schema and is_postgres_url(url) else None


__all__ = [
    "DEFAULT_URL",
    "ENV_PG_SCHEMA",
    "AgentStates",
    "AskGauges",
    "AskKeys",
    "AskStep",
    "Callback",
    "Change",
    "ChannelJob",
    "ChannelPost",
    "ChannelTables",
    "CloseSignal",
    "EventLog",
    "FollowUps",
    "Heartbeats",
    "History",
    "Intent",
    "MessageTransaction",
    "NewAsk",
    "NewEvent",
    "OpenAsks",
    "Outbox",
    "QueuedCallback",
    "QueuedChannelJob",
    "RunChange",
    "SchemaMissing",
    "Store",
    "StoreClosed",
    "StoreConflict",
    "StoreError",
    "StoreUnavailable",
    "StoredReply",
    "Transaction",
    "Waiter",
    "Watcher",
    "Writes",
    "deployed_schema",
    "is_postgres_url",
    "open_deployed_store",
    "open_store",
]
