"""A stopping point's numbered option lines (``1. Sequence``, ``2) Class``, ``3 - Use case``):
reading one, and naming what is wrong with a numbering."""

from __future__ import annotations

import re

# An option line's head: its number and separator. The label is the rest, stripped with
# str.strip() (the same whitespace as ``\s``). No quantifier here can overlap its neighbour
# (spaces, digits, separator), and the head is matched only at the line's start, so one
# line costs time linear in its length; a lazy label followed by ``\s*$`` would rescan the
# rest of the line from every character of a long run of spaces (quadratic in the line).
_OPTION_HEAD = re.compile(r"\s*(\d+)\s*[.)-]")


def option_line(line: str) -> tuple[str, str] | None:
    """The digits and the label (stripped, maybe empty) of a numbered option line, or
    ``None`` when ``line`` is not one. Linear in the line's length."""
    head = _OPTION_HEAD.match(line)
    if head is None:
        return None
    return head.group(1), line[head.end() :].strip()


def option_number(digits: str) -> int | None:
    """The number an option line gives, or ``None`` when it is far too long to be one
    (``int()`` refuses more than 4,300 digits with a plain ``ValueError``)."""
    significant = digits.lstrip("0") or "0"
    return int(significant) if len(significant) <= 9 else None


def numbering_problem(digits: str, given: int | None, expected: int) -> str:
    """What is wrong with an option numbered ``digits`` (read as ``given``) where ``expected`` was due."""
    shown = digits if len(digits) <= 12 else digits[:12] + "..."
    if given == 0:
        return f"option numbered {shown}: the options are numbered from 1"
    if given is not None and given < expected:
        return f"option numbered {shown} repeats a number; expected {expected}"
    if expected == 1:
        return f"option numbered {shown} leaves a gap: the options are numbered from 1"
    return f"option numbered {shown} leaves a gap; expected {expected}"
