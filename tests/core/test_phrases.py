"""The one shared definition of reply kinds and user-visible strings.

Two guards: every reply kind has its string, and no string in ``phrases`` is dead (each
one reaches a person through some other module under ``src/parkgate``).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import parkgate
from parkgate.core import phrases as P
from parkgate.core.kinds import ReplyKind
from parkgate.core.phrases import PHRASES

PACKAGE = Path(parkgate.__file__).resolve().parent
PHRASES_FILE = PACKAGE / "core" / "phrases.py"


def _is_text(value: object) -> bool:
    """A string, or a collection whose items are all strings (word sets, templates)."""
    if isinstance(value, str):
        return True
    if isinstance(value, dict):
        return all(isinstance(item, str) for item in value.values())
    if isinstance(value, (frozenset, set, tuple, list)):
        return all(isinstance(item, str) for item in value)
    return False


def _public_constants() -> dict[str, ast.expr]:
    """Module-level UPPER_CASE names assigned in phrases.py, with their value expressions."""
    found: dict[str, ast.expr] = {}
    for node in ast.parse(PHRASES_FILE.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            targets, value = [node.target], node.value
        else:
            continue
        for target in targets:
            if isinstance(target, ast.Name) and target.id.isupper() and not target.id.startswith("_"):
                found[target.id] = value
    return found


def _names_referenced(tree: ast.AST) -> set[str]:
    """Every identifier a module reads: bare names, ``P.NAME`` attributes, imported names."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            names.add(node.id)
        elif isinstance(node, ast.Attribute):
            names.add(node.attr)
        elif isinstance(node, ast.ImportFrom):
            names.update(alias.name for alias in node.names)
    return names


def _used_outside_phrases() -> set[str]:
    used: set[str] = set()
    for module in PACKAGE.rglob("*.py"):
        if module.resolve() == PHRASES_FILE:
            continue
        used |= _names_referenced(ast.parse(module.read_text(encoding="utf-8"), filename=str(module)))
    return used


def test_every_reply_kind_has_a_phrase() -> None:
    missing = [kind.value for kind in ReplyKind if kind not in PHRASES]
    assert not missing, f"reply kinds without an entry in PHRASES: {missing}"
    assert set(PHRASES) == set(ReplyKind), "PHRASES holds a key that is not a ReplyKind"


@pytest.mark.parametrize("kind", [kind for kind in ReplyKind if kind is not ReplyKind.PASS])
def test_every_kind_but_pass_shows_the_person_something(kind: ReplyKind) -> None:
    # ``pass`` is the one kind routed onward unseen; every other reply is shown to the person.
    assert isinstance(PHRASES[kind], str)
    assert PHRASES[kind].strip(), f"{kind.value} would show the person an empty line"


def test_pass_shows_nothing() -> None:
    assert PHRASES[ReplyKind.PASS] == ""


def test_reply_kind_values_are_the_documented_wire_names() -> None:
    assert {kind.value for kind in ReplyKind} == {
        "pass",
        "asked",
        "selected",
        "answered",
        "retry",
        "escalated",
        "reshown",
        "cancelled",
        "not_yours",
        "voted",
        "late",
    }


def test_the_scan_sees_every_public_text_constant() -> None:
    # Guards the guard: the AST scan must list what the module really exports as text.
    constants = _public_constants()
    runtime = {name for name in dir(P) if name.isupper() and _is_text(getattr(P, name))}
    assert runtime <= set(constants), f"constants the scan missed: {runtime - set(constants)}"
    assert "PHRASES" in constants and "CANCEL_WORDS" in constants


def test_no_phrase_is_unused() -> None:
    """Each public string constant is read by some module under src/parkgate other than
    phrases.py, or is embedded in a phrases constant that is (``EXITS_HINT`` reaches people
    inside the escalated line)."""
    constants = {name: value for name, value in _public_constants().items() if _is_text(getattr(P, name))}
    outside = _used_outside_phrases()
    used = {name for name in constants if name in outside}
    # A constant embedded in a used constant is used too (to a fixed point).
    embedded_in = {name: _names_referenced(value) for name, value in constants.items()}
    grew = True
    while grew:
        grew = False
        for name in set(constants) - used:
            if any(name in embedded_in[user] for user in used):
                used.add(name)
                grew = True
    unused = sorted(set(constants) - used)
    assert not unused, f"phrases no module under src/parkgate uses: {unused}"


def test_no_user_visible_phrase_is_retyped_in_src() -> None:
    """The longer phrases appear as literals only in phrases.py (one definition)."""
    literals: list[str] = [
        value
        for name in _public_constants()
        if isinstance(value := getattr(P, name), str) and len(value) >= 12 and "{" not in value
    ]
    literals += [value for value in PHRASES.values() if len(value) >= 12 and "{" not in value]
    offenders: list[str] = []
    for module in PACKAGE.rglob("*.py"):
        if module.resolve() == PHRASES_FILE:
            continue
        for node in ast.walk(ast.parse(module.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in literals:
                offenders.append(f"{module.relative_to(PACKAGE)}:{node.lineno}: {node.value!r}")
    assert not offenders, "phrases retyped instead of imported:\n" + "\n".join(offenders)
