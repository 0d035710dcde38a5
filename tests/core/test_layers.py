"""docs/contract.md's "Layout" rules, read off the source: the core imports nothing from
store, http or cli, the store knows nothing of phrases or matching, and no module imports
back up a layer: no import cycle, counting imports inside functions and under
``TYPE_CHECKING``.
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
    assert {m.name for m in _modules("core")} >= {"phrases.py", "menu.py", "machine.py", "model.py"}
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
                "parkgate.core.menu",
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


def _module_names(package: Path = PACKAGE) -> dict[str, Path]:
    """Every module of the package by its dotted name (a package by its ``__init__``)."""
    found: dict[str, Path] = {}
    for path in package.rglob("*.py"):
        parts = list(path.relative_to(package.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def _import_graph(package: Path = PACKAGE) -> dict[str, set[str]]:
    """Which of the package's modules each module imports, counting imports inside
    functions and under ``TYPE_CHECKING``: ``from a import b`` names module ``a.b`` when
    there is one."""
    modules = _module_names(package)
    root = package.name

    def known(name: str) -> str | None:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        targets: set[str | None] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
            if isinstance(node, ast.Import):
                targets.update(known(alias.name) for alias in node.names if alias.name.startswith(root))
            elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith(root):
                source = node.module or ""
                targets.update(known(f"{source}.{alias.name}") for alias in node.names)
        graph[name] = {target for target in targets if target and target != name}
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        for target in graph[module]:
            if target not in index:
                visit(target)
                low[module] = min(low[module], low[target])
            elif target in stack:
                low[module] = min(low[module], index[target])
        if low[module] == index[module]:
            group: list[str] = []
            while not group or group[-1] != module:
                group.append(stack.pop())
            if len(group) > 1:
                found.append(sorted(group))

    for module in sorted(graph):
        if module not in index:
            visit(module)
    return sorted(found)


def test_the_cycle_search_finds_a_cycle_through_a_function_level_import() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _cycles(graph) == [["a", "b", "c"]]
    graph = _import_graph()
    assert "parkgate.gateway.delivering" in graph["parkgate.gateway.calls"]  # imported inside __init__
    assert "parkgate.delivery.deliverer" in graph["parkgate.delivery"]  # imported under TYPE_CHECKING


def test_the_cycle_search_finds_a_cycle_on_disk_made_only_of_lazy_and_type_only_imports(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    (package / "store").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "store" / "__init__.py").write_text("from pkg.store.signal import Signal\n")
    (package / "store" / "signal.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.store.base import Store\nclass Signal: ...\n"
    )
    (package / "store" / "base.py").write_text("def open():\n    from pkg.store import signal\n")
    assert _cycles(_import_graph(package)) == [["pkg.store.base", "pkg.store.signal"]]
    (package / "store" / "base.py").write_text("def open():\n    return None\n")
    assert _cycles(_import_graph(package)) == []


def test_no_module_imports_back_up_a_layer_even_lazily_or_for_types() -> None:
    cycles = _cycles(_import_graph())
    assert cycles == []


def _reachable(graph: dict[str, set[str]], start: str) -> set[str]:
    """Every module ``start`` imports, directly or through others."""
    seen: set[str] = set()
    todo = [start]
    while todo:
        for target in graph[todo.pop()] - seen:
            seen.add(target)
            todo.append(target)
    return seen


def test_the_close_signal_and_the_store_package_import_one_way() -> None:
    graph = _import_graph()
    assert "parkgate.store.signal" in graph["parkgate.store"]  # the package re-exports it
    assert "parkgate.store.base" in _reachable(graph, "parkgate.store.signal")
    assert {"parkgate.store", "parkgate.store.signal"}.isdisjoint(_reachable(graph, "parkgate.store.signal"))


#: The most modules loose at ``src/parkgate/`` (``__init__`` and ``__main__`` aside): the
#: public faces (errors, the clock, webhook verification, ...); the rest lives in the
#: package it belongs to.
MAX_LOOSE_MODULES = 6


def test_at_most_6_modules_are_loose_at_the_top() -> None:
    loose = sorted(path.stem for path in PACKAGE.glob("*.py") if path.stem not in ("__init__", "__main__"))
    assert {"errors", "clock"} <= set(loose)  # the scan reads the real folder
    assert len(loose) <= MAX_LOOSE_MODULES, loose
