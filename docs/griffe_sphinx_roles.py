"""A griffe extension for the docs site: Sphinx roles in docstrings become links.

parkgate's docstrings name other objects with Sphinx roles: ``:class:`Gateway```,
``:meth:`~parkgate.Gateway.wait```, ``:meth:`Gateway.wait <parkgate.Gateway.wait>```.
mkdocstrings reads docstrings as Markdown, where a role would show as literal text. This
extension rewrites each role as an optional cross-reference: a link when the target is
on the site, plain code when it is not (an optional reference never fails the
``--strict`` build). Names are resolved the way Python would resolve them in the
docstring's own scope; a reST ``text::`` before a code block loses its second colon.
The docstrings in the source stay as they are.
"""

from __future__ import annotations

import re
from html import escape
from typing import Any

import griffe

ROLE = re.compile(
    r":(?:class|func|meth|mod|attr|data|exc|obj):`"
    r"(?:(?P<title>[^`<]+?)\s*<(?P<titled>[A-Za-z_][\w.]*)>|(?P<tilde>~?)(?P<name>[A-Za-z_][\w.]*)(?:\(\))?)`"
)

#: reST's ``text::`` before an indented block: Markdown shows the block as code already.
LITERAL_BLOCK = re.compile(r"(?<=\S)::$", re.M)


def _target(obj: griffe.Object, name: str) -> str | None:
    """The full path ``name`` stands for in ``obj``'s scope, or None when it is unknown."""
    if name.startswith("parkgate."):
        return name
    first, _, rest = name.partition(".")
    for scope in (obj, obj.parent):
        if scope is None:
            continue
        try:
            found = scope.resolve(first)
        except (griffe.NameResolutionError, ValueError):
            continue
        return f"{found}.{rest}" if rest else found
    return None


def _rewrite(obj: griffe.Object, text: str) -> str:
    def link(match: re.Match[str]) -> str:
        name = match["titled"] or match["name"]
        shown = match["title"] or (name.rsplit(".", 1)[-1] if match["tilde"] else name)
        target = _target(obj, name)
        if target is None:
            return f"`{shown}`"
        return f'<autoref identifier="{escape(target)}" optional><code>{escape(shown)}</code></autoref>'

    return LITERAL_BLOCK.sub(":", ROLE.sub(link, text))


class SphinxRoles(griffe.Extension):
    """Rewrite the Sphinx roles of every docstring in a loaded package."""

    def on_package(self, *, pkg: griffe.Module, **kwargs: Any) -> None:
        self._walk(pkg, seen=set())

    def _walk(self, obj: griffe.Object, seen: set[str]) -> None:
        if obj.path in seen:
            return
        seen.add(obj.path)
        if obj.docstring is not None:
            obj.docstring.value = _rewrite(obj, obj.docstring.value)
        for member in obj.members.values():
            if not member.is_alias:
                self._walk(member, seen)  # type: ignore[arg-type]
