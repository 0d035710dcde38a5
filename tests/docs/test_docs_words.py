"""The documentation speaks for itself: no page leans on words that only the background
write-up behind the project defines (its bug labels such as "B16", "the write-up's query")."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = sorted([*(ROOT / "docs").rglob("*.md"), ROOT / "README.md"])
OUTSIDE_WORDS = re.compile(r"\bwrite-up\b|\bB\d{1,2}\b")


@pytest.mark.parametrize("page", PAGES, ids=[str(page.relative_to(ROOT)) for page in PAGES])
def test_a_page_uses_no_word_only_the_write_up_defines(page: Path) -> None:
    found = [line.strip() for line in page.read_text(encoding="utf-8").splitlines() if OUTSIDE_WORDS.search(line)]
    assert found == []
