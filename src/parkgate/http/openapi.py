"""The OpenAPI schema at ``/openapi.json``: FastAPI's, plus the bearer token every ``/v1``
route takes when the server runs with tokens. A plain route documents itself through its
``described`` attribute, a FastAPI route that is never served (the messages route)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi

BEARER = {
    "type": "http",
    "scheme": "bearer",
    "description": "Needed on /v1 when the server runs with tokens (PARKGATE_TOKEN or PARKGATE_TOKENS_FILE); "
    "each route needs one scope: park, answer, read or operate.",
}


def with_bearer(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` with the ``bearer`` security scheme, required by every ``/v1`` operation."""
    components = schema.setdefault("components", {})
    components.setdefault("securitySchemes", {})["bearer"] = dict(BEARER)
    for path, operations in schema.get("paths", {}).items():
        if path.startswith("/v1/"):
            for operation in operations.values():
                operation["security"] = [{"bearer": []}]
    return schema


def openapi_of(app: FastAPI) -> Callable[[], dict[str, Any]]:
    """The ``app.openapi`` that builds the schema once, with the bearer token, and keeps it."""

    def openapi() -> dict[str, Any]:
        if not app.openapi_schema:
            routes = [getattr(route, "described", route) for route in app.routes]
            schema = get_openapi(title=app.title, version=app.version, summary=app.summary, routes=routes)
            app.openapi_schema = with_bearer(schema)
        return app.openapi_schema

    return openapi
