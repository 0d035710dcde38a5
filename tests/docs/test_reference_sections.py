"""The Python reference shows every parameter of the public calls.

The docs site reads the docstrings with griffe (Google style) and the site's two griffe
extensions; this loads them the same way and checks that each public call documents each
of its parameters (``Args``), so a new parameter without a description fails here.
"""

from __future__ import annotations

from pathlib import Path

import griffe
import pytest

ROOT = Path(__file__).resolve().parents[2]
EXTENSIONS = ("griffe_sphinx_roles.py:SphinxRoles", "griffe_mirrored_sections.py:MirroredSections")

#: The classes whose public calls (and constructor) the reference documents in full.
CLASSES = ("Gateway", "AsyncGateway", "client.Client", "client.AsyncClient", "workflow.Workflow", "workflow.Phase")
FUNCTIONS = ("open_store", "ask_to_dict", "webhooks.verify", "Reply.from_dict")


@pytest.fixture(scope="module")
def package() -> griffe.Module:
    extensions = griffe.load_extensions(*(str(ROOT / "docs" / spec) for spec in EXTENSIONS))
    loaded = griffe.load("parkgate", search_paths=[str(ROOT / "src")], extensions=extensions, resolve_aliases=True)
    assert isinstance(loaded, griffe.Module)
    return loaded


def documented(function: griffe.Function, docstring: griffe.Docstring | None) -> set[str]:
    """The parameter names an Args section of ``docstring`` describes."""
    if docstring is None:
        return set()
    names: set[str] = set()
    for section in docstring.parse("google", warnings=False):
        if section.kind is griffe.DocstringSectionKind.parameters:
            names |= {parameter.name.lstrip("*") for parameter in section.value}
    return names


def parameters(function: griffe.Function) -> set[str]:
    return {parameter.name for parameter in function.parameters if parameter.name not in ("self", "cls")}


def target(member: griffe.Object | griffe.Alias) -> griffe.Object:
    """The object an alias (a re-export, an inherited member) stands for."""
    return member.final_target if member.is_alias else member  # type: ignore[return-value]


def calls(package: griffe.Module) -> dict[str, tuple[griffe.Function, griffe.Docstring | None]]:
    """Each public call the reference shows, with the docstring its page renders."""
    found: dict[str, tuple[griffe.Function, griffe.Docstring | None]] = {}
    for path in CLASSES:
        cls = target(package.get_member(path))
        init = cls.all_members.get("__init__")
        if isinstance(init, griffe.Function):  # merged into the class's docstring on the page
            found[f"{path}()"] = (init, cls.docstring)
        for name, member in cls.all_members.items():
            function = target(member)
            if not name.startswith("_") and isinstance(function, griffe.Function):
                found[f"{path}.{name}"] = (function, function.docstring)
    for path in FUNCTIONS:
        function = target(package.get_member(path))
        assert isinstance(function, griffe.Function)
        found[path] = (function, function.docstring)
    return found


def test_every_public_call_describes_each_of_its_parameters(package: griffe.Module) -> None:
    found = calls(package)
    assert len(found) > 60
    missing = {
        name: sorted(parameters(function) - documented(function, docstring))
        for name, (function, docstring) in found.items()
        if parameters(function) - documented(function, docstring)
    }
    assert missing == {}


def test_an_async_twin_shows_its_sync_calls_sections(package: griffe.Module) -> None:
    wait = target(target(package.get_member("AsyncGateway")).all_members["wait"])
    assert isinstance(wait, griffe.Function)
    assert documented(wait, wait.docstring) == {"ask_id", "timeout"}
    text = wait.docstring.value if wait.docstring else ""
    assert "Holds no thread while waiting" in text  # its own words stay, the sections follow
    assert "UnknownAsk" in text.split("Raises:", 1)[1]
