"""Run the HTTP service under uvicorn (what ``parkgate serve`` calls)."""

from __future__ import annotations

import asyncio
import os
import shutil
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager

import uvicorn

from parkgate.http.connections import ENV_HEAD_TIMEOUT, ENV_MAX_PER_PEER, BoundedH11Protocol
from parkgate.http.fastparser import BoundedHttpToolsProtocol
from parkgate.http.guard import MAX_HEAD_BYTES
from parkgate.http.logs import uvicorn_log_config
from parkgate.http.longpolls import ENV_MAX_LONG_POLLS
from parkgate.http.parsers import DEFAULT_PARSER, H11, HTTPTOOLS
from parkgate.http.settings import (
    ENV_ALLOWED_HOSTS,
    ENV_DB,
    ENV_PG_TIMEOUT,
    ENV_TOKEN,
    ENV_TOKEN_FILE,
    check_exposure,
    host_of,
    parse_pg_timeout,
    settings_from_env,
    store_from_env,
)
from parkgate.metrics import MULTIPROCESS_ENV

#: The factory uvicorn imports in every worker process.
APP_FACTORY = "parkgate.http.app:app_from_env"
#: A request whose line and headers pass this many bytes is refused: while the head is
#: incomplete the protocol refuses it and closes the connection before the rest is read
#: (httptools: 431; h11: 400), and a complete head that arrived in one read gets 431
#: (:func:`parkgate.http.guard.check_head`).
MAX_HEADER_BYTES = MAX_HEAD_BYTES
#: Connections (and requests in progress) served at once; past it uvicorn answers 503.
DEFAULT_MAX_CONNECTIONS = 500
#: The HTTP parsers ``serve`` runs, by name (:mod:`parkgate.http.parsers`), each bounded
#: alike (:mod:`parkgate.http.fastparser`).
PROTOCOLS: dict[str, type[asyncio.Protocol]] = {HTTPTOOLS: BoundedHttpToolsProtocol, H11: BoundedH11Protocol}
#: Bind addresses that mean "every address": not a name a Host header carries.
_WILDCARDS = {"", "0.0.0.0", "::"}


def configure(
    db_url: str,
    token: str | None,
    pg_timeout: float | None = None,
    *,
    token_file: str | None = None,
    allowed_hosts: Iterable[str] = (),
    bind_host: str | None = None,
) -> None:
    """Put the server's settings in the environment, where every worker reads them.

    ``PARKGATE_DB`` is set; ``PARKGATE_TOKEN`` is set to ``token`` (or removed), or
    ``PARKGATE_TOKEN_FILE`` to ``token_file`` (the token stays in its file);
    ``PARKGATE_PG_TIMEOUT`` is set when ``pg_timeout`` is given. ``allowed_hosts`` and a
    named ``bind_host`` join ``PARKGATE_ALLOWED_HOSTS``. ``PARKGATE_PG_SCHEMA``,
    ``PARKGATE_TOKENS_FILE`` and ``PARKGATE_CALLBACK_ALLOW`` are left as the caller's
    environment has them.
    """
    os.environ[ENV_DB] = db_url
    if token:
        os.environ[ENV_TOKEN] = token
    else:
        os.environ.pop(ENV_TOKEN, None)
    if token_file:
        os.environ[ENV_TOKEN_FILE] = token_file
    if pg_timeout is not None:
        os.environ[ENV_PG_TIMEOUT] = repr(parse_pg_timeout(pg_timeout))
    hosts = [entry.strip() for entry in os.environ.get(ENV_ALLOWED_HOSTS, "").split(",") if entry.strip()]
    extra = [*allowed_hosts]
    if bind_host is not None and host_of(bind_host) not in _WILDCARDS:
        extra.append(bind_host)
    for host in extra:
        if host not in hosts:
            hosts.append(host)
    if hosts:
        os.environ[ENV_ALLOWED_HOSTS] = ",".join(hosts)


