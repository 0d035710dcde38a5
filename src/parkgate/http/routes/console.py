"""The web console at ``/`` (open asks, operator cancel, the demo chat) and Swagger UI at
``/docs``, with their static files: HTML pages outside the OpenAPI schema."""

from __future__ import annotations

import functools
import importlib.util
import json
import os
from pathlib import Path
from typing import Any

from fastapi import APIRouter, FastAPI
from fastapi.responses import HTMLResponse, Response
from starlette.staticfiles import StaticFiles
from starlette.types import Scope as ASGIScope

from parkgate.channels.registry import names as channel_names
from parkgate.core.display import hidden_ranges
from parkgate.core.phrases import CHAT_STILL_PARKED, CONSOLE_RESTART, EXPIRED_NOTICE, OPERATOR_CANCELLED, STAND_IN_MODEL
from parkgate.http.guard import CONTENT_SECURITY_POLICY

router = APIRouter(include_in_schema=False)

CONSOLE_DIR = Path(__file__).parent.parent / "console"
PAGE_HEADERS = {
    # img-src allows the page's inline favicon (data:), so no browser asks for /favicon.ico.
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}


@functools.cache
def console_page() -> str:
    """index.html with the phrases the console shows (one definition, in core.phrases),
    the characters it shows escaped (one definition, in :mod:`parkgate.core.display`) and
    the registered channels, whose keys in an ask's JSON say where it is posted
    (:mod:`parkgate.channels.registry`)."""
    phrases = json.dumps(
        {
            "stand_in": STAND_IN_MODEL,
            "expired": EXPIRED_NOTICE,
            "still_parked": CHAT_STILL_PARKED.format(restart=CONSOLE_RESTART),
            "operator_cancelled": OPERATOR_CANCELLED,
            "hidden": hidden_ranges(),
            "channels": list(channel_names()),
        }
    ).replace("<", "\\u003c")
    return (CONSOLE_DIR / "index.html").read_text(encoding="utf-8").replace("__PARKGATE_PHRASES__", phrases)


@functools.cache
def docs_page() -> str:
    """The Swagger UI page: its files from the pinned package, its start-up script from the console's folder."""
    return (CONSOLE_DIR / "docs.html").read_text(encoding="utf-8")


def swagger_ui_dir() -> Path:
    """Swagger UI's files as the ``swagger-ui-py`` package ships them (found, not imported)."""
    spec = importlib.util.find_spec("swagger_ui")
    if spec is None or spec.origin is None:
        raise RuntimeError("the swagger-ui-py package is missing: reinstall parkgate")
    return Path(spec.origin).parent / "static"


class ConsoleFiles(StaticFiles):
    """The console's static files; its page template is only ever served rendered.

    However a path reaches ``index.html`` (``/console/index.html``, ``/console//index.html``,
    ``/console/x/../index.html``), the answer is the page ``/`` serves, never the raw
    template with its placeholder.
    """

    def file_response(
        self, full_path: Any, stat_result: os.stat_result, scope: ASGIScope, status_code: int = 200
    ) -> Response:
        if Path(full_path).resolve() == (CONSOLE_DIR / "index.html").resolve():
            return HTMLResponse(console_page(), headers=PAGE_HEADERS)
        return super().file_response(full_path, stat_result, scope, status_code)


@router.get("/")
async def console() -> Response:
    """The web console: open asks, operator cancel, and the demo chat."""
    return HTMLResponse(console_page(), headers=PAGE_HEADERS)


@router.get("/docs")
async def docs() -> Response:
    """Swagger UI for ``/openapi.json``, from the copy pinned in a package (no CDN): ``/docs/assets``."""
    return HTMLResponse(docs_page(), headers=PAGE_HEADERS)


def mount_static_files(app: FastAPI) -> None:
    """Serve the console's files at ``/console`` and Swagger UI's at ``/docs/assets``."""
    app.mount("/console", ConsoleFiles(directory=CONSOLE_DIR), name="console")
    app.mount("/docs/assets", StaticFiles(directory=swagger_ui_dir()), name="docs-assets")
