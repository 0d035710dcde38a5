"""The store engines a store-parametrised test runs on, each with the marker it needs.

A module of its own (not the conftest) so that test modules in any folder can import it:
``tests/`` is on ``sys.path`` because the root conftest lives there.
"""

from __future__ import annotations

import pytest

STORE_PARAMS = ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]
