"""Which store engines a test runs on, and the marker that asks for both.

A module of its own (not the conftest) so that test modules in any folder can import it:
``tests/`` is on ``sys.path`` because the root conftest lives there.

The rule (CONTRIBUTING.md, "Each engine where it differs"): the store conformance suite
(``tests/store``) runs every test on SQLite and on PostgreSQL; a test above the store runs
on SQLite only, unless what it checks depends on the engine (concurrency across
connections or processes, the LISTEN/NOTIFY wake, a PostgreSQL restart, the schema
option). Such a test says why with ``@pytest.mark.engines("why")`` (or a module's
``pytestmark``), and its ``store_location`` (so ``store``, ``gateway``, ``reopen``) is
parametrised over both engines.
"""

from __future__ import annotations

import pytest

STORE_PARAMS = ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]
"""Both engines, PostgreSQL with the marker it needs (for an explicit parametrisation)."""

SQLITE_ONLY = ["sqlite"]
"""The one engine a test above the store runs on."""

#: The folders (under ``tests/``) whose store fixtures run on both engines: the store
#: conformance suite.
BOTH_ENGINE_FOLDERS = frozenset({"store"})

ENGINES_MARKER = "engines"
