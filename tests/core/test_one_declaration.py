"""An ask's fields are declared once (:class:`parkgate.core.model.AskShape` and ``Ask``'s
own) and the options a caller sets once (:mod:`parkgate.gateway.options`): the store's
columns, the API's JSON and schema, the client's view and the HTTP input models are derived
from there. Counted in the source: few files name a field in their code, and what is
derived agrees with the declaration.
"""

from __future__ import annotations

import ast
import re
import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from parkgate import Gateway
from parkgate.client import AskView
from parkgate.core.model import Ask, AskKind, AskShape, AskStatus, Vote
from parkgate.core.shape import declared, public
from parkgate.gateway.shapes import SHOWN, ask_to_dict
from parkgate.http.channel_targets import CHANNEL_FIELDS
from parkgate.http.outputs import AskOut
from parkgate.store.ask_rows import ASK_ROWS, RUN_ROWS

PACKAGE = Path(__file__).resolve().parents[2] / "src" / "parkgate"
#: The most source files whose code may name one field of an ask.
MOST_FILES = 6
FIELDS = ("escalate_to", "remind_after", "callback_url")


def _code_texts(source: str) -> list[str]:
    """What a module's code says: its identifiers, attribute and argument names, and the
    strings that are not docstrings (comments are not in the tree)."""
    tree = ast.parse(source)
    docstrings = {
        id(node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)
    }
    found: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            found.append(node.id)
        elif isinstance(node, ast.Attribute):
            found.append(node.attr)
        elif isinstance(node, ast.arg) or (isinstance(node, ast.keyword) and node.arg):
            found.append(node.arg)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            found.append(node.name)
        elif isinstance(node, ast.alias):
            found.extend(name for name in (node.name, node.asname) if name)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            found.append(node.value)
    return found


def files_naming(name: str, package: Path = PACKAGE) -> list[str]:
    """The source files (migrations aside) whose code names ``name`` as a word."""
    word = re.compile(rf"\b{re.escape(name)}\b")
    return sorted(
        str(path.relative_to(package))
        for path in package.rglob("*.py")
        if "migrations" not in path.parts and any(word.search(text) for text in _code_texts(path.read_text()))
    )


def test_the_count_reads_code_not_docstrings_or_comments(tmp_path: Path) -> None:
    (tmp_path / "doc.py").write_text('"""Takes remind_after."""\n# remind_after\nx = 1\n')
    (tmp_path / "key.py").write_text('data = {"remind_after": 1}\n')
    (tmp_path / "attr.py").write_text("def f(ask):\n    return ask.remind_after\n")
    (tmp_path / "word.py").write_text("parse_remind_after = 1\n")
    assert files_naming("remind_after", tmp_path) == ["attr.py", "key.py"]


@pytest.mark.parametrize("name", FIELDS)
def test_an_asks_field_is_named_in_few_files(name: str) -> None:
    found = files_naming(name)
    assert found, f"{name} is named nowhere: the count reads nothing"
    assert len(found) <= MOST_FILES, f"{name} is named in {len(found)} files:\n" + "\n".join(found)


def test_the_store_keeps_a_column_for_every_declared_field(tmp_path: Path) -> None:
    Gateway(f"sqlite:///{tmp_path / 'p.db'}").close()
    with sqlite3.connect(tmp_path / "p.db") as db:
        for table, rows in (("asks", ASK_ROWS), ("runs", RUN_ROWS)):
            columns = {row[1] for row in db.execute(f"PRAGMA table_info({table})")}
            assert set(rows.names) <= columns, f"{table} lacks {set(rows.names) - columns}"
    stored = {item.name for item in declared(Ask) if item.column is not None}
    assert stored == {item.name for item in declared(Ask)} - {"watched"}, "watched is kept as due_at"


def _an_ask() -> Ask:
    at = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    return Ask(
        "a-1",
        "c-1",
        "r-1",
        AskKind.CHOICE,
        "Ship it?",
        ("Ship", "Hold"),
        AskStatus.OPEN,
        at,
        at,
        600.0,
        context={"ticket": 7},
        responders=("U_A", "U_B"),
        quorum=2,
        votes=(Vote("U_A", 1, "Ship", at),),
        remind_after=(60.0, 120.0),
        escalate_after=300.0,
        escalate_to=("U_C",),
        escalated_at=at + timedelta(seconds=1),
        callback_url="https://hooks.example/x",
        default="Hold",
    )


def test_the_json_the_schema_and_the_view_hold_the_same_fields() -> None:
    ask = _an_ask()
    shown = ask_to_dict(ask)
    assert set(shown) == {item.wire for item in public(Ask)} | {"next_due_at"}
    assert set(AskOut.model_fields) == set(shown) | set(SHOWN) | set(CHANNEL_FIELDS), "and where it is posted"
    assert {"default", "callback_url", "watched"}.isdisjoint(shown), "an ask's own fields are never shown"
    view = AskView.from_dict(shown)
    assert all(getattr(view, item.name) == getattr(ask, item.name) for item in declared(AskShape))
    assert view.ask_id == ask.ask_id == "a-1"
    assert view.next_due_at == ask.next_event_at


def test_a_row_reads_back_the_ask_it_was_written_from() -> None:
    ask = _an_ask()
    row = ASK_ROWS.values(ask, datetime.isoformat)
    assert ASK_ROWS.read([*row, "due", None, None], datetime.fromisoformat, watched=True) == ask.evolve(watched=True)
    assert dict(zip(ASK_ROWS.names, row, strict=False))["default_answer"] == "Hold"
