"""The contract's layout guide (docs/contract.md, "Layout") draws the tree as it is: every
package under ``src/parkgate/`` and every module loose at its top has its line, and each
top-level line names something that is there.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "src" / "parkgate"
CONTRACT = ROOT / "docs" / "contract.md"

#: A top-level line of the guide: two spaces, then a module (``errors.py``) or a folder (``core/``).
ENTRY = re.compile(r"^  (\S+(?:\.py|/))(?: |$)")


def _guide(text: str) -> dict[str, str]:
    """The guide's top-level entries under ``src/parkgate/``, each with its text (its
    continuation lines, indented deeper, included)."""
    section = text[text.index("## Layout") :]
    block = section[section.index("```text\n") + len("```text\n") :]
    block = block[: block.index("```")]
    lines = block.splitlines()
    start = lines.index("src/parkgate/") + 1
    entries: dict[str, str] = {}
    current = None
    for line in lines[start:]:
        if not line.startswith("  "):
            break  # the next tree (tests/, bench/)
        match = ENTRY.match(line)
        if match:
            current = match[1]
            entries[current] = line[match.end() :]
        elif current is not None:
            entries[current] += " " + line.strip()
    return entries


def _missing(guide: dict[str, str], package: Path) -> list[str]:
    """What of ``package`` the guide leaves out: a loose module without its line, a
    top-level package without its line, a package further down not named in its
    top-level package's line (as ``name/`` or ``parent/name/``)."""
    missing = [path.name for path in sorted(package.glob("*.py")) if path.name not in guide]
    for init in sorted(package.rglob("*/__init__.py")):
        parts = init.parent.relative_to(package).parts
        line = guide.get(parts[0] + "/")
        if line is None:
            missing.append(parts[0] + "/")
        elif len(parts) > 1 and not re.search(rf"(?<![\w/]){re.escape('/'.join(parts[1:]))}/", line):
            missing.append("/".join(parts) + "/")
    return missing


def _gone(guide: dict[str, str], package: Path) -> list[str]:
    """The guide's top-level lines that name nothing under ``package``."""
    return [name for name in guide if not (package / name.rstrip("/")).exists()]


def test_the_guide_reads_every_line_of_the_tree() -> None:
    guide = _guide(CONTRACT.read_text(encoding="utf-8"))
    assert {"core/", "store/", "channels/", "errors.py", "__init__.py"} <= set(guide)
    assert "slack/" in guide["channels/"] and "migrations/" in guide["store/"]  # continuation lines count


def test_every_package_and_loose_module_has_its_line() -> None:
    guide = _guide(CONTRACT.read_text(encoding="utf-8"))
    assert _missing(guide, PACKAGE) == []
    assert _gone(guide, PACKAGE) == []


def test_the_check_sees_a_package_or_module_left_out(tmp_path: Path) -> None:
    package = tmp_path / "parkgate"
    for folder in ("core", "channels/slack", "channels/pigeon", "http/routes", "http/console"):
        (package / folder).mkdir(parents=True)
    for init in ("", "core", "channels", "channels/slack", "channels/pigeon", "http", "http/routes"):
        (package / init / "__init__.py").write_text("")
    (package / "clock.py").write_text("")
    (package / "errors.py").write_text("")
    guide = _guide(
        "## Layout\n\n```text\nsrc/parkgate/\n  __init__.py  the front door\n  clock.py     time\n"
        "  core/        pure\n  channels/    base.py, slack/\n  http/        app.py,\n"
        "               routes/, console/\n  audit/       gone\ntests/         core\n```\n"
    )
    assert _missing(guide, package) == ["errors.py", "channels/pigeon/"]
    assert _gone(guide, package) == ["audit/"]
