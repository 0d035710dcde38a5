"""One reply read against a menu's options: the matcher's rules for a ``choice`` ask.

The matcher (:func:`parkgate.core.machine.match`) and the ``several`` expected form
(:mod:`parkgate.core.expect`) both read words against options; they share these rules
from here, below both, so neither imports the other. Decisions (docs/matching.md):

- Input is normalised with NFKC, trimmed, inner whitespace folded to one space and
  case folded. NFKC turns fullwidth digits into ASCII, so ``２`` selects option 2;
  other scripts' digits (``٢``) do not select: only ASCII ``0-9`` after NFKC count.
- A number selects only in canonical form: ``2`` selects, ``02`` does not.
- A bare word that is an option label selects the option, even when it is also a
  control word. The slash form (``/stop``) is always the control word: option labels
  may not start with ``/``, so the slash door can never be shadowed by a label.
- Exactly one leading slash is stripped: ``//cancel`` and ``/ cancel`` are mismatches.
- Nothing partial, nothing fuzzy.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass
from enum import Enum
from functools import lru_cache

from parkgate.core.phrases import CANCEL_WORDS, RESHOW_WORDS

#: How many distinct menus the per-menu memos keep (the label index, the rendered
#: question, the options' JSON): enough for the menus in use at once, and bounded so
#: that many long, unique prompts (up to 4,000 characters and 50 options of 200 each)
#: cost a few MB at most, not memory per conversation.
MENUS_REMEMBERED = 256


class Verdict(Enum):
    """What a reply means to the ask: an option, a text answer, a control word, or none."""

    SELECT = "select"
    ANSWER = "answer"
    RESHOW = "reshow"
    CANCEL = "cancel"
    MISMATCH = "mismatch"


@dataclass(frozen=True, slots=True)
class Match:
    """The matcher's decision: a :class:`Verdict`, and the option it selects when it selects one."""

    verdict: Verdict
    option_index: int | None = None  # 1-based, for SELECT
    #: A text answer that is exactly a bare control word (taken as data).
    bare_control_word: bool = False


def normalise(text: str) -> str:
    """NFKC, trim, fold inner whitespace to one space, case fold."""
    folded = unicodedata.normalize("NFKC", text)
    return " ".join(folded.split()).casefold()


def control_verdict(word: str) -> Verdict | None:
    """The verdict of a normalised control word (without its slash), ``None`` for any other word."""
    if word in RESHOW_WORDS:
        return Verdict.RESHOW
    if word in CANCEL_WORDS:
        return Verdict.CANCEL
    return None


def slash_command(word: str) -> Verdict | None:
    """The verdict of a normalised word in the slash form (``/stop``), which no label shadows."""
    return control_verdict(word[1:]) if word.startswith("/") else None


def choose(options: tuple[str, ...] | list[str], word: str) -> Match:
    """What the normalised ``word`` selects in a menu of ``options``.

    Args:
        options: the menu's labels, in order.
        word: the reply, already :func:`normalise`-d.

    Returns:
        The option a canonical number or an exact label selects, else the bare control
        word's verdict, else a mismatch. (The slash form is the caller's to read first.)
    """
    number = _as_number(word, len(options))
    if number is not None:
        return Match(Verdict.SELECT, option_index=number)
    position = _label_positions(tuple(options)).get(word)
    if position is not None:
        return Match(Verdict.SELECT, option_index=position)
    bare = control_verdict(word)
    if bare is not None:
        return Match(bare)
    return Match(Verdict.MISMATCH)


def _as_number(word: str, count: int) -> int | None:
    if not word or not word.isascii() or not word.isdigit():
        return None
    if word[0] == "0":  # "0" is out of range; "02" is not canonical
        return None
    if len(word) > len(str(count)):  # out of range; also keeps int() off 4,300-digit strings
        return None
    value = int(word)
    return value if 1 <= value <= count else None


@lru_cache(maxsize=MENUS_REMEMBERED)
def _label_positions(options: tuple[str, ...]) -> dict[str, int]:
    """Normalised label -> its 1-based position (the first, if two normalise alike).

    An ask's options never change, so each distinct list is normalised once, not once
    per reply. The dict is only read.
    """
    positions: dict[str, int] = {}
    for position, label in enumerate(options, start=1):
        positions.setdefault(normalise(label), position)
    return positions
