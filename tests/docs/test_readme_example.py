"""The README's example and the Python API page's run as printed (twice: they must be re-runnable)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def python_example(document: str, heading: str) -> str:
    """The first python block under ``heading`` in ``document``."""
    text = (ROOT / document).read_text(encoding="utf-8")
    assert heading in text, f"{document} has no {heading!r} section"
    found = re.search(r"```python\n(.*?)```", text.split(heading, 1)[1], re.S)
    assert found, f"{document}'s {heading!r} section has no python block"
    return found.group(1)


@pytest.mark.parametrize(
    ("document", "heading"),
    [("README.md", "## Example"), ("docs/python.md", "## An example")],
)
def test_the_example_runs_as_printed_and_again(document: str, heading: str, tmp_path: Path) -> None:
    script = tmp_path / "example.py"
    script.write_text(python_example(document, heading), encoding="utf-8")
    for _ in range(2):  # a second run finds the first one's file and must still pass
        done = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        assert "Approve this deploy?" in done.stdout
    assert (tmp_path / "parkgate.db").exists()


def test_the_readme_example_is_ten_lines_at_most() -> None:
    lines = [line for line in python_example("README.md", "## Example").splitlines() if line.strip()]
    assert len(lines) <= 10, lines