def migrate_configured_store() -> None:
    """Open, and so migrate, the store the workers will open (same URL, schema, timeout).

    Raises :class:`~parkgate.store.StoreError` when the store is out of reach.
    """
    store_from_env().close()


def serve(
    db_url: str,
    host: str,
    port: int,
    workers: int,
    token: str | None,
    pg_timeout: float | None = None,
    *,
    token_file: str | None = None,
    allowed_hosts: Iterable[str] = (),
    insecure_no_token: bool = False,
    max_connections: int = DEFAULT_MAX_CONNECTIONS,
    head_timeout: float | None = None,
    max_connections_per_peer: int | None = None,
    max_long_polls: int | None = None,
    http: str = DEFAULT_PARSER,
    access_log: bool = False,
) -> None:
    """Serve the gateway on ``host:port`` until interrupted (blocking).

    The app is built by :func:`parkgate.http.app.app_from_env` in each worker: its
    settings travel in the environment (see :func:`configure`; ``PARKGATE_PG_SCHEMA``, if
    set, picks a PostgreSQL schema and ``PARKGATE_PG_TIMEOUT`` bounds the wait for a
    connection). A non-loopback ``host`` without a token raises
    :class:`~parkgate.http.settings.SettingsError` unless ``insecure_no_token``. Request
    heads over :data:`MAX_HEADER_BYTES` are refused, and at most ``max_connections``
    are served at once; the bounds of :func:`bound_connections` keep idle sockets, one
    peer and long-polls from taking every one of them. With ``workers > 1`` uvicorn runs that many
    processes on one socket; use PostgreSQL (or accept SQLite's single writer at a
    time) for several workers. Every worker writes the ``parkgate`` log records (each
    expiry's ``ask_expired`` line) to stderr as JSON lines
    (:func:`parkgate.http.logs.uvicorn_log_config`). ``http`` names the request parser
    (:data:`PROTOCOLS`: ``httptools``, the default, or ``h11``), with the same bounds either
    way. uvicorn's access log (one line per request) is written only with ``access_log``:
    formatting and writing it costs about 25 µs a request (bench/README.md).
    """
    if workers < 1:
        raise ValueError("workers must be at least 1")
    if http not in PROTOCOLS:
        raise ValueError(f"http must be one of {', '.join(PROTOCOLS)}, not {http!r}")
    configure(db_url, token, pg_timeout, token_file=token_file, allowed_hosts=allowed_hosts, bind_host=host)
    check_exposure(host, settings_from_env(), insecure_no_token)
    bound_connections(max_connections, head_timeout, max_connections_per_peer, max_long_polls)
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
            access_log=access_log,
            http=PROTOCOLS[http],
            h11_max_incomplete_event_size=MAX_HEADER_BYTES,
            limit_concurrency=max_connections,
        )


def bound_connections(
    max_connections: int,
    head_timeout: float | None = None,
    max_per_peer: int | None = None,
    max_long_polls: int | None = None,
) -> None:
    """Put the connection bounds in the environment, where every worker reads them.

    Each one given is set; one left ``None`` keeps what the environment has, or else gets
    its default: a 10 s head timeout (:mod:`parkgate.http.connections`), half of
    ``max_connections`` per peer, and four fifths of it for long-polls
    (:mod:`parkgate.http.longpolls`), so that ordinary requests always have slots left.
    """
    if head_timeout is not None:
        os.environ[ENV_HEAD_TIMEOUT] = repr(head_timeout)
    defaults = {ENV_MAX_PER_PEER: max(1, max_connections // 2), ENV_MAX_LONG_POLLS: max(1, max_connections * 4 // 5)}
    for name, given in ((ENV_MAX_PER_PEER, max_per_peer), (ENV_MAX_LONG_POLLS, max_long_polls)):
        if given is not None:
            os.environ[name] = str(given)
        elif not os.environ.get(name, "").strip():
            os.environ[name] = str(defaults[name])


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
