"""A griffe extension for the docs site: an async twin shows its sync call's parameters.

``AsyncGateway`` and ``AsyncClient`` forward every call to ``Gateway`` and ``Client``,
and their docstrings say so in one line ("... (:meth:`Gateway.get`)") rather than
repeating the arguments. This extension gives the reference the same ``Args``,
``Returns``, ``Yields`` and ``Raises`` sections on both sides: an async method or class
whose docstring has none of those sections gets the sync one's, and an ``Args`` section
of its own is completed with the sync entries it leaves out. The sync docstring is the
one copy of the text; the docstrings in the source stay as they are.

List it after ``SphinxRoles`` so that the copied text carries links resolved in the sync
call's own scope.
"""

from __future__ import annotations

import re
from typing import Any

import griffe

#: Each async twin and the class whose docstrings it mirrors, as paths in ``parkgate``.
MIRRORS = {
    "gateway.async_gateway.AsyncGateway": "gateway.calls.Gateway",
    "client.async_client.AsyncClient": "client.sync_client.Client",
}

SECTION = re.compile(r"^(Args|Returns|Yields|Raises):[ \t]*$", re.M)
#: An entry of an Args section: its first line names the parameter.
ENTRY = re.compile(r"^    (?:\*{0,2})(\w+)(?: \([^)]*\))?:", re.M)


def _sections(text: str) -> tuple[str, dict[str, str]]:
    """The prose before the first section, and each section's body by its title."""
    found = list(SECTION.finditer(text))
    if not found:
        return text.rstrip(), {}
    bodies = {}
    for index, match in enumerate(found):
        end = found[index + 1].start() if index + 1 < len(found) else len(text)
        bodies[match[1]] = text[match.end() : end].strip("\n")
    return text[: found[0].start()].rstrip(), bodies


def _entries(body: str) -> dict[str, str]:
    """The entries of an Args section, by parameter name."""
    starts = list(ENTRY.finditer(body))
    return {
        match[1]: body[match.start() : starts[i + 1].start() if i + 1 < len(starts) else len(body)].rstrip("\n")
        for i, match in enumerate(starts)
    }


def _merged_args(own: str, mirrored: str, order: list[str]) -> str:
    """``own``'s entries, then ``mirrored``'s for the parameters ``own`` leaves out, in ``order``."""
    entries = {**_entries(mirrored), **_entries(own)}
    rank = {name: index for index, name in enumerate(order)}
    return "\n".join(entries[name] for name in sorted(entries, key=lambda name: rank.get(name, len(rank))))


def _parameters(obj: griffe.Object) -> list[str]:
    """The parameter names of a function, or of a class's ``__init__``."""
    target = obj.members.get("__init__") if obj.is_class else obj
    if isinstance(target, griffe.Function):
        return [parameter.name for parameter in target.parameters]
    return []


def _mirror(twin: griffe.Object, original: griffe.Object) -> None:
    """Give ``twin``'s docstring the sections of ``original``'s it does not have."""
    if original.docstring is None or twin.docstring is None:
        return
    prose, own = _sections(twin.docstring.value)
    _, theirs = _sections(original.docstring.value)
    if not theirs:
        return
    merged = {**theirs, **own}
    if "Args" in own and "Args" in theirs:
        merged["Args"] = _merged_args(own["Args"], theirs["Args"], _parameters(twin))
    parameters = set(_parameters(twin))
    if "Args" in merged:  # the twin's own signature decides which entries apply
        entries = _entries(merged["Args"])
        merged["Args"] = "\n".join(text for name, text in entries.items() if name in parameters)
    sections = [f"{title}:\n{body}" for title, body in merged.items() if body.strip()]
    twin.docstring.value = "\n\n".join([prose, *sections])


class MirroredSections(griffe.Extension):
    """Copy the sync classes' docstring sections onto their async twins."""

    def on_package(self, *, pkg: griffe.Module, **kwargs: Any) -> None:
        if pkg.name != "parkgate":
            return
        for twin_path, original_path in MIRRORS.items():
            twin, original = pkg.get_member(twin_path), pkg.get_member(original_path)
            _mirror(twin, original)
            sync_members = original.all_members
            for name, member in twin.members.items():
                if name.startswith("_") or member.is_alias or name not in sync_members:
                    continue
                original_member = sync_members[name]
                _mirror(member, original_member.final_target if original_member.is_alias else original_member)
