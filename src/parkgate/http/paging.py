"""``GET /v1/asks`` a page at a time: the page sizes and the opaque ``cursor`` between pages."""

from __future__ import annotations

from datetime import datetime

from parkgate.core.history import (
    DEFAULT_HISTORY_PAGE,
    MAX_HISTORY_PAGE,
    decode_history_cursor,
    encode_history_cursor,
)
from parkgate.core.model import Ask

#: ``GET /v1/asks`` answers this many asks a page unless ``limit`` says otherwise, and never more than the most.
DEFAULT_PAGE_ASKS = DEFAULT_HISTORY_PAGE
MAX_PAGE_ASKS = MAX_HISTORY_PAGE
#: The longest ``cursor`` a request may carry.
MAX_CURSOR_CHARS = 512


def encode_cursor(ask: Ask) -> str:
    """The opaque ``cursor`` of the page after ``ask``: its place in the order (asked_at, id)."""
    return encode_history_cursor(ask.asked_at, ask.id)


def decode_cursor(cursor: str) -> tuple[datetime, str]:
    """The place a ``cursor`` names; :class:`InputError` for one this server did not make."""
    return decode_history_cursor(cursor)
