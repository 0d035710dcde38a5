"""Hostile inputs, and what each one must do to a parked ask.

What an input must do comes from the oracle of the matcher's rules,
:mod:`parkgate.prove.oracle` (docs/contract.md's "Matching rules" written out apart
from ``parkgate.core.machine.match``); :func:`expect` puts its verdict in the terms the
hostile-input tests check: a reply kind, a miss, or a refusal.
"""

from __future__ import annotations

import random
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from hypothesis import strategies as st

from parkgate.core.kinds import ReplyKind
from parkgate.core.phrases import CANCEL_WORDS_IN_ORDER, RESHOW_WORDS_IN_ORDER
from parkgate.prove import oracle

CANCEL = CANCEL_WORDS_IN_ORDER
RESHOW = RESHOW_WORDS_IN_ORDER

#: The option lists under attack: control-word labels, multi-word labels, numeric labels.
OPTION_SETS: tuple[tuple[str, ...], ...] = (
    ("Sequence", "Class", "Activity", "State"),
    ("Deploy", "Hold", "Stop"),
    ("Yes", "No", "Menu", "Cancel"),
    ("Ship it", "Wait a day"),
    ("3", "10", "Other"),
)

#: Invisible and direction characters (none of them is whitespace to Python or NFKC).
INVISIBLE = ("\u200b", "\u200c", "\u200d", "\u200e", "\u200f", "\u202e", "\u2066", "\u2069", "\ufeff", "\u00ad")
SPACES = (" ", "  ", "\t", "\n", "\r\n", "\u00a0", "\u3000", "\u2028", "\u2003")
CONFUSABLE = {
    "a": "\u0430",  # Cyrillic a
    "e": "\u0435",
    "o": "\u043e",
    "c": "\u0441",
    "p": "\u0440",
    "S": "\u0405",
    "l": "\u04cf",
    "i": "\u0456",
    "x": "\u0445",
    "y": "\u0443",
    "1": "l",
    "0": "O",
}
NUMBERS = (
    "0", "00", "01", "02", "+1", "-1", "+2", "-0", "1.0", "1.5", "2.", ".2", "1e0", "2e0", "1E0", "0x2", "0b1",
    "1_0", "1,0", "١", "٢", "۲", "२", "２", "１０", "²", "⑵", "½", "Ⅱ", "❷", "2️⃣", "1\u20e3", "#2", "(2)", "2)",
    "2.", "no. 2", "option 2", "2 please", "11", "99999999999999999999", "-2", " 2 ", "٠٢", "4", "5", "12",
)  # fmt: skip
CONTROL_FORMS = (
    "{w}", "/{w}", "//{w}", "/ {w}", "／{w}", "\\{w}", "{w}.", "{w}!", "{w}?", "please {w}", "{w} please",
    "I want to {w} now", "{w} {w}", "/{w}/", "/{w} now", "'{w}'", "\"{w}\"", "-{w}", "/{W}", "{W}", " /{w} ",
)  # fmt: skip
MISC = (
    "", " ", "/", "//", "/ /", "///", "\x00", "a\x00b", "\x07", "\x1b[31mred\x1b[0m", "👍", "🛑", "✅",
    "👨\u200d👩\u200d👧", "🇺🇸", "ok", "yes", "no", "sure", "the first one", "second", "?", "...", "null", "None",
    "undefined", "'; DROP TABLE asks; --", "%s", "{menu}", "{0}", "$1", "NaN", "true", "[]", "{}",
)  # fmt: skip


@dataclass(frozen=True)
class Expect:
    """What an input must do: the reply kind (a miss is ``None``) and the selected option."""

    kind: ReplyKind | None  # None: a miss (retry or escalated, by the counter)
    option_index: int | None = None
    refused: bool = False  # InputError: not routed anywhere, the ask unchanged


