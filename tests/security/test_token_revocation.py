"""Revoking a token: remove it from the tokens file of a running ``parkgate serve``
(issue 26, item 7), on SQLite and PostgreSQL, with two workers.

Within a couple of seconds every worker answers the removed token 401 while the other
tokens keep working; an invalid edit of the file keeps the last good tokens and logs an
error; a token added to the file is accepted without a restart. The server is polled
(new connections, so both workers are asked): no fixed sleep.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
from attack import NamedTokens
from live_server import wait_until

from parkgate.http.tokens import digest

#: Generous: each worker looks at the file at most once a second.
NOTICED_WITHIN_SECONDS = 10.0
#: Requests that must all agree (each on a new connection, so every worker is asked).
AGREEING_REQUESTS = 8


def _without(path: Path, name: str) -> str:
    tables = path.read_text(encoding="utf-8").split("[[token]]")
    return "[[token]]".join(table for table in tables if f'name = "{name}"' not in table)


def _statuses(url: str, token: str) -> set[int]:
    statuses = set()
    for _ in range(AGREEING_REQUESTS):
        with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {token}"}, timeout=30) as http:
            statuses.add(http.get("/v1/asks").status_code)
    return statuses


def test_a_token_removed_from_the_file_is_refused_without_a_restart(
    launch: Any, database: Any, tokens_file: NamedTokens
) -> None:
    server = launch(database, extra_env=tokens_file.env(), workers=2)
    auditor, operator = tokens_file.tokens["auditor"], tokens_file.tokens["operator"]
    assert _statuses(server.url, auditor) == {200}
    tokens_file.path.write_text(_without(tokens_file.path, "auditor"), encoding="utf-8")
    wait_until(lambda: _statuses(server.url, auditor) == {401}, NOTICED_WITHIN_SECONDS, "the auditor's 401")
    assert _statuses(server.url, operator) == {200}

    good = tokens_file.path.read_text(encoding="utf-8")
    tokens_file.path.write_text(good + "\n[[token]]\nname = broken", encoding="utf-8")
    # Each request looks (at most once a second per worker); the operator is served meanwhile.
    wait_until(
        lambda: _statuses(server.url, operator) == {200} and "keeps the tokens it last read" in server.log_text(),
        NOTICED_WITHIN_SECONDS,
        "the error",
    )
    assert _statuses(server.url, auditor) == {401}
    assert _statuses(server.url, operator) == {200}

    newcomer = "a-token-added-while-running"
    added = f'\n[[token]]\nname = "newcomer"\nsha256 = "{digest(newcomer)}"\nscopes = ["read"]\n'
    tokens_file.path.write_text(good + added, encoding="utf-8")
    wait_until(lambda: _statuses(server.url, newcomer) == {200}, NOTICED_WITHIN_SECONDS, "the newcomer's 200")
    assert _statuses(server.url, operator) == {200}
