"""Values as the CLI and the console show them: nothing in a value acts, or hides.

Data that reaches a screen (conversation ids, prompts, labels, answers) may hold
terminal control sequences (ESC, BEL, OSC 8 links), direction overrides (U+202E) or
characters that show as nothing (U+200B). Each of those is shown as its escape,
``\\u202e``, so two values that differ only by one of them never look the same and no
value can rewrite the screen. Ids also show compatibility characters (``ｍ``, which
NFKC turns into ``m``) and backslashes escaped, so an id reads back exactly.

:data:`HIDDEN_RANGES` is the one list of the characters shown escaped: control and
format characters, line and paragraph separators, surrogates, and the characters that
render blank (U+034F, the Hangul fillers, U+2800). The console receives it in its page.
"""

from __future__ import annotations

import bisect
import json
import unicodedata
from typing import Any

#: (first, last) code points of the characters shown escaped, sorted (Unicode categories
#: Cc, Cf, Zl, Zp and Cs, and the blank-looking U+034F, U+115F-1160, U+2800, U+3164, U+FFA0).
HIDDEN_RANGES: tuple[tuple[int, int], ...] = (
    (0x0000, 0x001F), (0x007F, 0x009F), (0x00AD, 0x00AD), (0x034F, 0x034F), (0x0600, 0x0605),
    (0x061C, 0x061C), (0x06DD, 0x06DD), (0x070F, 0x070F), (0x0890, 0x0891), (0x08E2, 0x08E2),
    (0x115F, 0x1160), (0x180E, 0x180E), (0x200B, 0x200F), (0x2028, 0x202E), (0x2060, 0x2064),
    (0x2066, 0x206F), (0x2800, 0x2800), (0x3164, 0x3164), (0xD800, 0xDFFF), (0xFEFF, 0xFEFF),
    (0xFFA0, 0xFFA0), (0xFFF9, 0xFFFB), (0x110BD, 0x110BD), (0x110CD, 0x110CD), (0x13430, 0x13438),
    (0x1BCA0, 0x1BCA3), (0x1D173, 0x1D17A), (0xE0001, 0xE0001), (0xE0020, 0xE007F),
)  # fmt: skip
_STARTS = [first for first, _ in HIDDEN_RANGES]


def is_hidden(char: str) -> bool:
    """Whether ``char`` is one of :data:`HIDDEN_RANGES`."""
    point = ord(char)
    where = bisect.bisect_right(_STARTS, point) - 1
    return where >= 0 and point <= HIDDEN_RANGES[where][1]


def escaped(char: str) -> str:
    """``\\u202e`` (or ``\\U000e0041`` beyond the first plane)."""
    point = ord(char)
    return f"\\u{point:04x}" if point <= 0xFFFF else f"\\U{point:08x}"


def visible_text(value: object) -> str:
    """Prose (a prompt, a label, an answer) as shown: hidden characters escaped, line
    breaks and tabs kept."""
    text = "" if value is None else str(value)
    return "".join(escaped(char) if is_hidden(char) and char not in "\n\t" else char for char in text)


def visible_id(value: object) -> str:
    """An id as shown: one line, hidden characters, compatibility characters and
    backslashes escaped, so an id that looks the same is the same."""
    text = "" if value is None else str(value)
    return "".join(
        escaped(char) if char == "\\" or is_hidden(char) or unicodedata.normalize("NFKC", char) != char else char
        for char in text
    )


def json_line(data: Any) -> str:
    """One JSON object a line, as the CLI prints it: non-ASCII kept readable, hidden
    characters escaped (``\\u202e``: the same JSON value, shown)."""
    text = json.dumps(data, ensure_ascii=False)
    return "".join(_json_escaped(char) if is_hidden(char) else char for char in text)


def _json_escaped(char: str) -> str:
    """``char`` as a JSON escape (a surrogate pair beyond the first plane)."""
    point = ord(char)
    if point <= 0xFFFF:
        return f"\\u{point:04x}"
    point -= 0x10000
    return f"\\u{0xD800 + (point >> 10):04x}\\u{0xDC00 + (point & 0x3FF):04x}"


def format_hours(seconds: float) -> str:
    """Hours as a person writes them: ``6``, ``0.5``, ``2.25`` (never ``6.0``).

    Two decimals at most from a tenth of an hour up; two significant digits below it
    (``0.025`` for 90 seconds), so a short TTL never shows as ``0``.
    """
    hours = seconds / 3600
    if hours >= 0.1:
        return f"{hours:.2f}".rstrip("0").rstrip(".")
    return f"{hours:.2g}"


def hidden_ranges() -> list[list[int]]:
    """:data:`HIDDEN_RANGES` as JSON lists, for the console's page."""
    return [[first, last] for first, last in HIDDEN_RANGES]


__all__ = [
    "HIDDEN_RANGES",
    "escaped",
    "format_hours",
    "hidden_ranges",
    "is_hidden",
    "json_line",
    "visible_id",
    "visible_text",
]
