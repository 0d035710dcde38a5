"""Bearer-token auth through real servers: on (every /v1 route) and off."""

from __future__ import annotations

import secrets
from collections.abc import Iterator

import httpx
import pytest
from live_server import Server, messages_path, running

V1_CALLS = [
    ("GET", "/v1/asks?status=open", None),
    ("GET", "/v1/asks/some-id", None),
    ("POST", "/v1/asks", {"conversation_id": "a", "prompt": "Q?"}),
    ("POST", "/v1/asks/some-id/cancel", None),
    ("POST", messages_path("a"), {"text": "1"}),
    ("POST", "/v1/workflows/uml/start", {"conversation_id": "a"}),
    ("GET", "/v1/workflows", None),
    ("GET", "/v1/nothing-here", None),
]


@pytest.fixture(scope="module")
def token() -> str:
    return secrets.token_urlsafe(24)


@pytest.fixture(scope="module")
def guarded(tmp_path_factory: pytest.TempPathFactory, token: str) -> Iterator[Server]:
    """One server with a token, shared by this module's tests."""
    folder = tmp_path_factory.mktemp("guarded")
    server = Server(f"sqlite:///{folder / 'parkgate.db'}", folder / "server.log", token=token, in_thread=True)
    with running(server.start()):
        yield server


@pytest.mark.parametrize(
    "authorization",
    [None, "Bearer wrong-token", "{token}", "Basic {token}", "Bearer", "Bearer {token}x", "bearer{token}"],
)
def test_with_a_token_every_v1_route_refuses_a_missing_or_wrong_one(
    guarded: Server, token: str, authorization: str | None
) -> None:
    headers = {"Authorization": authorization.format(token=token)} if authorization else {}
    with httpx.Client(base_url=guarded.url, timeout=30) as http:
        for method, path, body in V1_CALLS:
            response = http.request(method, path, json=body, headers=headers)
            assert response.status_code == 401, (method, path, response.text)
            data = response.json()
            assert data["error"] == "unauthorized" and "Bearer" in data["detail"]
            assert response.headers["www-authenticate"] == "Bearer"
            assert token not in response.text


def test_with_a_token_the_right_one_opens_v1_and_ops_routes_stay_open(guarded: Server, token: str) -> None:
    with guarded.client() as http:
        started = http.post("/v1/workflows/uml/start", json={"conversation_id": "auth"})
        assert started.status_code == 201, started.text
        assert http.post(messages_path("auth"), json={"text": "1"}).json()["kind"] == "selected"
        # the scheme is case-insensitive, as RFC 7235 says
        lower = http.get("/v1/asks", headers={"Authorization": f"bearer {token}"})
        assert lower.status_code == 200 and lower.json()["asks"][0]["conversation_id"] == "auth"
    with httpx.Client(base_url=guarded.url, timeout=30) as anonymous:
        assert anonymous.get("/healthz").json()["status"] == "ok"
        assert "parkgate_replies_total" in anonymous.get("/metrics").text
        assert anonymous.get("/openapi.json").json()["components"]["securitySchemes"]["bearer"]["scheme"] == "bearer"
        page = anonymous.get("/")
        assert page.status_code == 200 and "parkgate console" in page.text
        assert anonymous.get("/console/console.js").status_code == 200
    assert token not in guarded.log_text()


def test_without_a_token_v1_is_open(served_sqlite: Server, conv: str) -> None:
    with httpx.Client(base_url=served_sqlite.url, timeout=30) as http:
        parked = http.post("/v1/asks", json={"conversation_id": conv, "prompt": "Q?", "options": ["A", "B"]})
        assert parked.status_code == 201, parked.text
        # a token sent to a server without one is simply not needed
        reply = http.post(messages_path(conv), json={"text": "b"}, headers={"Authorization": "Bearer anything"})
        assert reply.status_code == 200 and reply.json()["answer"] == "B"
