"""An ask's ``context`` holds only storable text, at any depth (issue 26, item 7).

A NUL in a context key or string, however deeply nested, is refused with
:class:`InputError` naming ``context`` before anything is written, as it is in a message
or a prompt; so is a lone surrogate. The text ``\\u0000`` (six characters) is kept as given.
"""

from __future__ import annotations

from typing import Any

import pytest

from parkgate import Gateway, InputError
from parkgate.core.kinds import ReplyKind

BAD_CONTEXTS: list[tuple[dict[str, Any], str]] = [
    ({"note": "a\x00b"}, "NUL"),
    ({"a\x00": 1}, "NUL"),
    ({"args": {"env": ["prod", {"deep": "x\x00"}]}}, "NUL"),
    ({"args": [[[{"k\x00": None}]]]}, "NUL"),
    ({"note": "\ud800"}, "surrogate"),
    ({"args": {"\udfff": 1}}, "surrogate"),
]


@pytest.mark.parametrize(("context", "problem"), BAD_CONTEXTS)
def test_a_nul_or_lone_surrogate_anywhere_in_context_is_refused_and_nothing_is_parked(
    gateway: Gateway, context: dict[str, Any], problem: str
) -> None:
    with pytest.raises(InputError, match=f"context .*{problem}"):
        gateway.ask("c-1", "Deploy?", ["Deploy", "Hold"], context=context)
    assert gateway.open_asks() == []
    assert gateway.handle("c-1", "1").kind is ReplyKind.PASS  # nothing was parked


def test_context_text_that_only_spells_an_escape_is_kept_as_given(gateway: Gateway) -> None:
    context = {"note": "\\u0000 is how JSON writes a NUL", "nested": {"tabs\tand\nlines": ["ok"]}}
    parked = gateway.ask("c-1", "Deploy?", ["Deploy", "Hold"], context=context)
    assert gateway.get(parked.ask_id or "").context == context
