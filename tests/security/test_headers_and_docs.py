"""Response headers and ``/docs`` on ``parkgate serve``.

Every response says ``X-Content-Type-Options: nosniff``; ``/v1`` answers are never
cached; every HTML page carries a Content-Security-Policy. ``/docs`` loads Swagger UI
from this server only (the copy the ``swagger-ui-bundle`` package ships), and renders.
"""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import expect

PATHS = ["/", "/docs", "/healthz", "/metrics", "/openapi.json", "/console/console.js", "/v1/asks",
         "/v1/nothing", "/docs/assets/swagger-ui-bundle.js"]  # fmt: skip


def test_every_response_carries_the_safety_headers(launch: Any, sqlite_database: Any) -> None:
    server = launch(sqlite_database)
    with server.client() as http:
        for path in PATHS:
            response = http.get(path)
            assert response.headers.get("x-content-type-options") == "nosniff", path
            if path.startswith("/v1"):
                assert response.headers.get("cache-control") == "no-store", path
            if response.headers.get("content-type", "").startswith("text/html"):
                policy = response.headers.get("content-security-policy", "")
                assert "default-src 'self'" in policy and "script-src 'self'" in policy, path
        docs = http.get("/docs").text
        assert "cdn" not in docs.lower() and "https://" not in docs and "http://" not in docs


@pytest.mark.browser
def test_docs_render_from_this_server_alone(launch: Any, sqlite_database: Any, page: Any) -> None:
    server = launch(sqlite_database)
    requested: list[str] = []
    page.on("request", lambda request: requested.append(request.url))
    errors: list[str] = []
    page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
    page.goto(server.url + "/docs")
    expect(page.locator(".swagger-ui .opblock").first).to_be_visible()
    expect(page.locator(".swagger-ui")).to_contain_text("/v1/asks")
    assert requested and all(url.startswith(server.url) for url in requested), requested
    assert not [e for e in errors if "Content Security Policy" in e], errors


@pytest.fixture
def sqlite_database(store_url_factory: Any) -> Any:
    return store_url_factory("sqlite")
