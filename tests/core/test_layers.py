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


def _module_names() -> dict[str, Path]:
    """Every module of the package by its dotted name (a package by its ``__init__``)."""
    found: dict[str, Path] = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def _import_graph() -> dict[str, set[str]]:
    """Which parkgate modules each module imports, counting imports inside functions and
    under ``TYPE_CHECKING``: ``from a import b`` names module ``a.b`` when there is one."""
    modules = _module_names()

    def known(name: str) -> str | None:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        targets: set[str | None] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
            if isinstance(node, ast.Import):
                targets.update(known(alias.name) for alias in node.names if alias.name.startswith("parkgate"))
            elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("parkgate"):
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


def test_no_module_imports_back_up_a_layer_even_lazily_or_for_types() -> None:
    cycles = _cycles(_import_graph())
    assert cycles == []


#: The longest module and function body a reader is asked to hold (CONTRIBUTING's "small
#: modules with one job"): a module's lines, a function's lines after its docstring.
MAX_MODULE_LINES = 400
MAX_BODY_LINES = 50


def _body_lines(function: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    """How many lines ``function``'s body spans, its docstring left out."""
    body = function.body
    documented = isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
    first = body[1] if documented and len(body) > 1 else body[0]
    return (function.end_lineno or first.lineno) - first.lineno + 1


def _sizes() -> tuple[dict[str, int], dict[str, int]]:
    """Every module's line count, and every function's body lines (``module:line name``)."""
    modules: dict[str, int] = {}
    functions: dict[str, int] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        name = path.relative_to(PACKAGE).as_posix()
        modules[name] = len(text.splitlines())
        for node in ast.walk(ast.parse(text, filename=str(path))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                functions[f"{name}:{node.lineno} {node.name}"] = _body_lines(node)
    return modules, functions


def test_the_size_scan_counts_lines_and_leaves_docstrings_out() -> None:
    source = 'def f():\n    """Doc.\n\n    More.\n    """\n    a = 1\n    return a\n'
    function = ast.parse(source).body[0]
    assert isinstance(function, ast.FunctionDef) and _body_lines(function) == 2
    modules, functions = _sizes()
    assert modules["core/kinds.py"] == len((PACKAGE / "core" / "kinds.py").read_text().splitlines())
    assert any(name.endswith(" handle") for name in functions)


def test_no_module_is_over_400_lines_and_no_function_body_over_50() -> None:
    modules, functions = _sizes()
    assert {name: lines for name, lines in modules.items() if lines > MAX_MODULE_LINES} == {}
    assert {name: lines for name, lines in functions.items() if lines > MAX_BODY_LINES} == {}
