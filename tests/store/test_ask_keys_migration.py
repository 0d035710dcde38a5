"""Schema version 15 (the ``ask_keys`` table) on a database made before it, on both stores:
the upgrade keeps what was parked, and keyed parks work from then on."""

from __future__ import annotations

from typing import TYPE_CHECKING

from parkgate import Gateway
from parkgate.store.migrations import iter_migrations

if TYPE_CHECKING:
    from conftest import StoreLocation

LATEST = max(version for version, _ in iter_migrations("sqlite"))


def test_a_database_from_before_keys_is_upgraded_and_takes_keys(store_location: StoreLocation) -> None:
    with Gateway(store=store_location.open()) as gateway:
        old = gateway.ask("c-old", "Deploy?", ["Deploy", "Hold"]).ask_id
    store_location.raw_query("DROP TABLE ask_keys")
    store_location.raw_query("DELETE FROM schema_migrations WHERE version = 15")
    with Gateway(store=store_location.open()) as gateway:
        assert gateway.store.schema_version() == LATEST
        parked = gateway.parked("c-old")
        assert parked is not None and parked.id == old  # the ask parked before the upgrade is still open
        first = gateway.ask("c-new", "Ship?", ["Ship", "Hold"], key="after-upgrade")
        assert gateway.ask("c-new", "Ship?", ["Ship", "Hold"], key="after-upgrade").ask_id == first.ask_id
    assert store_location.raw_query("SELECT owner, key, ask_id FROM ask_keys") == [("", "after-upgrade", first.ask_id)]
