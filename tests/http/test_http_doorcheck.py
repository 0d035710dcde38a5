"""``parkgate doorcheck --url`` against a real server, with conversation ids a URL cannot hold raw.

The messages route is ``/v1/conversations/{id}/messages`` with a ``path`` parameter:
the server decodes the percent-encoded path before routing, so an id arrives whole
when the client encodes every reserved character in it (``/`` included).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from click.testing import CliRunner
from live_server import Server

from parkgate.cli import DOORCHECK_EXIT, DOORCHECK_INPUTS, main, path_segment

AWKWARD_IDS = [
    "with space",
    "a/b",
    "what?x=1",
    "room#4",
    "50%",
    "%2F",
    "é日本 ✓",
    "..",
    ".",
    "a/../b",
    "a/messages",
]


@pytest.mark.parametrize("conversation_id", AWKWARD_IDS)
def test_doorcheck_over_http_works_for_an_id_with_reserved_characters(
    served_sqlite: Server, conversation_id: str
) -> None:
    result = CliRunner().invoke(main, ["doorcheck", "--url", served_sqlite.url, "--conversation", conversation_id])
    assert result.exit_code == 0, result.output
    lines = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    assert [line["input"] for line in lines] == [*DOORCHECK_INPUTS, DOORCHECK_EXIT]
    assert [line["kind"] for line in lines] == ["retry", "retry", "escalated", "escalated", "cancelled"]
    # The messages reached the ask the start parked under this very id, and closed it.
    with served_sqlite.client() as client:
        asks = client.get("/v1/asks", params={"status": "open"}).json()["asks"]
        assert conversation_id not in [ask["conversation_id"] for ask in asks]
        again = client.post("/v1/workflows/uml/start", json={"conversation_id": conversation_id})
        assert again.status_code == 201, again.text  # the conversation was left unparked
        ask: dict[str, Any] = client.get(f"/v1/asks/{again.json()['ask_id']}").json()
        assert ask["conversation_id"] == conversation_id
        client.post(f"/v1/asks/{ask['ask_id']}/cancel")


def test_doorcheck_in_process_takes_the_conversation_too() -> None:
    result = CliRunner().invoke(main, ["doorcheck", "--conversation", "a b/c?d#e"])
    assert result.exit_code == 0, result.output


@pytest.mark.parametrize(
    ("value", "segment"),
    [
        ("plain-id", "plain-id"),
        ("a b/c?d#e", "a%20b%2Fc%3Fd%23e"),
        ("100%", "100%25"),
        ("é", "%C3%A9"),
        ("..", "%2E%2E"),
        (".", "%2E"),
        ("a.b", "a.b"),
    ],
)
def test_path_segment_encodes_everything_a_path_would_split_or_resolve(value: str, segment: str) -> None:
    assert path_segment(value) == segment
