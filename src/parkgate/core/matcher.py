"""Classify one reply to a parked ask. Pure and total: every input gets a verdict.

Decisions (documented in docs/matching.md):
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

from parkgate.core.expect import Expect, value_of
from parkgate.core.kinds import AskKind
from parkgate.core.menu import Match as Match
from parkgate.core.menu import Verdict as Verdict
from parkgate.core.menu import choose, slash_command
from parkgate.core.menu import normalise as normalise
from parkgate.core.phrases import CONTROL_WORDS


def match(kind: AskKind, options: tuple[str, ...] | list[str], text: str, expect: Expect | None = None) -> Match:
    """Decide what ``text`` means to an ask of ``kind`` with ``options``.

    A text ask with ``expect`` takes only an answer of that form: anything else (a bare
    control word included) is a mismatch.
    """
    word = normalise(text)
    command = slash_command(word)
    if command is not None:  # the slash door is never shadowed, not even by a label "／stop"
        return Match(command)
    if kind is AskKind.TEXT:
        if not word or (expect is not None and value_of(expect, text) is None):
            return Match(Verdict.MISMATCH)
        return Match(Verdict.ANSWER, bare_control_word=word in CONTROL_WORDS)
    return choose(options, word)
