"""Run the HTTP service under uvicorn (what ``parkgate serve`` calls)."""

from __future__ import annotations

import os

import uvicorn

from parkgate.http.app import ENV_DB, ENV_TOKEN

#: The factory uvicorn imports in every worker process.
APP_FACTORY = "parkgate.http.app:app_from_env"


def serve(db_url: str, host: str, port: int, workers: int, token: str | None) -> None:
    """Serve the gateway on ``host:port`` until interrupted (blocking).

    The app is built by :func:`parkgate.http.app.app_from_env` in each worker: the
    store URL and token travel in ``PARKGATE_DB`` / ``PARKGATE_TOKEN`` (and
    ``PARKGATE_PG_SCHEMA``, if set, picks a PostgreSQL schema). With ``workers > 1``
    uvicorn runs that many processes on one socket; use PostgreSQL (or accept SQLite's
    single writer at a time) for several workers.
    """
    if workers < 1:
        raise ValueError("workers must be at least 1")
    os.environ[ENV_DB] = db_url
    if token:
        os.environ[ENV_TOKEN] = token
    else:
        os.environ.pop(ENV_TOKEN, None)
    uvicorn.run(
        APP_FACTORY,
        factory=True,
        host=host,
        port=port,
        workers=workers,
        proxy_headers=False,
        server_header=False,
        log_level="info",
    )
