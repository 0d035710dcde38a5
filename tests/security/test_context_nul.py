"""``parkgate serve`` refuses a NUL or a lone surrogate anywhere in an ask's ``context``
with a 422 naming the field, and writes nothing (issue 26, item 7), on SQLite and PostgreSQL.

The JSON is written by hand: ``\\u0000`` and ``\\ud800`` are how a client spells these
characters on the wire, nested under keys and inside lists.
"""

from __future__ import annotations

from typing import Any

import pytest
from attack import snapshot

BODIES = [
    '{"conversation_id": "c-1", "prompt": "Go?", "context": {"note": "a\\u0000b"}}',
    '{"conversation_id": "c-1", "prompt": "Go?", "context": {"k\\u0000": 1}}',
    '{"conversation_id": "c-1", "prompt": "Go?", "context": {"args": {"env": ["prod", {"deep": "x\\u0000"}]}}}',
    '{"conversation_id": "c-1", "prompt": "Go?", "context": {"args": [[{"\\ud800": true}]]}}',
    '{"conversation_id": "c-1", "prompt": "Go?", "context": {"note": ["\\udfff"]}}',
]


@pytest.mark.parametrize("body", BODIES)
def test_nul_or_lone_surrogate_in_context_is_a_422_and_nothing_is_written(
    launch: Any, database: Any, body: str
) -> None:
    server = launch(database)
    before = snapshot(database)
    with server.client() as http:
        response = http.post("/v1/asks", content=body, headers={"Content-Type": "application/json"})
        assert response.status_code == 422, response.text
        assert "context" in response.text
        assert http.get("/v1/asks", params={"status": "open"}).json()["asks"] == []
    assert snapshot(database) == before


def test_context_that_spells_an_escape_is_kept(launch: Any, database: Any) -> None:
    server = launch(database)
    body = '{"conversation_id": "c-1", "prompt": "Go?", "context": {"note": "\\\\u0000 spelled out"}}'
    with server.client() as http:
        response = http.post("/v1/asks", content=body, headers={"Content-Type": "application/json"})
        assert response.status_code == 201, response.text
        ask = http.get(f"/v1/asks/{response.json()['ask_id']}").json()
        assert ask["context"] == {"note": "\\u0000 spelled out"}
