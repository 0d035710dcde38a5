"""What a screen shows of hostile data: the CLI and the console, on SQLite and PostgreSQL.

Ids holding Rich markup (``mk-[/bold]``, ``[link=...]``),
direction overrides, zero-width and fullwidth characters, and prompts holding terminal
escapes and BEL, are printed as text, escaped so they are visible; ``parkgate asks`` does not crash. In the
console, ids that differ only by such a character look different, and a 190-character
id or a 3,000-character prompt never pushes the Cancel button off-screen, at 1,280 px
and at a phone's 390 px.
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest
from attack import clean_env
from playwright.sync_api import expect

from parkgate import Gateway

HOSTILE_IDS = {
    "markup": "mk-[/bold]",
    "link": "[link=http://example.com/]mk[/link]",
    "rlo": "mk\u202egnp.exe",
    "plain": "mkab",
    "zero-width": "mk\u200bab",
    "fullwidth": "mkａb",
}


def park_hostile(location: Any) -> None:
    with Gateway(store=location.open()) as gateway:
        for name, conversation in HOSTILE_IDS.items():
            gateway.ask(conversation, f"Prompt {name}: \x1b[31mred\x1b[0m \x07 bell \u202edesrever", ["Deploy"])


def parkgate(*args: str, location: Any) -> subprocess.CompletedProcess[str]:
    env = clean_env(PARKGATE_DB=location.url, COLUMNS="200")
    if location.schema:
        env["PARKGATE_PG_SCHEMA"] = location.schema
    return subprocess.run(
        [sys.executable, "-m", "parkgate", *args], capture_output=True, text=True, timeout=60, env=env
    )


def test_the_cli_prints_hostile_ids_as_visible_text(database: Any) -> None:
    park_hostile(database)
    done = parkgate("asks", location=database)
    assert done.returncode == 0, done.stderr  # no MarkupError, and nothing is past its TTL
    out = done.stdout
    assert "\x1b" not in out and "\x07" not in out and "\u202e" not in out and "\u200b" not in out
    for shown in ("mk-[/bold]", "[link=http://example.com/]mk[/link]", "mk\\u202egnp.exe", "mk\\u200bab",
                  "mk\\uff41b"):  # fmt: skip
        assert shown in out.replace("\n", "").replace("│", "").replace(" ", "") or shown in out, (shown, out)
    listed = parkgate("asks", "--json", location=database)  # prompts too: ESC, BEL, U+202E escaped
    assert listed.returncode == 0
    assert "\x1b" not in listed.stdout and "\x07" not in listed.stdout and "\u202e" not in listed.stdout
    assert "\\u001b[31mred" in listed.stdout
    ids = {json.loads(line)["conversation_id"] for line in listed.stdout.splitlines()}
    assert ids == set(HOSTILE_IDS.values())  # the JSON escapes are the same values


@pytest.mark.browser
def test_the_console_shows_hidden_characters_and_long_values_never_push_cancel_off_screen(
    launch: Any, database: Any, page: Any
) -> None:
    park_hostile(database)
    with Gateway(store=database.open()) as gateway:
        gateway.ask("x" * 190, "Q?", ["Deploy"])
        gateway.ask("long-prompt", "word" + "y" * 3000, ["Deploy", "z" * 200])
    server = launch(database)
    page.goto(server.url + "/")
    expect(page.locator("tr.ask-row")).to_have_count(len(HOSTILE_IDS) + 2)
    shown = page.locator("td.conversation").all_inner_texts()
    assert len(set(shown)) == len(shown)  # ids that differ look different
    for text in ("mk\\u202egnp.exe", "mk\\u200bab", "mk\\uff41b", "mk-[/bold]"):
        assert any(text in cell for cell in shown), (text, shown)
    prompts = page.locator("td.prompt").all_inner_texts()
    assert all("\x1b" not in p and "\u202e" not in p for p in prompts)
    assert any("\\u001b[31mred" in p for p in prompts)
    for width in (1280, 390):
        page.set_viewport_size({"width": width, "height": 900})
        assert page.evaluate("document.documentElement.scrollWidth") <= width
        # Each row's Cancel and the bulk cancel (the ask page's and the dialog's are hidden here).
        buttons = page.locator("tr.ask-row button.cancel, #cancel-selected").all()
        assert len(buttons) == len(HOSTILE_IDS) + 3
        for button in buttons:
            box = button.bounding_box()
            assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= width, (width, box)
