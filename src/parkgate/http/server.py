"""Run the HTTP service under uvicorn (what ``parkgate serve`` calls)."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager

import uvicorn

from parkgate.http.app import ENV_DB, ENV_PG_TIMEOUT, ENV_TOKEN, parse_pg_timeout, store_from_env
from parkgate.http.logs import uvicorn_log_config
from parkgate.metrics import MULTIPROCESS_ENV

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
    with shared_metrics(workers):
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


@contextmanager
def shared_metrics(workers: int) -> Iterator[None]:
    """With several workers, let them count into one folder, so that a scrape of any
    worker's ``/metrics`` answers for all of them (the Prometheus client's multiprocess
    mode, :data:`~parkgate.metrics.MULTIPROCESS_ENV`).

    The folder is made here, before the workers start (they read the variable when they
    import the client), and removed when the server stops. A folder the environment
    already names is used as it is and left in place: its owner wipes it between runs.
    """
    if workers == 1 or os.environ.get(MULTIPROCESS_ENV):
        yield
        return
    folder = tempfile.mkdtemp(prefix="parkgate-metrics-")
    os.environ[MULTIPROCESS_ENV] = folder
    try:
        yield
    finally:
        os.environ.pop(MULTIPROCESS_ENV, None)
        shutil.rmtree(folder, ignore_errors=True)
