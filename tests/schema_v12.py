"""Version 12 of the schema taken out again, for the tests that make an older store from a
new one (shared by the migration tests; a module, not a conftest)."""

from __future__ import annotations

from parkgate.store.migrations import iter_migrations

#: The asks' columns version 12 added.
V12_COLUMNS = ("responders", "quorum", "votes", "answered_by", "closed_by")
#: What versions 12 and later added to both stores, taken out again, and their records
#: (version 15's table of idempotency keys included).
BEFORE_V12 = (
    "DROP TABLE ask_keys",
    *(f"ALTER TABLE asks DROP COLUMN {column}" for column in V12_COLUMNS),
    "DELETE FROM schema_migrations WHERE version >= 12",
)
#: PostgreSQL: version 12's parkgate_step dropped, and version 4's made again.
V12_STEP_BACK_TO_V4 = (
    "DROP FUNCTION parkgate_step(TEXT, TEXT, TEXT, TIMESTAMPTZ, INTEGER, DOUBLE PRECISION, TEXT, TEXT, TEXT, "
    "INTEGER, TIMESTAMPTZ, TIMESTAMPTZ, INTEGER, TEXT, TEXT, TEXT, TEXT, TEXT, TEXT, TEXT, TIMESTAMPTZ, TEXT, "
    "TIMESTAMPTZ)",
    dict(iter_migrations("postgres"))[4],
)
