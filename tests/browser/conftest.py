"""Fixtures for the browser tests: the system Chromium under Playwright, and a real server.

Chromium is ``/usr/bin/chromium`` (override with ``PARKGATE_TEST_CHROMIUM``); see
:func:`live_server.chromium`. When it is missing the tests fail, naming it.
"""

from __future__ import annotations

import secrets
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "http"))

from live_server import Server, browser_page, chromium, running


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """The system Chromium, headless, driven by Playwright.

    Module-scoped on purpose: Playwright's sync API keeps an asyncio loop running in
    this thread while it is open, which would break every async test that runs later.
    """
    with chromium() as launched:
        yield launched


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    """A fresh page (its own context: no token left over from another test)."""
    with browser_page(browser) as tab:
        yield tab


@pytest.fixture(scope="module")
def console_token() -> str:
    return secrets.token_urlsafe(18)


@pytest.fixture(scope="module")
def console_server(tmp_path_factory: pytest.TempPathFactory, console_token: str) -> Iterator[Server]:
    """A real server with a token, on a SQLite file of its own."""
    folder = tmp_path_factory.mktemp("console")
    server = Server(f"sqlite:///{folder / 'parkgate.db'}", folder / "server.log", token=console_token, in_thread=True)
    with running(server.start()):
        yield server
