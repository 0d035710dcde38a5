"""The table of names at the top of each ``docs/reference/*.md`` page.

The reference pages are generated from the docstrings (mkdocstrings' ``::: target``
directives), so read in a checkout or on a forge they would show nothing but the
directives. Each page therefore carries, between two markers, a table of the names its
directives document and the first line of each docstring: derived from the code, never
written by hand. ``tests/docs/test_reference_pages.py`` fails when a table is not what
this module derives; ``python docs/reference_names.py`` rewrites them.
"""

from __future__ import annotations

import importlib
import inspect
import re
import sys
from pathlib import Path
from types import ModuleType

PAGES = Path(__file__).parent / "reference"
START = "<!-- names: derived from the docstrings by docs/reference_names.py -->"
END = "<!-- /names -->"
_DIRECTIVE = re.compile(r"^::: (\S+)", re.MULTILINE)
#: A Sphinx role (``:class:`Name <target>```, ``:meth:`x```), shown as its text in code.
_ROLE = re.compile(r":[a-z]+:`(?:([^`<]+?)\s*<[^`>]+>|([^`]+))`")


def _resolve(target: str) -> object:
    """The module, class, function or value a directive's dotted path names."""
    try:
        return importlib.import_module(target)
    except ModuleNotFoundError:
        module, _, name = target.rpartition(".")
        return getattr(_resolve(module), name)


def _summary(value: object) -> str:
    """The first paragraph of ``value``'s own docstring as Markdown (a plain value: its repr)."""
    if not (inspect.isclass(value) or inspect.isroutine(value) or inspect.ismodule(value)):
        return f"`{value!r}`"
    doc = (inspect.getdoc(value) or "").strip().split("\n\n", 1)[0].replace("\n", " ")
    doc = _ROLE.sub(lambda match: f"``{(match.group(1) or match.group(2)).lstrip('~')}``", doc)
    return doc.replace("``", "`").replace("|", "\\|")


def _names(target: str) -> list[tuple[str, str]]:
    """``(dotted name, summary)`` for what ``::: target`` documents: a module's public
    names (its ``__all__``, else what it defines without a leading ``_``), or the one name."""
    value = _resolve(target)
    if not isinstance(value, ModuleType):
        return [(target, _summary(value))]
    public = getattr(value, "__all__", None)
    if public is None:
        public = [
            name
            for name, member in vars(value).items()
            if not name.startswith("_") and getattr(member, "__module__", None) == value.__name__
        ]
    return [(f"{target}.{name}", _summary(getattr(value, name))) for name in public]


def table(page: str) -> str:
    """The block of names for a reference page's text, markers included."""
    rows = [name for target in _DIRECTIVE.findall(page) for name in _names(target)]
    lines = [
        START,
        "",
        "| name | what it is |",
        "| --- | --- |",
        *(f"| `{name}` | {summary} |" for name, summary in rows),
        "",
        END,
    ]
    return "\n".join(lines)


def with_table(page: str) -> str:
    """``page`` with its table of names, placed before its first directive (or replaced)."""
    if START in page:
        before, rest = page.split(START, 1)
        after = rest.split(END, 1)[1]
        page = before + after.lstrip("\n")
    first = _DIRECTIVE.search(page)
    position = first.start() if first else len(page)
    return page[:position] + table(page) + "\n\n" + page[position:]


def main() -> int:
    """Rewrite every reference page's table of names; print the pages that changed."""
    for path in sorted(PAGES.glob("*.md")):
        text = path.read_text()
        new = with_table(text)
        if new != text:
            path.write_text(new)
            print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
