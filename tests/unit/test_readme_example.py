"""The README's Python example runs as printed (twice: it must be re-runnable)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

README = Path(__file__).resolve().parents[2] / "README.md"


def python_api_example() -> str:
    section = README.read_text(encoding="utf-8").split("## The Python API", 1)[1]
    found = re.search(r"```python\n(.*?)```", section, re.S)
    assert found, "the README's Python API section has no python block"
    return found.group(1)


def test_the_python_api_example_runs_as_printed_and_again(tmp_path: Path) -> None:
    script = tmp_path / "example.py"
    script.write_text(python_api_example(), encoding="utf-8")
    for _ in range(2):  # a second run finds the first one's file and must still pass
        done = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        assert "Approve this deploy?" in done.stdout
    assert (tmp_path / "parkgate.db").exists()
