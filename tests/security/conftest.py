"""Fixtures for the security suite: real ``parkgate serve`` processes on loopback, attacked.

- ``engine`` / ``database``: SQLite and a fresh database on it (what is attacked here is the
  server, not the store; a test whose outcome depends on the engine parametrizes ``engine``
  with both and says why).
- ``launch(location, **server_options)``: ``parkgate serve`` on ``location`` (stopped at the end).
- ``tokens_file``: a tokens file of named tokens (hashes only) and the tokens themselves.
- ``browser``: the system Chromium under Playwright; ``attacker.example`` resolves to
  127.0.0.1 in it, as a DNS-rebinding attacker's name would.
"""

from __future__ import annotations

import itertools
import secrets
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Protocol

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "http"))

from attack import ATTACKER_HOST, TOKEN_TABLE, NamedTokens
from live_server import Server, browser_page, chromium

from parkgate.http.tokens import digest

#: Tests above the store run on one engine (issue 39; the store conformance suite runs both).
ENGINES = ["sqlite"]


class Launch(Protocol):
    def __call__(self, location: Any, **options: Any) -> Server: ...


@pytest.fixture(params=ENGINES)
def engine(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def database(store_url_factory: Any, engine: str) -> Any:
    """A fresh, empty database on ``engine`` from the root conftest's ``store_url_factory``
    (a StoreLocation: url, schema, path, raw_query); the server migrates it as it starts."""
    return store_url_factory(engine)


@pytest.fixture
def launch(tmp_path: Path) -> Iterator[Launch]:
    """Start ``parkgate serve`` (the command an operator runs) on a database; all stop at the end."""
    started: list[Server] = []
    numbers = itertools.count(1)

    def start(location: Any, **options: Any) -> Server:
        log = tmp_path / f"serve-{next(numbers)}.log"
        server = Server(location.url, log, schema=location.schema, via_cli=True, **options)
        started.append(server)
        return server.start()

    yield start
    for server in reversed(started):
        server.stop()


@pytest.fixture
def tokens_file(tmp_path: Path) -> NamedTokens:
    tokens = {name: secrets.token_urlsafe(24) for name in TOKEN_TABLE}
    lines = []
    for name, (scopes, extra) in TOKEN_TABLE.items():
        scope_list = ", ".join(f'"{scope}"' for scope in scopes)
        lines.append(f'[[token]]\nname = "{name}"\nsha256 = "{digest(tokens[name])}"\nscopes = [{scope_list}]\n{extra}')
    path = tmp_path / "tokens.toml"
    path.write_text("\n".join(lines), encoding="utf-8")
    return NamedTokens(path, tokens)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """The system Chromium, headless; ``attacker.example`` resolves to 127.0.0.1 in it."""
    with chromium(f"--host-resolver-rules=MAP {ATTACKER_HOST} 127.0.0.1") as launched:
        yield launched


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    with browser_page(browser, width=1280) as tab:
        yield tab
