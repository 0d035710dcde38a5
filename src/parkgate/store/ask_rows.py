"""An ask's row: how each field is stored and read back, the same on both SQL engines.

The codecs cache what repeats (a menu's options, a responders list), since the same few
are parked over and over; times go through the engine's :class:`Dialect`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from datetime import datetime
from functools import lru_cache
from typing import Any

from parkgate.core import expect as expected_form
from parkgate.core.model import MENUS_REMEMBERED, Ask, AskKind, AskStatus, Vote
from parkgate.store.dialect import ASK_COLUMNS, Dialect

#: A statement and its parameters.
Statement = tuple[str, tuple[Any, ...]]

#: Stored value -> enum member, by dict lookup (an Enum call costs more, on every row read).
_KINDS: dict[str, AskKind] = {member.value: member for member in AskKind}
_STATUSES: dict[str, AskStatus] = {member.value: member for member in AskStatus}


# Options never change after an ask is parked, and the same few menus are parked over
# and over: each distinct list is encoded and decoded once.
@lru_cache(maxsize=MENUS_REMEMBERED)
def _encode_options(options: tuple[str, ...]) -> str:
    return json.dumps(list(options), ensure_ascii=False)


@lru_cache(maxsize=MENUS_REMEMBERED)
def _decode_options(raw: str) -> tuple[str, ...]:
    return tuple(json.loads(raw))


def encode_votes(votes: tuple[Vote, ...]) -> str | None:
    """An ask's votes as stored: a JSON list of ``{sender, option_index, answer, at}``, NULL for none."""
    return json.dumps([vote.to_dict() for vote in votes], ensure_ascii=False) if votes else None


def _decode_votes(raw: str) -> tuple[Vote, ...]:
    return tuple(Vote.from_dict(item) for item in json.loads(raw))


@lru_cache(maxsize=MENUS_REMEMBERED)
def _decode_responders(raw: str) -> tuple[str, ...]:
    return tuple(json.loads(raw))


def _decode_context(raw: str) -> dict[str, Any]:
    value = json.loads(raw)
    return value if isinstance(value, dict) else {"value": value}


def mutable_fields(ask: Ask, dialect: Dialect) -> tuple[Any, ...]:
    """The values of :data:`MUTABLE_ASK_SET` for ``ask``, in its order."""
    encode = dialect.encode_time
    return (
        ask.outcome,
        ask.answer,
        ask.option_index,
        encode(ask.last_touched),
        encode(ask.answered_at) if ask.answered_at else None,
        ask.mismatches,
        encode_votes(ask.votes),
        ask.answered_by,
        ask.closed_by,
    )


def ask_insert(ask: Ask, dialect: Dialect) -> Statement:
    encode = dialect.encode_time
    return (
        f"INSERT INTO asks ({ASK_COLUMNS}) VALUES ({', '.join('?' * 27)})",
        (
            ask.id,
            ask.conversation_id,
            ask.run_id,
            ask.kind.value,
            ask.prompt,
            _encode_options(tuple(ask.options)),  # an Ask built by hand may hold a list
            ask.status.value,
            ask.outcome,
            ask.answer,
            ask.option_index,
            encode(ask.asked_at),
            encode(ask.last_touched),
            encode(ask.answered_at) if ask.answered_at else None,
            ask.mismatches,
            ask.ttl_seconds,
            ask.phase,
            ask.default,
            ask.callback_url,
            dialect.encode_due(ask.due_at) if ask.watched else None,
            json.dumps(ask.context, ensure_ascii=False) if ask.context is not None else None,
            ask.owner,
            expected_form.to_json(ask.expect) if ask.expect is not None else None,
            json.dumps(list(ask.responders), ensure_ascii=False) if ask.responders else None,
            ask.quorum,
            encode_votes(ask.votes),
            ask.answered_by,
            ask.closed_by,
        ),
    )


def ask_from_row(row: Sequence[Any], decode: Callable[[Any], datetime]) -> Ask:
    """An ask from its row (:data:`ASK_COLUMNS`), times read with ``decode``."""
    return Ask(
        id=row[0],
        conversation_id=row[1],
        run_id=row[2],
        kind=_KINDS[row[3]],
        prompt=row[4],
        options=_decode_options(row[5]),
        status=_STATUSES[row[6]],
        outcome=row[7],
        answer=row[8],
        option_index=row[9],
        asked_at=decode(row[10]),
        last_touched=decode(row[11]),
        answered_at=decode(row[12]) if row[12] is not None else None,
        mismatches=row[13],
        ttl_seconds=float(row[14]),
        phase=row[15],
        default=row[16],
        callback_url=row[17],
        watched=row[18] is not None,
        context=_decode_context(row[19]) if row[19] is not None else None,
        owner=row[20],
        expect=expected_form.from_json(row[21]) if row[21] is not None else None,
        responders=_decode_responders(row[22]) if row[22] is not None else (),
        quorum=row[23],
        votes=_decode_votes(row[24]) if row[24] is not None else (),
        answered_by=row[25],
        closed_by=row[26],
    )
