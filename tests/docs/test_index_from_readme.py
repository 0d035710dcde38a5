"""The documentation site's home page takes its text from the README, so the text exists once.

docs/index.md includes README sections through pymdownx.snippets (``--8<-- "README.md:name"``);
the README's links inside those sections are references each file resolves for itself.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")
INDEX = (ROOT / "docs" / "index.md").read_text(encoding="utf-8")

INCLUDE = re.compile(r'^--8<-- "README\.md:([a-z-]+)"$', re.M)
REFERENCE_USE = re.compile(r"\]\[([a-z-]+)\]")
REFERENCE_DEFINITION = re.compile(r"^\[([a-z-]+)\]: (\S+)$", re.M)


def section(name: str) -> str:
    """The README text between the snippet markers of section ``name``."""
    found = re.search(rf"--8<-- \[start:{name}\] -->\n(.*?)<!-- --8<-- \[end:{name}\]", README, re.S)
    assert found, f"README.md marks no section {name!r} with start and end markers"
    return found.group(1)


def test_every_section_the_home_page_includes_is_marked_in_the_readme() -> None:
    names = INCLUDE.findall(INDEX)
    assert {"intro", "why", "quick-start", "example"} <= set(names)
    for name in names:
        assert section(name).strip()


def test_the_home_page_holds_no_prose_of_its_own_that_the_readme_holds() -> None:
    own = INCLUDE.sub("", REFERENCE_DEFINITION.sub("", re.sub(r"<!--.*?-->", "", INDEX, flags=re.S)))
    lines = [line.strip() for line in own.splitlines() if line.strip() and not line.startswith("#")]
    assert [line for line in lines if line in README] == []


def test_each_link_reference_in_an_included_section_resolves_in_both_files() -> None:
    used = {label for name in INCLUDE.findall(INDEX) for label in REFERENCE_USE.findall(section(name))}
    in_readme = dict(REFERENCE_DEFINITION.findall(README))
    in_index = dict(REFERENCE_DEFINITION.findall(INDEX))
    assert used and used <= set(in_readme) and used <= set(in_index)
    for label in used:
        assert (ROOT / in_readme[label]).is_file(), in_readme[label]
        assert (ROOT / "docs" / in_index[label]).is_file(), in_index[label]
        assert in_readme[label] == f"docs/{in_index[label]}"


def test_the_readme_guide_links_every_page_of_the_site_but_the_generated_reference() -> None:
    """A reader of the README finds every guide, channel and adapter page the site has."""
    import yaml

    class _Loader(yaml.SafeLoader):
        """mkdocs.yml's ``!!python/name:`` tags, read as plain text."""

    _Loader.add_multi_constructor("", lambda loader, suffix, node: None)  # !relative, !!python/name:...
    nav = yaml.load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"), Loader=_Loader)["nav"]

    def pages(entries: object) -> list[str]:
        if isinstance(entries, str):
            return [entries]
        if isinstance(entries, list):
            return [page for entry in entries for page in pages(entry)]
        if isinstance(entries, dict):
            return [page for value in entries.values() for page in pages(value)]
        return []

    in_guide = {dict(REFERENCE_DEFINITION.findall(README))[label] for label in REFERENCE_USE.findall(section("guide"))}
    wanted = {f"docs/{page}" for page in pages(nav) if page != "index.md" and not page.startswith("reference/")}
    assert sorted(wanted - in_guide) == []
