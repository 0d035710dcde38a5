"""Every test and example the documentation cites exists.

The docs back their claims with tests (``tests/reliability/test_clock.py``, or one test:
``tests/security/test_tokens.py::test_each_scope_does_its_part_and_nothing_else``). A
citation of a file that was renamed or a test that was removed would back nothing, so
each cited file must exist and each cited test must be defined in it (a ``*`` in a
test's name stands for any characters, as in ``test_a_read_only_*``). And nothing in
the repository cites a rule book outside it: the docs/ pages are the rule book.
"""

from __future__ import annotations

import fnmatch
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCUMENTS = sorted([*ROOT.glob("*.md"), *(ROOT / "docs").rglob("*.md")])
CITATION = re.compile(r"\b((?:tests|examples)/[\w/.-]+\.py)(?:::([\w*]+))?")
DEFINITION = re.compile(r"^\s*(?:async\s+)?(?:def|class)\s+(\w+)", re.M)


def citations() -> list[tuple[str, str, str | None]]:
    found = []
    for document in DOCUMENTS:
        for match in CITATION.finditer(document.read_text(encoding="utf-8")):
            found.append((str(document.relative_to(ROOT)), match[1], match[2]))
    return found


def test_the_docs_cite_tests() -> None:
    cited = {path for _, path, _ in citations()}
    assert "tests/reliability/test_clock.py" in cited, "the scan found none of the citations it should"


def test_every_cited_file_exists_and_defines_the_cited_test() -> None:
    missing = []
    for document, path, name in citations():
        source = ROOT / path
        if not source.is_file():
            missing.append(f"{document}: {path} does not exist")
        elif name and not fnmatch.filter(DEFINITION.findall(source.read_text(encoding="utf-8")), name):
            missing.append(f"{document}: {path} defines no {name}")
    assert missing == []


#: A rule book outside the repository: code, tests and docs cite docs/ pages instead.
OUTSIDE_RULE_BOOK = re.compile(r"DESIGN\.md|/work/shared")


def test_nothing_cites_a_rule_book_outside_the_repository() -> None:
    sources = [*DOCUMENTS, *(ROOT / "src").rglob("*.py"), *(ROOT / "tests").rglob("*.py")]
    here = Path(__file__).resolve()
    citing = [
        str(source.relative_to(ROOT))
        for source in sources
        if source.resolve() != here and OUTSIDE_RULE_BOOK.search(source.read_text(encoding="utf-8"))
    ]
    assert citing == [], "cite docs/contract.md (or another docs/ page) instead"
