"""The schema migrations, one SQL file per version and engine, and how they are applied.

Files are named ``NNNN_name.<engine>.sql``; a database records the versions applied in
its ``schema_migrations`` table. Files are never squashed or edited once released:
databases exist at every version.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any


def iter_migrations(engine: str) -> Iterator[tuple[int, str]]:
    """(version, sql) for ``engine`` ('sqlite' or 'postgres'), in order."""
    from importlib.resources import files

    folder = files(__name__)
    found: list[tuple[int, str]] = []
    for entry in folder.iterdir():
        name = entry.name
        if name.endswith(f".{engine}.sql"):
            found.append((int(name.split("_", 1)[0]), entry.read_text(encoding="utf-8")))
    yield from sorted(found)


@dataclass(frozen=True, slots=True)
class MigrationTable:
    """How an engine keeps the versions applied: its table, and the statement that records one."""

    engine: str
    create: str
    record: str


def apply_migrations(
    query: Callable[[str, tuple[Any, ...]], Iterable[Sequence[Any]]],
    run_script: Callable[[str], object],
    table: MigrationTable,
) -> list[int]:
    """Apply the migrations not recorded yet, in order; return their versions.

    The caller holds the engine's migration lock and transaction: ``query`` runs one
    statement, ``run_script`` one migration file.
    """
    query(table.create, ())
    done = {row[0] for row in query("SELECT version FROM schema_migrations", ())}
    applied: list[int] = []
    for version, script in iter_migrations(table.engine):
        if version in done:
            continue
        run_script(script)
        query(table.record, (version,))
        applied.append(version)
    return applied
