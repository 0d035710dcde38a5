"""uvicorn's access log through a real ``parkgate serve``: off unless asked for.

Formatting and writing one access line per request costs about 25 µs (4-5% of a
message's CPU), so ``serve`` writes none by default; ``--access-log`` (or
``PARKGATE_ACCESS_LOG=1``) turns it on. The ``parkgate`` JSON lines (an expiry's
``ask_expired``) are written either way (``tests/http/test_http_expiry_log.py``).
"""

from __future__ import annotations

from typing import Any

import pytest
from live_server import messages_path

ACCESS_LINE = '"POST /v1/conversations/quiet-1/messages HTTP/1.1" 200'


@pytest.mark.parametrize(
    ("args", "env", "logged"),
    [([], {}, False), (["--access-log"], {}, True), ([], {"PARKGATE_ACCESS_LOG": "1"}, True)],
    ids=["default", "flag", "env"],
)
def test_the_access_log_is_written_only_when_asked_for(
    start_server: Any, sqlite_database: Any, args: list[str], env: dict[str, str], logged: bool
) -> None:
    server = start_server(sqlite_database, via_cli=True, extra_args=args, extra_env=env)
    with server.client() as http:
        response = http.post(messages_path("quiet-1"), json={"text": "hello"})
        assert response.status_code == 200 and response.json()["kind"] == "pass"
    server.stop()  # the log is complete once the process has exited
    text = server.log_text()
    assert "Uvicorn running on" in text  # the server's own start lines are there either way
    assert (ACCESS_LINE in text) is logged, text[-2000:]
