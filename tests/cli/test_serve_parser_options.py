"""``parkgate serve --http`` and ``--access-log``: what reaches uvicorn.

The request parser is httptools unless ``--http h11`` picks h11, each as its bounded
protocol class; uvicorn's access log is off unless ``--access-log`` (or
``PARKGATE_ACCESS_LOG``) turns it on. uvicorn is replaced here by a recorder; the live
behaviour is tested through real servers (``tests/security/test_parser_bounds.py``,
``tests/http/test_serve_access_log.py``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import uvicorn
from click.testing import CliRunner

from parkgate.cli import main
from parkgate.http import server
from parkgate.http.connections import BoundedH11Protocol
from parkgate.http.fastparser import BoundedHttpToolsProtocol
from parkgate.http.settings import ENV_DB, ENV_TOKEN


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """uvicorn.run replaced by a recorder of its options; serve's variables restored afterwards."""
    for name in (ENV_DB, ENV_TOKEN, "PARKGATE_ACCESS_LOG"):
        monkeypatch.setenv(name, "placeholder")
        monkeypatch.delenv(name)
    seen: list[dict[str, Any]] = []
    monkeypatch.setattr(uvicorn, "run", lambda app, **options: seen.append(options))
    return seen


@pytest.mark.parametrize(
    ("args", "env", "protocol", "access_log"),
    [
        ([], {}, BoundedHttpToolsProtocol, False),
        (["--http", "h11"], {}, BoundedH11Protocol, False),
        (["--http", "httptools", "--access-log"], {}, BoundedHttpToolsProtocol, True),
        ([], {"PARKGATE_ACCESS_LOG": "true"}, BoundedHttpToolsProtocol, True),
    ],
    ids=["default", "h11", "access-log", "env"],
)
def test_serve_passes_the_parser_and_the_access_log_to_uvicorn(
    calls: list[dict[str, Any]], tmp_path: Path, args: list[str], env: dict[str, str], protocol: type, access_log: bool
) -> None:
    db = f"sqlite:///{tmp_path / 'p.db'}"
    result = CliRunner().invoke(main, ["serve", "--db", db, "--port", "0", *args], env=env)
    assert result.exit_code == 0, result.output
    (options,) = calls
    assert options["http"] is protocol and options["access_log"] is access_log
    assert options["h11_max_incomplete_event_size"] == server.MAX_HEADER_BYTES  # the head cap of both parsers


def test_an_unknown_parser_is_a_usage_error(calls: list[dict[str, Any]], tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["serve", "--db", f"sqlite:///{tmp_path / 'p.db'}", "--http", "asyncio"])
    assert result.exit_code == 2 and "'asyncio' is not one of 'httptools', 'h11'" in result.output
    assert calls == []
    with pytest.raises(ValueError, match="http must be one of httptools, h11"):
        server.serve(f"sqlite:///{tmp_path / 'p.db'}", "127.0.0.1", 0, 1, None, http="asyncio")
