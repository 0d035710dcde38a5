"""docs/contract.md's "Layout" rules, read off the source: the core imports nothing from
store, http or cli, and the store knows nothing of phrases or matching.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "src" / "parkgate"


def _imports(module: Path) -> set[str]:
    """Every module ``module`` imports, absolute names (the package uses no relative imports)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(module.read_text(encoding="utf-8"), filename=str(module))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0, f"{module.name}: relative import"
            found.add(node.module or "")
    return found


def _modules(folder: str) -> list[Path]:
    return sorted((PACKAGE / folder).glob("*.py"))


def _offending(folder: str, forbidden: tuple[str, ...]) -> dict[str, list[str]]:
    bad: dict[str, list[str]] = {}
    for module in _modules(folder):
        names = sorted(n for n in _imports(module) if any(n == f or n.startswith(f + ".") for f in forbidden))
        if names:
            bad[module.name] = names
    return bad


def test_the_scan_reads_real_modules() -> None:
    assert {m.name for m in _modules("core")} >= {"phrases.py", "matcher.py", "machine.py", "model.py"}
    assert {m.name for m in _modules("store")} >= {"sql.py", "sqlite.py", "postgres.py", "base.py"}
    assert "parkgate.core.model" in _imports(PACKAGE / "store" / "sql.py")


@pytest.mark.parametrize(
    ("folder", "forbidden"),
    [
        ("core", ("parkgate.store", "parkgate.http", "parkgate.cli", "parkgate.gateway", "parkgate.adapters")),
        (
            "store",
            (
                "parkgate.core.phrases",
                "parkgate.core.matcher",
                "parkgate.core.machine",
                "parkgate.core.stopping_point",
                "parkgate.gateway",
                "parkgate.http",
                "parkgate.cli",
            ),
        ),
    ],
)
def test_a_layer_imports_only_what_the_design_allows(folder: str, forbidden: tuple[str, ...]) -> None:
    assert _offending(folder, forbidden) == {}
