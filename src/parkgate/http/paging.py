"""``GET /v1/asks`` a page at a time: the page sizes and the opaque ``cursor`` between pages."""

from __future__ import annotations

import base64
import binascii
import json
from datetime import datetime

from parkgate.core.model import Ask
from parkgate.errors import InputError

#: ``GET /v1/asks`` answers this many asks a page unless ``limit`` says otherwise, and never more than the most.
DEFAULT_PAGE_ASKS = 100
MAX_PAGE_ASKS = 1000
#: The longest ``cursor`` a request may carry.
MAX_CURSOR_CHARS = 512


def encode_cursor(ask: Ask) -> str:
    """The opaque ``cursor`` of the page after ``ask``: its place in the order (asked_at, id)."""
    raw = json.dumps([ask.asked_at.isoformat(), ask.id], separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(cursor: str) -> tuple[datetime, str]:
    """The place a ``cursor`` names; :class:`InputError` for one this server did not make."""
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        stamp, ask_id = json.loads(raw)
        place = (datetime.fromisoformat(stamp), ask_id)
        if not isinstance(ask_id, str) or place[0].tzinfo is None:
            raise ValueError(ask_id)
    except (ValueError, TypeError, binascii.Error):
        raise InputError("cursor is not one this server gave: pass the 'next' of the page before") from None
    return place
