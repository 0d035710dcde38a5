"""How the SQLite engine writes times and rewrites the shared SQL: its :class:`Dialect`.

Times are ISO 8601 text in UTC (microseconds); a due time is seconds since the epoch (a
float), as migration 5's trigger computes it.
"""

from __future__ import annotations

from datetime import UTC, datetime

from parkgate.store.dialect import Dialect

#: The last time encoded and its text. A message's writes stamp one ``now`` several times
#: (asked_at, last_touched, the run's updated_at...), and isoformat() is costly enough to
#: do once. One tuple, read and replaced whole, so threads never see a torn pair.
_last_encoded: tuple[datetime, str] | None = None


def encode_time(moment: datetime) -> str:
    """``moment`` as the stored text (UTC, microseconds); the last one is encoded once."""
    global _last_encoded
    last = _last_encoded
    if last is not None and last[0] is moment:
        return last[1]
    utc = moment if moment.tzinfo is UTC else moment.astimezone(UTC)  # the clock's times are UTC already
    text = utc.isoformat(timespec="microseconds")
    _last_encoded = (moment, text)
    return text


def _decode(raw: str) -> datetime:
    return datetime.fromisoformat(raw)


def _encode_due(moment: datetime) -> float:
    return moment.timestamp()


def _decode_due(raw: float) -> datetime:
    return datetime.fromtimestamp(raw, UTC)


DIALECT = Dialect(
    placeholder="?",
    lock_suffix="",
    encode_time=encode_time,
    decode_time=_decode,
    encode_due=_encode_due,
    decode_due=_decode_due,
    # As migration 5's trigger computes due_at.
    due_expression=(
        "(round((julianday(substr(last_touched, 1, 19)) - 2440587.5) * 86400.0) "
        "+ CAST(substr(last_touched, 21, 6) AS INTEGER) / 1000000.0 + ttl_seconds)"
    ),
    skip_locked_suffix="",  # one writer at a time: BEGIN IMMEDIATE holds the file
)
