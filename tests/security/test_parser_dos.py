"""A hostile stopping point does not stall ``parkgate serve`` (issue 26, item 3).

Model output reaches the stopping-point parser through ``POST /v1/asks`` with a
``skill_output``, so a prompt injection chooses its lines. An option line of ``1. a``,
60,000 spaces and ``b`` (a 40,000-space one took 16.7 s, during which the worker answered
nothing) and other long adversarial lines near the 256,000-character limit are parsed or
refused about as fast as an ordinary output of the same length, and ``/healthz`` answers
as it did before them. What they cost against an ordinary output is a timing ratio, so
it is measured by ``python -m bench.parser_linear --http``, not asserted here; these tests
hold what the server answers to them.
"""

from __future__ import annotations

import threading
from typing import Any

import httpx
import pytest

from parkgate.gateway.checks import MAX_SKILL_OUTPUT_CHARS

HOSTILE_LINES = {
    "the reported line": ("1. a", " ", "b"),
    "tabs after 1)": ("1)", "\t", "x"),
    "repeated separators": ("1", " -", ""),
    "spaces and CRLF": ("1 - a", " \r\n", "2. b"),
    "endless digits": ("", "1", "."),
}


@pytest.fixture
def sqlite_database(store_url_factory: Any) -> Any:
    """The parser does not depend on the store: SQLite is enough here."""
    return store_url_factory("sqlite")


def _marker(body: str) -> str:
    return f"Some prose first.\n[[ask]]\nWhich one?\n{body}\n[[/ask]]"


def _output(prefix: str, unit: str, suffix: str, length: int) -> str:
    room = length - len(_marker(prefix + suffix))
    return _marker(prefix + unit * (room // len(unit)) + suffix)


def _ordinary(length: int) -> str:
    """An ordinary output of about ``length`` characters: short prose lines (the most lines,
    and so the most work per character, a benign output has) before a small menu."""
    menu = _marker("1. Red\n2. Blue")
    return "ok\n" * ((length - len(menu)) // 3) + menu


def _post(http: httpx.Client, conversation: str, output: str) -> httpx.Response:
    return http.post("/v1/asks", json={"conversation_id": conversation, "skill_output": output})


def test_hostile_option_lines_are_parked_or_refused_like_ordinary_output(launch: Any, sqlite_database: Any) -> None:
    server = launch(sqlite_database)
    length = MAX_SKILL_OUTPUT_CHARS - 1_000
    with server.client(timeout=600) as http:
        assert _post(http, "ordinary", _ordinary(length)).status_code == 201
        for name, (prefix, unit, suffix) in HOSTILE_LINES.items():
            output = _output(prefix, unit, suffix, length)
            assert len(output) <= MAX_SKILL_OUTPUT_CHARS
            response = _post(http, f"hostile-{name}", output)
            assert response.status_code in (201, 422), (name, response.text)
        assert http.get("/healthz").status_code == 200


def test_the_60000_space_line_parks_its_menu_and_healthz_stays_responsive(launch: Any, sqlite_database: Any) -> None:
    server = launch(sqlite_database)
    output = _marker("1. a" + " " * 60_000 + "b\n2. c")
    with server.client(timeout=600) as http:
        healthz: list[int] = []
        done = threading.Event()

        def poll_healthz() -> None:  # /healthz while the hostile request is in the worker
            while not done.is_set():
                healthz.append(http.get("/healthz").status_code)

        poller = threading.Thread(target=poll_healthz)
        poller.start()
        try:
            response = _post(http, "hostile", output)
        finally:
            done.set()
            poller.join(60)
        assert response.status_code == 201, response.text
        ask = http.get(f"/v1/asks/{response.json()['ask_id']}").json()
        assert ask["options"] == ["a b", "c"]
        # /healthz kept answering beside the hostile request.
        assert healthz and set(healthz) == {200}
