"""The form a text ask's answer must take: a number, a whole number, an email address, ...

A plain text ask takes any non-empty answer. A text ask with an :class:`Expect` takes
only an answer of that form; anything else is a miss (counted, retried, escalated as
usual) whose retry line says what is wanted (:func:`describe`). The matcher checks an
answer with :func:`value_of`, which the adapters also use to read the typed value (an
``int`` for ``integer``, a ``float`` or ``int`` for ``number``, the trimmed text for
the string forms). The store keeps an ask's form as the JSON text of :func:`to_json`.

Forms (the string forms are the JSON Schema formats MCP elicitation allows):

- ``text``: any non-empty text; ``min_length``/``max_length`` bound its length.
- ``number`` / ``integer``: a decimal number (``-2``, ``3.5``, ``1e3``) / a whole
  number (``42``, ``-7``), ASCII digits after NFKC (fullwidth digits count), no
  thousands separators; ``minimum``/``maximum`` are inclusive bounds.
- ``email``: ``name@domain.tld``; ``uri``: an absolute URI (``scheme:rest``, no
  spaces); ``date``: ``YYYY-MM-DD``; ``date-time``: RFC 3339, ``YYYY-MM-DDTHH:MM:SS``
  with an optional fraction and a ``Z`` or ``+HH:MM`` offset. Each may carry
  ``min_length``/``max_length`` too.
"""

from __future__ import annotations

import json
import math
import re
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date, datetime
from functools import lru_cache
from typing import Any

from parkgate.core import phrases as P
from parkgate.core.errors import InputError

TEXT = "text"
NUMBER = "number"
INTEGER = "integer"
EMAIL = "email"
URI = "uri"
DATE = "date"
DATE_TIME = "date-time"
#: Every form, in the order an error message lists them.
FORMS: tuple[str, ...] = (TEXT, NUMBER, INTEGER, EMAIL, URI, DATE, DATE_TIME)
NUMBER_FORMS: frozenset[str] = frozenset({NUMBER, INTEGER})
#: The longest number an answer may spell (keeps int() and float() off huge strings).
MAX_NUMBER_CHARS = 100

_INTEGER_RE = re.compile(r"[+-]?\d+", re.ASCII)
_NUMBER_RE = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?", re.ASCII)
_EMAIL_RE = re.compile(r"[^@\s]+@[^@\s.]+(?:\.[^@\s.]+)+")
_URI_RE = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:\S+")
_DATE_RE = re.compile(r"\d{4}-\d{2}-\d{2}", re.ASCII)
_DATE_TIME_RE = re.compile(r"\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(?:\.\d{1,6})?(?:[Zz]|[+-]\d{2}:\d{2})", re.ASCII)

Value = str | int | float


@dataclass(frozen=True, slots=True)
class Expect:
    """The form a text ask's answer must take (see the module's docstring for the forms).

    Building one checks it: an unknown form, a bound on the wrong form (``minimum`` on an
    email), a bound that is not a finite number or a whole number of at least 0 where a
    length is meant, or a lower bound above the upper one raises :class:`InputError`.
    """

    form: str = TEXT
    minimum: int | float | None = None
    maximum: int | float | None = None
    min_length: int | None = None
    max_length: int | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.form, str) or self.form not in FORMS:
            raise InputError(f"expect form must be one of {', '.join(FORMS)}, not {self.form!r}")
        numeric = self.form in NUMBER_FORMS
        for name in ("minimum", "maximum"):
            value = getattr(self, name)
            if value is None:
                continue
            if not numeric:
                raise InputError(f"expect {name} is for the number and integer forms, not {self.form}")
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
                raise InputError(f"expect {name} must be a finite number, not {value!r}")
        for name in ("min_length", "max_length"):
            value = getattr(self, name)
            if value is None:
                continue
            if numeric:
                raise InputError(f"expect {name} is for the text forms, not {self.form}")
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise InputError(f"expect {name} must be a whole number of at least 0, not {value!r}")
        if self.minimum is not None and self.maximum is not None and self.minimum > self.maximum:
            raise InputError(f"expect minimum {self.minimum} is above maximum {self.maximum}")
        if self.min_length is not None and self.max_length is not None and self.min_length > self.max_length:
            raise InputError(f"expect min_length {self.min_length} is above max_length {self.max_length}")

    @property
    def is_plain(self) -> bool:
        """True when it asks nothing of an answer beyond what every text ask does."""
        return self.form == TEXT and self.min_length is None and self.max_length is None


