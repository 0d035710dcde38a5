"""Who may answer a stopping point: its marker's ``for=`` and ``quorum=``, and its JSON
form's ``responders`` and ``quorum``.

::

    [[ask for=U_ALICE,U_BOB,U_CAROL quorum=2]]
    Deploy build 42?

    1. Deploy
    2. Hold
    [[/ask]]

``for=`` names the responders, separated by commas; ``quorum=`` how many of them must
agree on one option (a whole number, only with ``for=``; a text ask takes 1 only). Both
follow the kind, if any, in either order: ``[[ask text for=U_ALICE]]``. A responder in
a stopping point holds no whitespace, comma, ``]`` or control character, so that the
marker can name it. The marker's ``for=`` is only a default: a caller that passes
``responders`` to the park decides who may answer.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from parkgate.core.kinds import AskKind
from parkgate.errors import StoppingPointError

#: The attributes a marker may carry after its kind (a regular expression's piece: each
#: attribute is a name, ``=`` and a value with no whitespace or ``]``; linear to match).
ATTRIBUTES = r"(?P<who>(?:\s+(?:for|quorum)=[^\s\]]+)*)"
#: What a responder named in a stopping point may not hold.
_UNNAMEABLE = re.compile(r"[\s,\]\x00-\x1f\x7f]")
#: The longest quorum a marker can give (more digits are refused, not converted).
_MAX_QUORUM_DIGITS = 9


def parse_attributes(attributes: str) -> tuple[tuple[str, ...] | None, int | None]:
    """The responders and quorum a marker's ``for=`` and ``quorum=`` give (``None`` when absent).

    Raises:
        StoppingPointError: An attribute is given twice, or its value is not usable.
    """
    responders: tuple[str, ...] | None = None
    quorum: int | None = None
    for token in attributes.split():
        name, _, value = token.partition("=")
        if name == "for":
            if responders is not None:
                raise StoppingPointError("for= is given twice")
            responders = tuple(value.split(","))
        else:
            if quorum is not None:
                raise StoppingPointError("quorum= is given twice")
            if not (value.isascii() and value.isdigit()) or len(value) > _MAX_QUORUM_DIGITS:
                raise StoppingPointError(f"quorum={value[:12]} is not a whole number")
            quorum = int(value)
    return responders, quorum


def checked_who(kind: AskKind, responders: Sequence[str] | None, quorum: int | None) -> tuple[tuple[str, ...], int]:
    """A stopping point's responders and quorum, checked: ``((), 1)`` when it names none.

    Raises:
        StoppingPointError: A responder is empty, repeated or cannot be named in a marker;
            or the quorum is not from 1 to the responders' count, is given without
            responders, or is above 1 for a text ask.
    """
    names = _checked_responders(responders)
    if quorum is None:
        return names, 1
    if isinstance(quorum, bool) or not isinstance(quorum, int):
        raise StoppingPointError(f"quorum must be a whole number, not {type(quorum).__name__}")
    if not names:
        raise StoppingPointError("quorum is given without responders")
    if not 1 <= quorum <= len(names):
        raise StoppingPointError(f"quorum is {quorum}; it must be from 1 to the {len(names)} responders")
    if kind is AskKind.TEXT and quorum > 1:
        raise StoppingPointError(f"quorum of {quorum} is for choice asks: a text ask takes quorum 1")
    return names, quorum


def _checked_responders(responders: Sequence[str] | None) -> tuple[str, ...]:
    if responders is None:
        return ()
    if isinstance(responders, (str, bytes, Mapping)) or not isinstance(responders, Sequence) or not responders:
        raise StoppingPointError("responders must be a non-empty list of senders")
    names = tuple(responders)
    for position, name in enumerate(names, start=1):
        if not isinstance(name, str) or not name:
            raise StoppingPointError(f"responder {position} is empty or not a string")
        if _UNNAMEABLE.search(name):
            raise StoppingPointError(f"responder {position} holds whitespace, ',', ']' or a control character")
        if name in names[: position - 1]:
            raise StoppingPointError(f"responder {position} repeats {name!r}")
    return names


def render_attributes(responders: tuple[str, ...], quorum: int) -> str:
    """The marker's attributes for these responders and quorum (``""`` for anyone's ask)."""
    if not responders:
        return ""
    return f" for={','.join(responders)}" + (f" quorum={quorum}" if quorum > 1 else "")


def who_from_json(data: Mapping[str, Any]) -> tuple[Any, Any]:
    """The ``responders`` and ``quorum`` of a structured stopping point, as given (``null`` is absent)."""
    responders = data.get("responders")
    if responders is not None and not isinstance(responders, list):
        raise StoppingPointError("responders must be a list of senders")
    return responders, data.get("quorum")
