"""Durable homes for asks: SQLite (embedded default) and PostgreSQL (shared)."""

from __future__ import annotations

from parkgate.store.base import Run, Store, StoreConflict, StoreError, StoreUnavailable, Transaction

DEFAULT_URL = "sqlite:///parkgate.db"


def open_store(url: str = DEFAULT_URL, **options: object) -> Store:
    """The store a URL names: ``sqlite:///file.db``, a bare path, or ``postgresql://...``."""
    if not isinstance(url, str) or not url.strip():
        raise StoreError("the store URL is empty")
    if url.startswith(("postgres://", "postgresql://")):
        from parkgate.store.postgres import PostgresStore

        return PostgresStore(url, **options)  # type: ignore[arg-type]
    if "://" in url and not url.startswith("sqlite:"):
        raise StoreError(f"unknown store URL {url!r}: use sqlite:///file.db or postgresql://...")
    from parkgate.store.sqlite import SQLiteStore

    return SQLiteStore(url, **options)  # type: ignore[arg-type]


__all__ = [
    "DEFAULT_URL",
    "Run",
    "Store",
    "StoreConflict",
    "StoreError",
    "StoreUnavailable",
    "Transaction",
    "open_store",
]
