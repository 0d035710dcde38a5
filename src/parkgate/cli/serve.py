"""``parkgate serve`` (the HTTP gateway) and ``parkgate deliver`` (due reads and
callbacks with no HTTP server): the commands that run until stopped."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import sys
from contextlib import suppress

import click

from parkgate.channels.serving import sending_channels
from parkgate.cli.stores import db_option, gateway_session, shown_url
from parkgate.gateway import Gateway
from parkgate.http.logs import logging_to_stderr
from parkgate.http.parsers import DEFAULT_PARSER, PARSERS
from parkgate.store import StoreError


def _pg_timeout_option(_: click.Context, __: click.Parameter, value: str | None) -> float | None:
    """``serve --pg-timeout``: checked here, so a bad value is a usage error, not a worker crash."""
    if value is None:
        return None  # the server's default (parkgate.http.app.SERVER_PG_TIMEOUT_SECONDS)
    from parkgate.http.app import parse_pg_timeout

    try:
        return parse_pg_timeout(value)
    except ValueError as error:
        raise click.BadParameter(str(error)) from None


def http_url(host: str, port: int) -> str:
    """The address ``serve`` announces: IPv6 hosts in brackets; port 0 is uvicorn's to name."""
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}/" if port else f"http://{shown} on a free port (uvicorn names it)"


