"""The channel tests' path: the live-server helpers of ``tests/http`` (a module, not a conftest)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "http"))
