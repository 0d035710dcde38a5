"""The form a text ask's answer must take: a number, a whole number, an email address, ...

Pure: no I/O. A plain text ask takes any non-empty answer; a text ask with an
:class:`Expect` takes only an answer of that form, and anything else is a miss (counted,
retried, escalated as usual) whose retry line says what is wanted (:func:`describe`).
The matcher checks an answer with :func:`value_of`, which the adapters also use to read
the typed value. The store keeps an ask's form as the JSON text of :func:`to_json`.
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
from parkgate.core.menu import Verdict, choose, normalise, slash_command
from parkgate.errors import InputError

TEXT = "text"
NUMBER = "number"
INTEGER = "integer"
EMAIL = "email"
URI = "uri"
DATE = "date"
DATE_TIME = "date-time"
SEVERAL = "several"
#: Every form, in the order an error message lists them.
FORMS: tuple[str, ...] = (TEXT, NUMBER, INTEGER, EMAIL, URI, DATE, DATE_TIME, SEVERAL)
NUMBER_FORMS: frozenset[str] = frozenset({NUMBER, INTEGER})
#: The longest number an answer may spell (keeps int() and float() off huge strings).
MAX_NUMBER_CHARS = 100
#: The longest answer the ``several`` form reads (keeps the split off huge messages).
MAX_SEVERAL_CHARS = 4096

_INTEGER_RE = re.compile(r"[+-]?\d+", re.ASCII)
_NUMBER_RE = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?", re.ASCII)
_EMAIL_RE = re.compile(r"[^@\s]+@[^@\s.]+(?:\.[^@\s.]+)+")
_URI_RE = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:\S+")
_DATE_RE = re.compile(r"\d{4}-\d{2}-\d{2}", re.ASCII)
_DATE_TIME_RE = re.compile(r"\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(?:\.\d{1,6})?(?:[Zz]|[+-]\d{2}:\d{2})", re.ASCII)

Value = str | int | float | tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Expect:
    """The form a text ask's answer must take.

    Forms (the string forms are the JSON Schema formats MCP elicitation allows):

    - ``text``: any non-empty text; ``min_length``/``max_length`` bound its length.
    - ``number`` / ``integer``: a decimal number (``-2``, ``3.5``, ``1e3``) / a whole
      number (``42``, ``-7``), ASCII digits after NFKC (fullwidth digits count), no
      thousands separators; ``minimum``/``maximum`` are inclusive bounds.
    - ``email``: ``name@domain.tld``; ``uri``: an absolute URI (``scheme:rest``, no
      spaces); ``date``: ``YYYY-MM-DD``; ``date-time``: RFC 3339 with a ``Z`` or
      ``+HH:MM`` offset. Each may carry ``min_length``/``max_length`` too.
    - ``several``: one or more of ``options``, by number or label, separated by commas or
      spaces (``1, 3``, ``red blue``); ``min_items``/``max_items`` bound how many. The
      value is the chosen labels in the options' order.

    Building one checks it: an unknown form, a bound on the wrong form (``minimum`` on an
    email), a bound that is not a finite number or a whole number of at least 0 where a
    length is meant, or a lower bound above the upper one raises :class:`InputError`.
    ``several`` needs ``options`` (distinct labels; any sequence is kept as a tuple) and
    takes ``min_items``/``max_items`` (whole numbers up to the number of options); no
    other form takes them.
    """

    form: str = TEXT
    minimum: int | float | None = None
    maximum: int | float | None = None
    min_length: int | None = None
    max_length: int | None = None
    options: tuple[str, ...] | None = None
    min_items: int | None = None
    max_items: int | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.form, str) or self.form not in FORMS:
            raise InputError(f"expect form must be one of {', '.join(FORMS)}, not {self.form!r}")
        if self.form == SEVERAL:
            self._check_several()
            return
        for name in ("options", "min_items", "max_items"):
            if getattr(self, name) is not None:
                raise InputError(f"expect {name} is for the several form, not {self.form}")
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

    def _check_several(self) -> None:
        for name in ("minimum", "maximum", "min_length", "max_length"):
            if getattr(self, name) is not None:
                raise InputError(f"expect {name} is not for the several form")
        options = self.options
        if isinstance(options, (str, bytes)) or not isinstance(options, (list, tuple)) or not options:
            raise InputError(f"expect options must be a non-empty list of labels, not {options!r}")
        if not all(isinstance(label, str) and label.strip() for label in options):
            raise InputError("expect options must be non-empty strings")
        if len({_folded(label) for label in options}) != len(options):
            raise InputError("expect options must differ from each other")
        object.__setattr__(self, "options", tuple(options))  # hashable, whatever sequence came in
        for name, lowest in (("min_items", 0), ("max_items", 1)):
            value = getattr(self, name)
            if value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, int) or not lowest <= value <= len(options):
                raise InputError(f"expect {name} must be a whole number from {lowest} to {len(options)}, not {value!r}")
        if self.min_items is not None and self.max_items is not None and self.min_items > self.max_items:
            raise InputError(f"expect min_items {self.min_items} is above max_items {self.max_items}")

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


_FIELDS: tuple[str, ...] = (
    "form",
    "minimum",
    "maximum",
    "min_length",
    "max_length",
    "options",
    "min_items",
    "max_items",
)


def to_json(expect: Expect) -> str:
    """The stored form: a JSON object with the fields that are set."""
    return json.dumps(to_dict(expect), separators=(",", ":"))


def to_dict(expect: Expect) -> dict[str, Any]:
    """The fields that are set, ``form`` first (the JSON shape of an ask's ``expect``)."""
    found = {name: getattr(expect, name) for name in _FIELDS if getattr(expect, name) is not None}
    if expect.options is not None:
        found["options"] = list(expect.options)
    return found


@lru_cache(maxsize=256)
def from_json(raw: str) -> Expect:
    """The :class:`Expect` stored as :func:`to_json` text (each distinct text decoded once)."""
    return Expect(**json.loads(raw))


def value_of(expect: Expect, text: str) -> Value | None:
    """The answer ``text`` as ``expect``'s form takes it, or ``None`` when it does not conform.

    ``text`` form: the text as given (non-empty after trimming). Numbers: an ``int``
    (``integer``, or a ``number`` written without a point or exponent) or a ``float``,
    within the bounds. String formats: the trimmed text. Lengths count characters of
    that value. ``several``: the chosen labels in the options' order, each once.
    """
    form = expect.form
    if form == SEVERAL:
        return _several(expect, text)
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


def _several(expect: Expect, text: str) -> tuple[str, ...] | None:
    """The options ``text`` names: the whole text as one option, else each comma-separated
    part as one option, else each word of a part as one."""
    options = expect.options or ()
    if len(text) > MAX_SEVERAL_CHARS:
        return None
    whole = _option_at(options, text)
    if whole is not None:
        chosen = {whole}
    else:
        chosen = set()
        for part in unicodedata.normalize("NFKC", text).split(","):
            found = _options_in(options, part)
            if found is None:
                return None
            chosen.update(found)
    if not chosen:
        return None
    if expect.min_items is not None and len(chosen) < expect.min_items:
        return None
    if expect.max_items is not None and len(chosen) > expect.max_items:
        return None
    return tuple(options[position - 1] for position in sorted(chosen))


def _options_in(options: tuple[str, ...], part: str) -> list[int] | None:
    """The positions one comma-separated part names (none for a blank part)."""
    whole = _option_at(options, part)
    if whole is not None:
        return [whole]
    positions = [_option_at(options, word) for word in part.split()]
    if any(position is None for position in positions):
        return None
    return [position for position in positions if position is not None]


def _option_at(options: tuple[str, ...], word: str) -> int | None:
    """The 1-based position ``word`` selects, by the matcher's own rules for a menu."""
    normal = normalise(word)
    if slash_command(normal) is not None:
        return None
    found = choose(options, normal)
    return found.option_index if found.verdict is Verdict.SELECT else None


def _folded(label: str) -> str:
    return " ".join(unicodedata.normalize("NFKC", label).split()).casefold()


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
    if expect.form == SEVERAL:
        return _several_wanted(expect) or wanted
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


def _several_wanted(expect: Expect) -> str | None:
    """How many options the several form wants, in words; ``None`` for "one or more"."""
    low, high = expect.min_items, expect.max_items
    if low is not None and high is not None:
        if low == high:
            return P.EXPECT_ITEMS_EXACTLY.format(count=low)
        return P.EXPECT_ITEMS_BETWEEN.format(low=max(low, 1), high=high)
    if low is not None and low > 1:
        return P.EXPECT_ITEMS_AT_LEAST.format(low=low)
    if high is not None:
        return P.EXPECT_ITEMS_AT_MOST.format(high=high)
    return None


def numbered_options(expect: Expect) -> list[str]:
    """The ``several`` form's options as a menu shows them (``1. Red``), else nothing."""
    return [f"{position}. {label}" for position, label in enumerate(expect.options or (), start=1)]


def _shown(bound: int | float) -> str:
    """A bound as a person writes it: ``1`` (not ``1.0``), ``2.5``."""
    return str(int(bound)) if float(bound).is_integer() and abs(bound) < 10**15 else repr(float(bound))
