"""Version 12 of the schema taken out again, for the tests that make an older store from a
new one (shared by the migration tests; a module, not a conftest)."""

from __future__ import annotations

from parkgate.store.migrations import iter_migrations

#: The asks' columns version 12 added.
V12_COLUMNS = ("responders", "quorum", "votes", "answered_by", "closed_by")
#: What the versions after 12 added, taken out again (their records go with version 12's).
AFTER_V12 = ("DROP TABLE agent_states", "DROP TABLE ask_keys")
#: What version 12 (and every later version) added to both stores' tables, taken out
#: again, and its record.
BEFORE_V12 = (
    *AFTER_V12,
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