def as_expect(value: object) -> Expect | None:
    """``value`` as an :class:`Expect`, or ``None`` for a plain text ask; :class:`InputError` if unusable.

    Takes ``None``, an :class:`Expect`, a form's name (``"integer"``), or a mapping of
    :class:`Expect`'s fields (``{"form": "integer", "minimum": 1}``; the JSON form).
    An expectation that asks nothing (``"text"`` without lengths) is ``None``.
    """
    if value is None:
        return None
    if isinstance(value, Expect):
        expect = value
    elif isinstance(value, str):
        expect = Expect(value)
    elif isinstance(value, Mapping):
        unknown = sorted(str(key) for key in value if key not in _FIELDS)
        if unknown:
            raise InputError(f"expect has unknown field(s) {', '.join(unknown)}; the fields are {', '.join(_FIELDS)}")
        expect = Expect(**{str(key): item for key, item in value.items()})
    else:
        raise InputError(f"expect must be a form's name, a mapping or an Expect, not {type(value).__name__}")
    return None if expect.is_plain else expect


_FIELDS: tuple[str, ...] = ("form", "minimum", "maximum", "min_length", "max_length")


def to_json(expect: Expect) -> str:
    """The stored form: a JSON object with the fields that are set."""
    return json.dumps(to_dict(expect), separators=(",", ":"))


def to_dict(expect: Expect) -> dict[str, Any]:
    """The fields that are set, ``form`` first (the JSON shape of an ask's ``expect``)."""
    return {name: getattr(expect, name) for name in _FIELDS if getattr(expect, name) is not None}


@lru_cache(maxsize=256)
def from_json(raw: str) -> Expect:
    """The :class:`Expect` stored as :func:`to_json` text (each distinct text decoded once)."""
    return Expect(**json.loads(raw))


def value_of(expect: Expect, text: str) -> Value | None:
    """The answer ``text`` as ``expect``'s form takes it, or ``None`` when it does not conform.

    ``text`` form: the text as given (non-empty after trimming). Numbers: an ``int``
    (``integer``, or a ``number`` written without a point or exponent) or a ``float``,
    within the bounds. String formats: the trimmed text. Lengths count characters of
    that value.
    """
    form = expect.form
    if form in NUMBER_FORMS:
        return _number(expect, unicodedata.normalize("NFKC", text).strip())
    value = _formatted(form, text.strip()) if form != TEXT else (text if text.strip() else None)
    if value is None:
        return None
    if expect.min_length is not None and len(value) < expect.min_length:
        return None
    if expect.max_length is not None and len(value) > expect.max_length:
        return None
    return value


def _number(expect: Expect, word: str) -> int | float | None:
    if len(word) > MAX_NUMBER_CHARS:
        return None
    number: int | float
    if _INTEGER_RE.fullmatch(word):
        number = int(word)
    elif expect.form == NUMBER and _NUMBER_RE.fullmatch(word):
        number = float(word)
        if not math.isfinite(number):
            return None
    else:
        return None
    if expect.minimum is not None and number < expect.minimum:
        return None
    if expect.maximum is not None and number > expect.maximum:
        return None
    return number


def _formatted(form: str, word: str) -> str | None:
    if form == EMAIL:
        return word if _EMAIL_RE.fullmatch(word) else None
    if form == URI:
        return word if _URI_RE.fullmatch(word) else None
    try:
        if form == DATE and _DATE_RE.fullmatch(word):
            date.fromisoformat(word)
            return word
        if form == DATE_TIME and _DATE_TIME_RE.fullmatch(word):
            datetime.fromisoformat(word[:-1] + "+00:00" if word[-1] in "Zz" else word)
            return word
    except ValueError:  # shaped right, but no such day or time (2026-02-30, 25:00)
        return None
    return None


def describe(expect: Expect) -> str:
    """What a person is asked for, in words: "a whole number from 1 to 10"."""
    wanted = P.EXPECT_WANTED[expect.form]
    low, high = expect.minimum, expect.maximum
    if low is not None and high is not None:
        return P.EXPECT_BETWEEN.format(wanted=wanted, low=_shown(low), high=_shown(high))
    if low is not None:
        return P.EXPECT_AT_LEAST.format(wanted=wanted, low=_shown(low))
    if high is not None:
        return P.EXPECT_AT_MOST.format(wanted=wanted, high=_shown(high))
    shortest, longest = expect.min_length, expect.max_length
    if shortest is not None and longest is not None:
        return P.EXPECT_LENGTH_BETWEEN.format(wanted=wanted, low=shortest, high=longest)
    if shortest is not None:
        return P.EXPECT_LENGTH_AT_LEAST.format(wanted=wanted, low=shortest)
    if longest is not None:
        return P.EXPECT_LENGTH_AT_MOST.format(wanted=wanted, high=longest)
    return wanted


def _shown(bound: int | float) -> str:
    """A bound as a person writes it: ``1`` (not ``1.0``), ``2.5``."""
    return str(int(bound)) if float(bound).is_integer() and abs(bound) < 10**15 else repr(float(bound))
