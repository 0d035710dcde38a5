"""Run the HTTP service under uvicorn (what ``parkgate serve`` calls)."""

from __future__ import annotations

import os

import uvicorn

from parkgate.http.app import ENV_DB, ENV_PG_TIMEOUT, ENV_TOKEN, parse_pg_timeout, store_from_env
from parkgate.http.logs import uvicorn_log_config

#: The factory uvicorn imports in every worker process.
APP_FACTORY = "parkgate.http.app:app_from_env"


def configure(db_url: str, token: str | None, pg_timeout: float | None = None) -> None:
    """Put the server's settings in the environment, where every worker reads them.

    ``PARKGATE_DB`` and ``PARKGATE_TOKEN`` are set (or the token removed);
    ``PARKGATE_PG_TIMEOUT`` is set when ``pg_timeout`` is given. ``PARKGATE_PG_SCHEMA``
    is left as the caller's environment has it.
    """
    os.environ[ENV_DB] = db_url
    if token:
        os.environ[ENV_TOKEN] = token
    else:
        os.environ.pop(ENV_TOKEN, None)
    if pg_timeout is not None:
        os.environ[ENV_PG_TIMEOUT] = repr(parse_pg_timeout(pg_timeout))


def migrate_configured_store() -> None:
    """Open, and so migrate, the store the workers will open (same URL, schema, timeout).

    Raises :class:`~parkgate.store.StoreError` when the store is out of reach.
    """
    store_from_env().close()


def serve(db_url: str, host: str, port: int, workers: int, token: str | None, pg_timeout: float | None = None) -> None:
    """Serve the gateway on ``host:port`` until interrupted (blocking).

    The app is built by :func:`parkgate.http.app.app_from_env` in each worker: the
    store URL and token travel in ``PARKGATE_DB`` / ``PARKGATE_TOKEN`` (see
    :func:`configure`; ``PARKGATE_PG_SCHEMA``, if set, picks a PostgreSQL schema and
    ``PARKGATE_PG_TIMEOUT`` bounds the wait for a connection). With ``workers > 1``
    uvicorn runs that many processes on one socket; use PostgreSQL (or accept SQLite's
    single writer at a time) for several workers. Every worker writes the ``parkgate``
    log records (each expiry's ``ask_expired`` line) to stderr as JSON lines
    (:func:`parkgate.http.logs.uvicorn_log_config`).
    """
    if workers < 1:
        raise ValueError("workers must be at least 1")
    configure(db_url, token, pg_timeout)
    uvicorn.run(
        APP_FACTORY,
        factory=True,
        host=host,
        port=port,
        workers=workers,
        proxy_headers=False,
        server_header=False,
        log_level="info",
        log_config=uvicorn_log_config(),
    )
