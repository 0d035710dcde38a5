"""A channel is one package: outside ``channels/<name>/`` the code of at most three source
files names a built-in channel (the registry's list of what ships among them), the pure
core names none, and no line under ``src/`` names the channel that lives only in the tests
(:mod:`pager_channel`). Code is identifiers and strings that are not docstrings; comments
and docstrings may name a channel as an example.

"email" is also an English word and the name of an answer form (``expect={"form":
"email"}``), so for it a sentence in a string ("a user id, an email") is not counted, nor
the form's own names (:data:`NOT_THE_CHANNEL`); any other identifier or string holding it is.
"""

from __future__ import annotations

import ast
import io
import tokenize
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src"
PACKAGE = SRC / "parkgate"
#: The most source files outside a channel's package whose code names it.
MOST_FILES = 3
#: The built-in channels.
CHANNELS = ["slack", "telegram", "discord", "email"]
#: Words that are not only a channel's name: per file, the tokens that name something else.
NOT_THE_CHANNEL: dict[str, dict[str, frozenset[str]]] = {
    "email": {
        # The answer form "email": its name, its pattern, MCP's string format for it, its description.
        "core/expect.py": frozenset({"EMAIL", "_EMAIL_RE", '"email"'}),
        "adapters/mcp/forms.py": frozenset({"EMAIL"}),
        "core/phrases.py": frozenset({'"email"'}),
    }
}
#: The channels whose name is an English word: a string with a space in it is a sentence, not a name.
WORDS = frozenset({"email"})


def _docstrings(tree: ast.AST) -> set[tuple[int, int]]:
    """Where each docstring starts (line, column)."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if (
                isinstance(first, ast.Expr)
                and isinstance(first.value, ast.Constant)
                and isinstance(first.value.value, str)
            ):
                found.add((first.lineno, first.col_offset))
    return found


def names_in_code(source: str, word: str, not_it: frozenset[str] = frozenset()) -> list[int]:
    """The lines whose code (an identifier, or a string that is not a docstring) holds ``word``,
    any case; ``not_it``'s tokens, and for a word of :data:`WORDS` sentences, aside."""
    docstrings = _docstrings(ast.parse(source))
    lines = []
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        is_text = token.type == tokenize.STRING or token.type == getattr(tokenize, "FSTRING_MIDDLE", -1)
        if token.type != tokenize.NAME and not is_text:
            continue
        if token.type == tokenize.STRING and token.start in docstrings:
            continue
        if token.string in not_it or (word in WORDS and is_text and any(c.isspace() for c in token.string)):
            continue
        if word in token.string.lower():
            lines.append(token.start[0])
    return lines


def files_naming(word: str, under: Path = PACKAGE) -> list[str]:
    """The source files under ``under`` (migrations and the channel's own package aside)
    whose code names ``word``."""
    found = []
    for path in sorted(under.rglob("*.py")):
        relative = path.relative_to(PACKAGE).as_posix()
        if "/migrations/" in relative or relative.startswith(f"channels/{word}/"):
            continue
        not_it = NOT_THE_CHANNEL.get(word, {}).get(relative, frozenset())
        if names_in_code(path.read_text(encoding="utf-8"), word, not_it):
            found.append(relative)
    return found


@pytest.mark.parametrize("channel", CHANNELS)
def test_outside_its_package_at_most_three_files_name_a_channel(channel: str) -> None:
    naming = files_naming(channel)
    assert "channels/registry.py" in naming  # the list of the channels that ship: the check sees it
    assert len(naming) <= MOST_FILES, naming


@pytest.mark.parametrize("channel", CHANNELS)
def test_the_core_names_no_channel(channel: str) -> None:
    assert files_naming(channel, PACKAGE / "core") == []


def test_no_line_under_src_names_the_channel_that_lives_in_the_tests() -> None:
    naming = [
        f"{path.relative_to(SRC)}:{number}"
        for path in sorted(SRC.rglob("*"))
        if path.is_file() and path.suffix in {".py", ".js", ".html", ".css", ".md", ".sql", ".toml", ".txt"}
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1)
        if "pager" in line.lower()
    ]
    assert naming == []


def test_the_count_sees_code_and_leaves_docstrings_and_comments() -> None:
    source = '''"""Posts on Slack."""
import os  # Slack's token


def post() -> str:
    """To Slack."""
    return os.environ["PARKGATE_SLACK_BOT_TOKEN"]


class SlackThing:
    """Slack again."""
'''
    assert names_in_code(source, "slack") == [7, 10]
    assert names_in_code('name = f"on {where}: slack"\n', "slack") == [1]


def test_the_answer_form_and_sentences_named_email_are_not_the_channel_but_its_name_is() -> None:
    assert names_in_code('help = "Who wrote it (a user id, an email)."\n', "email") == []
    assert names_in_code('EMAIL = "email"\n', "email", NOT_THE_CHANNEL["email"]["core/expect.py"]) == []
    assert names_in_code('target = ChannelTarget("email", {})\n', "email") == [1]
    assert names_in_code('if channel == "email":\n    pass\n', "email", frozenset({"EMAIL"})) == [1]
    assert names_in_code("from parkgate.channels.email import EmailChannel\n", "email") == [1, 1]