def check_can_listen(host: str, port: int) -> None:
    """A one-line error unless ``host:port`` can be bound now (uvicorn binds it later).

    Each address ``host`` resolves to is bound and let go, with the options uvicorn uses
    (``SO_REUSEADDR``; IPv6 sockets IPv6 only), so a port another server listens on, a
    privileged port or an unknown host is refused before anything is set up. Port 0
    (any free port) always binds.
    """
    if port == 0:
        return
    try:
        found = socket.getaddrinfo(host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except (socket.gaierror, UnicodeError) as error:
        reason = getattr(error, "strerror", None) or error
        raise click.ClickException(f"cannot listen on {host}:{port}: {reason}") from None
    for family, kind, proto, _, address in found:
        with socket.socket(family, kind, proto) as probe:
            if sys.platform != "win32":
                probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if family == socket.AF_INET6 and hasattr(socket, "IPPROTO_IPV6"):
                probe.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            try:
                probe.bind(address)
            except OSError as error:
                reason = (error.strerror or str(error)).lower()
                raise click.ClickException(f"cannot listen on {host}:{port}: {reason}") from None


def _check_token(token: str | None) -> None:
    """Refuse a blank token; warn when it came on the command line, where ``ps`` shows it."""
    if token is not None and not token.strip():
        raise click.ClickException("--token (PARKGATE_TOKEN) is blank: give a real token, or none")
    context = click.get_current_context()
    if token and context.get_parameter_source("token") is click.core.ParameterSource.COMMANDLINE:
        click.secho(
            "warning: a --token on the command line shows in ps to every user of this machine; "
            "use --token-file or PARKGATE_TOKEN",
            err=True,
            fg="yellow",
        )


def _check_exposure(host: str, insecure_no_token: bool) -> None:
    """Refuse (or warn about) a server that would answer beyond loopback without a token."""
    from parkgate.http.settings import SettingsError, check_exposure, settings_from_env

    try:
        warning = check_exposure(host, settings_from_env(), insecure_no_token)
    except SettingsError as error:
        raise click.ClickException(str(error)) from None
    if warning:
        click.secho(warning, err=True, fg="red", bold=True)


def check_callback_settings() -> None:
    """Refuse a webhook secret (``PARKGATE_WEBHOOK_SECRET``) or events subscriber
    (``PARKGATE_EVENTS_URL``) that cannot be used, before anything starts."""
    from parkgate.delivery.signing import signer_from_env
    from parkgate.gateway.events import events_url_from_env

    try:
        signer_from_env()
        events_url_from_env()
    except ValueError as error:  # CallbackRefused is one
        raise click.ClickException(str(error)) from None


def _migrate_before_workers() -> None:
    """Migrate the store the workers will open, so a bad store fails once, here, clearly."""
    from parkgate.http.server import migrate_configured_store

    try:
        with logging_to_stderr():  # a schema the store creates is logged (a JSON line)
            migrate_configured_store()
    except StoreError as error:
        raise click.ClickException(str(error)) from None


@click.command()
@db_option
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", default=8080, show_default=True, type=click.IntRange(0, 65535))
@click.option("--workers", default=1, show_default=True, type=click.IntRange(1, 64))
@click.option(
    "--token",
    envvar="PARKGATE_TOKEN",
    default=None,
    help="One bearer token with every scope for /v1 (env PARKGATE_TOKEN; on the command line it shows in ps: "
    "prefer --token-file).",
)
@click.option(
    "--token-file",
    envvar="PARKGATE_TOKEN_FILE",
    default=None,
    type=click.Path(dir_okay=False),
    help="A file holding the one bearer token (env PARKGATE_TOKEN_FILE). Named, scoped tokens: PARKGATE_TOKENS_FILE.",
)
@click.option(
    "--allowed-host",
    "allowed_hosts",
    multiple=True,
    metavar="HOST",
    help="Another Host name this server answers to (repeatable; env PARKGATE_ALLOWED_HOSTS, comma-separated). "
    "localhost, loopback addresses and --host are always allowed.",
)
@click.option(
    "--insecure-no-token",
    is_flag=True,
    help="Serve a non-loopback --host without any token (refused otherwise): only behind another guard.",
)
@click.option(
    "--max-connections",
    default=500,
    show_default=True,
    type=click.IntRange(1, 100_000),
    help="Connections served at once; more get 503.",
)
@click.option(
    "--head-timeout",
    envvar="PARKGATE_HEAD_TIMEOUT",
    default=None,
    type=click.FloatRange(0, 3600, min_open=True),
    metavar="SECONDS",
    help="Seconds a connection has to send its request head, when opened and after each "
    "response; then it is closed (default 10; env PARKGATE_HEAD_TIMEOUT).",
)
@click.option(
    "--max-connections-per-peer",
    envvar="PARKGATE_MAX_CONNECTIONS_PER_PEER",
    default=None,
    type=click.IntRange(1, 100_000),
    help="Connections one client address holds at once; more are refused with 503 (default: half "
    "of --max-connections; env PARKGATE_MAX_CONNECTIONS_PER_PEER). Behind a proxy: --max-connections.",
)
@click.option(
    "--max-long-polls",
    envvar="PARKGATE_MAX_LONG_POLLS",
    default=None,
    type=click.IntRange(1, 100_000),
    help="Long-polls (?wait=) held at once; more get 429 too_many_long_polls (default: four fifths "
    "of --max-connections; env PARKGATE_MAX_LONG_POLLS).",
)
@click.option(
    "--pg-timeout",
    "pg_timeout",
    envvar="PARKGATE_PG_TIMEOUT",
    default=None,
    callback=_pg_timeout_option,
    metavar="SECONDS",
    help="PostgreSQL only: seconds a request waits for a database connection before it gets "
    "a 503 (default 3; env PARKGATE_PG_TIMEOUT).",
)
@click.option(
    "--http",
    "http",
    type=click.Choice(PARSERS),
    default=DEFAULT_PARSER,
    show_default=True,
    help="The request parser: httptools (C, fast) or h11 (pure Python); both hold the same bounds.",
)
@click.option(
    "--access-log/--no-access-log",
    envvar="PARKGATE_ACCESS_LOG",
    default=False,
    show_default=True,
    help="Write uvicorn's access log (one line per request) to stdout (env PARKGATE_ACCESS_LOG). "
    "parkgate's own JSON lines are written either way.",
)
def serve(
    db_url: str,
    host: str,
    port: int,
    workers: int,
    token: str | None,
    token_file: str | None,
    allowed_hosts: tuple[str, ...],
    insecure_no_token: bool,
    max_connections: int,
    head_timeout: float | None,
    max_connections_per_peer: int | None,
    max_long_polls: int | None,
    pg_timeout: float | None,
    http: str,
    access_log: bool,
) -> None:
    """Run the HTTP gateway (with the web console and the demo workflow).

    With PostgreSQL, PARKGATE_PG_SCHEMA picks the schema (created if it does not exist):
    the migration run here and every worker use it. Every expiry logs one JSON line
    on stderr. A non-loopback --host needs a token (or --insecure-no-token).
    PARKGATE_TOKENS_FILE names a TOML file of named, scoped tokens (their hashes only);
    PARKGATE_CALLBACK_ALLOW lets callbacks reach internal receivers on purpose;
    PARKGATE_WEBHOOK_SECRET (whsec_ + base64, several space-separated while rotating)
    signs them; PARKGATE_EVENTS_URL gets every ask's events.
    """
    from parkgate.http.server import configure
    from parkgate.http.server import serve as run_server

    _check_token(token)
    check_callback_settings()
    configure(db_url, token, pg_timeout, token_file=token_file, allowed_hosts=allowed_hosts, bind_host=host)
    _check_exposure(host, insecure_no_token)
    check_can_listen(host, port)  # a port in use is one line, before a file or schema is made
    _migrate_before_workers()
    # uvicorn binds the socket next, and logs "Uvicorn running on ..." once it has.
    click.echo(
        f"parkgate starting on {http_url(host, port)} with {shown_url(db_url)} "
        "(console at /, API at /v1, docs at /docs)"
    )
    try:
        run_server(
            db_url,
            host,
            port,
            workers,
            token,
            pg_timeout,
            token_file=token_file,
            allowed_hosts=allowed_hosts,
            insecure_no_token=insecure_no_token,
            max_connections=max_connections,
            head_timeout=head_timeout,
            max_connections_per_peer=max_connections_per_peer,
            max_long_polls=max_long_polls,
            http=http,
            access_log=access_log,
        )
    except SystemExit as stopped:
        if stopped.code in (None, 0):
            raise
        raise click.ClickException(
            f"the server did not start on {http_url(host, port)} (uvicorn exited with {stopped.code}; "
            "its error is above)"
        ) from None


@click.command()
@db_option
def deliver(db_url: str) -> None:
    """Run due reads and callback delivery for a database, with no HTTP server.

    Each ask something waits on (one with a callback) is read when its TTL falls due,
    which closes it as expired, and the callbacks of closed asks are POSTed from the
    outbox. `parkgate serve` does the same in each worker; run this beside a library
    Gateway instead. Any number may run on one database. Ctrl-C or SIGTERM stops it.
    The channels the environment switches on (PARKGATE_SLACK_BOT_TOKEN,
    PARKGATE_TELEGRAM_BOT_TOKEN) get their asks posted and updated too; sending needs
    only the bot token, as nothing here answers the platform.
    """
    check_callback_settings()
    with gateway_session(db_url, surface="deliver") as gateway:
        sending_channels(gateway, os.environ)
        click.echo(f"parkgate delivering callbacks and due reads for {shown_url(db_url)} (Ctrl-C stops)")
        asyncio.run(_deliver_until_stopped(gateway))
        click.echo("parkgate deliver stopped")


async def _deliver_until_stopped(gateway: Gateway) -> None:
    """Run the deliverer until SIGINT or SIGTERM cancels it."""
    from parkgate.gateway.delivering import deliverer_for

    task = asyncio.create_task(deliverer_for(gateway).run())
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        with suppress(NotImplementedError, RuntimeError):  # Windows: Ctrl-C raises KeyboardInterrupt
            loop.add_signal_handler(signum, task.cancel)
    with suppress(asyncio.CancelledError):
        await task
