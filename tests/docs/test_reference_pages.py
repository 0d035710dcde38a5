"""The reference pages read in a checkout: each ``docs/reference/*.md`` page carries the
table of the names its directives document, with each docstring's first paragraph, as
``docs/reference_names.py`` derives it from the code (the directives alone show nothing
outside the built site)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("reference_names", ROOT / "docs" / "reference_names.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("reference_names", module)
    spec.loader.exec_module(module)
    return module


GENERATOR = _generator()
PAGES = sorted((ROOT / "docs" / "reference").glob("*.md"))


@pytest.mark.parametrize("page", PAGES, ids=[page.stem for page in PAGES])
def test_each_reference_page_lists_its_names_as_the_code_has_them(page: Path) -> None:
    text = page.read_text()
    assert GENERATOR.START in text, f"{page.name} has no table of names: run python docs/reference_names.py"
    assert GENERATOR.with_table(text) == text, f"{page.name}'s table is stale: run python docs/reference_names.py"
    rows = [line for line in text.splitlines() if line.startswith("| `parkgate.")]
    assert rows and all(not line.endswith("|  |") for line in rows), "every name has a summary"


def test_a_stale_table_is_found_and_rewritten() -> None:
    page = (ROOT / "docs" / "reference" / "webhooks.md").read_text()
    stale = page.replace("| `parkgate.webhooks.verify` |", "| `parkgate.webhooks.verify_old` |")
    assert stale != page and GENERATOR.with_table(stale) == page