def expect(options: Sequence[str], text: str, limit: int) -> Expect:
    """What ``text`` must do to an open ask with ``options`` (() = a text ask), per the oracle."""
    verdict = oracle.expected(options, text, limit=limit)
    if verdict.refused:
        return Expect(None, refused=True)
    if verdict.is_miss:
        return Expect(None)
    return Expect(verdict.kind, verdict.option_index)


def _variants(label: str, rng: random.Random) -> str:
    choice = rng.randrange(9)
    if choice == 0:
        return label.upper()
    if choice == 1:
        return "".join(ch.upper() if rng.random() < 0.5 else ch.lower() for ch in label)
    if choice == 2:
        return rng.choice(SPACES) + label + rng.choice(SPACES)
    if choice == 3:
        return label.replace(" ", rng.choice((*SPACES, "")))
    if choice == 4:
        cut = rng.randrange(1, len(label) + 1)
        return label[:cut] + rng.choice(INVISIBLE) + label[cut:]
    if choice == 5:
        return "".join(CONFUSABLE.get(ch, ch) if rng.random() < 0.5 else ch for ch in label)
    if choice == 6:  # fullwidth letters: NFKC makes them ASCII again
        return "".join(chr(ord(ch) + 0xFEE0) if "!" <= ch <= "~" else ch for ch in label)
    if choice == 7:
        return label[: max(1, len(label) - 1)] if rng.random() < 0.5 else label + rng.choice(("s", ".", "!", " x"))
    return label


def _control(rng: random.Random) -> str:
    word = rng.choice(CANCEL + RESHOW)
    form = rng.choice(CONTROL_FORMS)
    return form.format(w=word, W=word.upper())


def random_input(rng: random.Random, options: Sequence[str], long_every: int = 400) -> str:
    """One hostile input (seeded): fragments of numbers, labels, control words, junk."""
    if rng.randrange(long_every) == 0:
        size = rng.choice((15_999, 16_000, 16_001, 100_000, 1_000_000))
        return rng.choice(("x", "1", " ", "/cancel ", "\u200b")) * size
    parts = []
    for _ in range(rng.choice((1, 1, 1, 2, 2, 3))):
        pick = rng.randrange(6)
        if pick == 0:
            parts.append(rng.choice(NUMBERS))
        elif pick == 1 and options:
            parts.append(_variants(rng.choice(options), rng))
        elif pick == 2:
            parts.append(_control(rng))
        elif pick == 3:
            parts.append(rng.choice(MISC))
        elif pick == 4:
            parts.append(rng.choice(INVISIBLE + SPACES))
        else:
            parts.append(str(rng.randrange(1, len(options) + 2)) if options else rng.choice(NUMBERS))
    glue = rng.choice(("", "", " ", rng.choice(INVISIBLE), rng.choice(SPACES)))
    return glue.join(parts)


def random_inputs(seed: int, count: int, options: Sequence[str]) -> Iterator[str]:
    """``count`` seeded hostile inputs for an ask with ``options``."""
    rng = random.Random(seed)
    for _ in range(count):
        yield random_input(rng, options)


_fragment = st.one_of(
    st.sampled_from(NUMBERS),
    st.sampled_from(MISC),
    st.sampled_from(INVISIBLE + SPACES),
    st.sampled_from([form.format(w=w, W=w.upper()) for w in CANCEL + RESHOW for form in CONTROL_FORMS]),
    st.sampled_from([label for options in OPTION_SETS for label in options]),
    st.integers(min_value=-3, max_value=12).map(str),
    st.text(max_size=12),
    st.text(alphabet=st.characters(categories=["Nd", "No", "Nl", "Zs", "Cf", "Mn", "So"]), max_size=6),
)

#: Hypothesis' share: fragments glued together, plus the odd giant string.
hostile_text = st.one_of(
    st.lists(_fragment, min_size=1, max_size=4).flatmap(
        lambda parts: st.sampled_from(["", " ", "\u200d", "\u00a0", "\t"]).map(lambda glue: glue.join(parts))
    ),
    st.sampled_from(["x" * 1_000_000, "1" * 16_001, " " * 16_001 + "1", "\x00" * 10]),
)
