"""The suite's supply of databases hands every test a clean one (``tests/store_locations.py``).

Migrations are paid once per test process; what a test gets must still be what a fresh
database would be: migrated to the last version and empty, with its identities counting
from 1 again. A schema a test changed the make-up of is never handed out again.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import psycopg
import pytest

from parkgate import Gateway, ManualClock
from parkgate.store.migrations import iter_migrations
from store_locations import Databases, StoreLocation

LAST = max(version for version, _ in iter_migrations("sqlite"))


@pytest.fixture
def supply(tmp_path: Path) -> Iterator[Databases]:
    databases = Databases(tmp_path)
    yield databases
    databases.close()


def _park(location: StoreLocation) -> None:
    with Gateway(store=location.open(), clock=ManualClock(datetime(2026, 1, 5, tzinfo=UTC))) as gateway:
        gateway.ask("c", "Deploy?", ["Yes", "No"], callback_url="https://hooks.example/h")
        gateway.cancel(gateway.open_asks()[0].id)  # queues a callback: an outbox row with an id


def _exists(url: str, schema: str) -> bool:
    with psycopg.connect(url) as conn:
        row = conn.execute("SELECT count(*) FROM pg_namespace WHERE nspname = %s", (schema,)).fetchone()
    return bool(row and row[0])


def test_a_migrated_sqlite_file_is_a_fresh_copy_each_time(supply: Databases, tmp_path: Path) -> None:
    for name in ("a", "b", "c"):
        (tmp_path / name).mkdir()
    first = supply.sqlite(tmp_path / "a", migrated=True)
    _park(first)
    second = supply.sqlite(tmp_path / "b", migrated=True)
    assert second.raw_query("SELECT max(version) FROM schema_migrations") == [(LAST,)]
    assert second.raw_query("SELECT count(*) FROM asks") == [(0,)]
    assert first.raw_query("SELECT count(*) FROM asks") == [(1,)]
    empty = supply.sqlite(tmp_path / "c", migrated=False)
    assert empty.path is not None and not empty.path.exists()  # for the tests of a first migration


def test_a_pooled_schema_comes_back_empty_with_its_versions_and_identities_reset(
    supply: Databases, pg_url: str
) -> None:
    first = supply.postgres(pg_url, migrated=True)
    _park(first)
    assert first.raw_query("SELECT min(id) FROM outbox") == [(1,)]
    supply.give_back(first)
    again = supply.postgres(pg_url, migrated=True)
    assert again.schema == first.schema  # reused, not migrated again
    assert again.raw_query("SELECT count(*) FROM asks") == [(0,)]
    assert again.raw_query("SELECT max(version) FROM schema_migrations") == [(LAST,)]
    _park(again)
    assert again.raw_query("SELECT min(id) FROM outbox") == [(1,)]  # RESTART IDENTITY
    supply.give_back(again)


@pytest.mark.parametrize(
    "change",
    [
        "ALTER TABLE inbound_messages ADD COLUMN commit_seq BIGSERIAL",
        "CREATE INDEX one_more ON asks (conversation_id)",
        "DELETE FROM schema_migrations WHERE version = 15",
        "CREATE TABLE commit_seq_log (seq INTEGER)",
    ],
)
def test_a_schema_whose_make_up_changed_is_dropped_not_reused(supply: Databases, pg_url: str, change: str) -> None:
    changed = supply.postgres(pg_url, migrated=True)
    assert changed.schema is not None
    changed.raw_query(change)
    supply.give_back(changed)
    assert not _exists(pg_url, changed.schema)
    fresh = supply.postgres(pg_url, migrated=True)
    assert fresh.schema != changed.schema
    supply.give_back(fresh)


def test_an_empty_location_stays_empty_and_is_dropped(supply: Databases, pg_url: str) -> None:
    empty = supply.postgres(pg_url, migrated=False)
    assert empty.schema is not None
    assert empty.raw_query("SELECT count(*) FROM pg_tables WHERE schemaname = current_schema()") == [(0,)]
    supply.give_back(empty)
    assert not _exists(pg_url, empty.schema)
