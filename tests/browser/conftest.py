"""Fixtures for the browser tests: the system Chromium under Playwright, and a real server.

Chromium is ``/usr/bin/chromium`` (override with ``PARKGATE_TEST_CHROMIUM``). When it
is missing the tests fail, naming it (``./dev test`` installs Debian's package as root).
"""

from __future__ import annotations

import os
import secrets
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "http"))

from live_server import Server, running

CHROMIUM = os.environ.get("PARKGATE_TEST_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """The system Chromium, headless, driven by Playwright.

    Module-scoped on purpose: Playwright's sync API keeps an asyncio loop running in
    this thread while it is open, which would break every async test that runs later.
    """
    if not Path(CHROMIUM).exists():
        pytest.fail(
            f"Chromium not found at {CHROMIUM}: install Debian's chromium (./dev test does, as root) "
            "or set PARKGATE_TEST_CHROMIUM",
            pytrace=False,
        )
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield chromium
        finally:
            chromium.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    """A fresh page (its own context: no token left over from another test)."""
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    context.set_default_timeout(20_000)
    tab = context.new_page()
    try:
        yield tab
    finally:
        context.close()


@pytest.fixture(scope="module")
def console_token() -> str:
    return secrets.token_urlsafe(18)


@pytest.fixture(scope="module")
def console_server(tmp_path_factory: pytest.TempPathFactory, console_token: str) -> Iterator[Server]:
    """A real server with a token, on a SQLite file of its own."""
    folder = tmp_path_factory.mktemp("console")
    server = Server(f"sqlite:///{folder / 'parkgate.db'}", folder / "server.log", token=console_token)
    with running(server.start()):
        yield server
