"""The close time as a late answer is told it, computed here from a test's clock (not by
the code under test): "at 14:02 UTC on 6 Dec 2026"."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any


def at(moment: datetime) -> str:
    """``moment`` as the already-closed line ends: "at 14:02 UTC on 6 Dec 2026"."""
    moment = moment.astimezone(UTC)
    return f"at {moment:%H:%M} UTC on {moment.day} {moment:%b} {moment.year}"


def closed_time(ask: dict[str, Any]) -> datetime:
    """When an answered or cancelled ask's JSON says it closed: ``closed_at`` where the
    server keeps it, else ``answered_at``."""
    return datetime.fromisoformat(ask.get("closed_at") or ask["answered_at"])
