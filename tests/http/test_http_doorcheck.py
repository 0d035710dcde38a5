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


def _one_error_line(result: Any) -> str:
    """What a refused doorcheck printed: exit 1, one ``Error:`` line, never a traceback."""
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("Error: "), result.output
    return str(lines[0])


@pytest.mark.parametrize(
    ("url", "said"),
    [
        ("http://127.0.0.1:abc", "not a valid URL"),
        ("http://[::1", "not a valid URL"),
        ("ftp://127.0.0.1:8080", "http://host:port"),
        ("127.0.0.1:8080", "http://host:port"),
        ("http://127.0.0.1:9", "did not answer"),  # nothing listens on the discard port
    ],
)
def test_doorcheck_with_a_bad_url_is_one_error_line(url: str, said: str) -> None:
    result = CliRunner().invoke(main, ["doorcheck", "--url", url])
    assert said in _one_error_line(result)


@pytest.mark.parametrize("token", ["sécret", "s3cr3t\n", "two words"])
def test_doorcheck_with_a_token_no_header_can_carry_is_refused_without_showing_it(
    served_sqlite: Server, token: str
) -> None:
    result = CliRunner().invoke(main, ["doorcheck", "--url", served_sqlite.url, "--token", token])
    line = _one_error_line(result)
    assert "--token must be printable ASCII" in line and token.strip() not in line


def test_doorcheck_on_a_busy_conversation_over_http_says_so_and_changes_nothing(served_sqlite: Server) -> None:
    with served_sqlite.client() as client:
        parked = client.post("/v1/asks", json={"conversation_id": "dc-busy", "prompt": "Ship?", "options": ["Y"]})
        assert parked.status_code == 201, parked.text
        result = CliRunner().invoke(main, ["doorcheck", "--url", served_sqlite.url, "--conversation", "dc-busy"])
        line = _one_error_line(result)
        assert "'dc-busy' is busy" in line and parked.json()["ask_id"] in line
        ask = client.get(f"/v1/asks/{parked.json()['ask_id']}").json()
        assert (ask["status"], ask["mismatches"]) == ("open", 0)
        client.post(f"/v1/asks/{ask['ask_id']}/cancel")


def test_doorcheck_names_the_servers_reason_when_it_refuses(start_server: Any, store_url_factory: Any) -> None:
    server = start_server(store_url_factory("sqlite"), token="right-token")
    result = CliRunner().invoke(main, ["doorcheck", "--url", server.url, "--token", "wrong-token"])
    line = _one_error_line(result)
    assert "HTTP 401" in line and "unauthorized" in line.lower()
    assert "wrong-token" not in line


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


def test_doorcheck_tells_a_wrong_token_from_a_missing_one(start_server: Any, store_url_factory: Any) -> None:
    from parkgate.http.guard import MISSING_TOKEN, WRONG_TOKEN

    server = start_server(store_url_factory("sqlite"), token="right-token")
    wrong = _one_error_line(CliRunner().invoke(main, ["doorcheck", "--url", server.url, "--token", "wrong-token"]))
    unset = {"PARKGATE_TOKEN": None}
    missing = _one_error_line(CliRunner().invoke(main, ["doorcheck", "--url", server.url], env=unset))
    assert WRONG_TOKEN in wrong and MISSING_TOKEN in missing
