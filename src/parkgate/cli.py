"""The ``parkgate`` command: serve, deliver, chat, asks, doorcheck, migrate, prove.

``--db`` (or ``PARKGATE_DB``) chooses the store everywhere: ``sqlite:///parkgate.db``
(the default), a file path, or ``postgresql://...``; with PostgreSQL,
``PARKGATE_PG_SCHEMA`` picks the schema for every command, as it does for the server.
The store sets itself up: opening it migrates, creating a SQLite file or a PostgreSQL
schema that does not exist yet (``serve``, ``migrate``). ``asks`` only reads, so it
creates nothing: a missing file or schema is an error. ``chat`` and ``doorcheck``
create a new SQLite file but refuse a PostgreSQL schema that does not exist (a typo
there would otherwise set up an empty, new schema under the wrong name).

An expected error (bad input, a store that is missing or out of reach, a busy
conversation) ends the command with one ``Error:`` line and exit code 1, never a
traceback.

Every value from a store or a server is printed through :mod:`parkgate.display`: no
Rich markup is read from data, and control, direction and invisible characters show
as their escapes (``\\u202e``), so no value can restyle, rewrite or hide on the screen.

Every command that can close an ask (``serve``, ``deliver``, ``chat``, ``doorcheck``) writes each
expiry's structured line (``{"event": "ask_expired", ...}``) to stderr, one JSON object a
line; ``asks`` only reads, so it closes (and logs) nothing.
"""

from __future__ import annotations

import asyncio
import os
import re
import signal
import socket
import sys
import tempfile
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import urlsplit

import click
from rich import box
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from parkgate.client import Client, ErrorResponse, UnexpectedResponse, Unreachable
from parkgate.client.wire import path_segment as path_segment  # re-exported: the door check's URL paths
from parkgate.core import phrases as P
from parkgate.core.model import Ask
from parkgate.core.phrases import CHAT_REFUSED, CHAT_STILL_PARKED, ReplyKind
from parkgate.demo import WORKFLOWS
from parkgate.display import json_line, visible_id, visible_text
from parkgate.errors import AskAlreadyOpen, InputError, ParkgateError
from parkgate.gateway import Gateway, ask_to_dict
from parkgate.http.logs import logging_to_stderr
from parkgate.reply import Reply
from parkgate.store import (
    DEFAULT_URL,
    SchemaMissing,
    Store,
    StoreError,
    deployed_schema,
    is_postgres_url,
    open_deployed_store,
)

db_option = click.option(
    "--db",
    "db_url",
    envvar="PARKGATE_DB",
    default=DEFAULT_URL,
    show_default=True,
    help="Store URL: sqlite:///file.db, a file path, or postgresql://... (env PARKGATE_DB).",
)

#: The four non-answers the door check sends before its exit word.
DOORCHECK_INPUTS = ("pick the right diagram", "did it run?", "huh", "what")
DOORCHECK_EXIT = "cancel"
CHAT_RESTART = "/start"

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhd]?)\s*$")
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "": 3600}


def parse_duration(text: str) -> timedelta:
    """``90s``, ``30m``, ``6h``, ``2d``, or a bare number of hours."""
    found = _DURATION.match(text)
    if not found:
        raise click.BadParameter(f"{text!r} is not a duration like 30m, 6h or 2d")
    try:
        return timedelta(seconds=float(found.group(1)) * _UNITS[found.group(2)])
    except OverflowError:
        raise click.BadParameter(f"{text!r} is not a duration like 30m, 6h or 2d (far too long)") from None


def format_hours(seconds: float) -> str:
    """Hours as a person writes them: ``6``, ``0.5``, ``2.25`` (never ``6.0``).

    Two decimals at most from a tenth of an hour up; two significant digits below it
    (``0.025`` for 90 seconds), so a short TTL never shows as ``0``.
    """
    hours = seconds / 3600
    if hours >= 0.1:
        return f"{hours:.2f}".rstrip("0").rstrip(".")
    return f"{hours:.2g}"


def _pg_timeout_option(_: click.Context, __: click.Parameter, value: str | None) -> float | None:
    """``serve --pg-timeout``: checked here, so a bad value is a usage error, not a worker crash."""
    if value is None:
        return None  # the server's default (parkgate.http.app.SERVER_PG_TIMEOUT_SECONDS)
    from parkgate.http.app import parse_pg_timeout

    try:
        return parse_pg_timeout(value)
    except ValueError as error:
        raise click.BadParameter(str(error)) from None


def _where(store: Store) -> str:
    """Where a store keeps its tables, for an error message (never the URL: it may hold a password)."""
    path = getattr(store, "path", None)
    if path is not None:
        return str(path)
    schema = getattr(store, "schema", None)
    return f"the PostgreSQL schema {schema}" if schema else "this PostgreSQL database (its search_path)"


def _store_options(db_url: str) -> dict[str, Any]:
    """What a command opens a store with: on PostgreSQL, the server's short wait for a
    connection (3 s, or ``PARKGATE_PG_TIMEOUT``), so an unreachable database is one error
    line after a few seconds rather than the library's 10 s of silence."""
    if not is_postgres_url(db_url):
        return {}
    from parkgate.http.app import ENV_PG_TIMEOUT, SERVER_PG_TIMEOUT_SECONDS, parse_pg_timeout

    value = os.environ.get(ENV_PG_TIMEOUT, "").strip()
    try:
        return {"timeout": parse_pg_timeout(value) if value else SERVER_PG_TIMEOUT_SECONDS}
    except ValueError as error:
        raise click.ClickException(f"{ENV_PG_TIMEOUT}: {error}") from None


def _open(db_url: str, *, reading: bool = False) -> Store:
    """The store a command works on (``PARKGATE_PG_SCHEMA`` honoured), or a one-line error.

    ``reading`` (``asks``) creates and changes nothing: the store opens without migrating,
    and a missing SQLite file, a missing PostgreSQL schema or one without parkgate's
    tables is an error. Otherwise the store is migrated; a new SQLite file is created,
    but a PostgreSQL schema must exist already (only ``serve`` and ``migrate`` create one).
    """
    store: Store | None = None
    options = _store_options(db_url)
    try:
        if reading or is_postgres_url(db_url):
            store = open_deployed_store(db_url, migrate=False, **options)  # refuses a missing file or schema
            if reading and store.schema_version() == 0:
                raise StoreError(
                    f"no parkgate database at {_where(store)}: it has no parkgate tables "
                    "(`parkgate migrate` sets them up), or fix --db"
                )
            if not reading:
                store.migrate()
            return store
        return open_deployed_store(db_url, **options)
    except SchemaMissing as missing:  # its own message speaks to the library's callers too
        raise click.ClickException(
            f"the PostgreSQL schema {missing.schema!r} does not exist in this database: create it with "
            f"`parkgate migrate` (PARKGATE_PG_SCHEMA={missing.schema}), or fix the name"
        ) from None
    except StoreError as error:
        if store is not None:
            store.close()
        raise click.ClickException(str(error)) from None


@contextmanager
def _gateway(db_url: str, surface: str = "cli", *, reading: bool = False) -> Iterator[Gateway]:
    """A gateway on :func:`_open`'s store; an expected error in the body becomes one line."""
    gateway = Gateway(store=_open(db_url, reading=reading), workflows=WORKFLOWS.values(), surface=surface)
    try:
        with logging_to_stderr():  # an ask expiring on a read logs its JSON line on stderr
            yield gateway
    except ParkgateError as error:
        raise click.ClickException(str(error)) from None
    finally:
        gateway.close()


def _http_url(host: str, port: int) -> str:
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


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="parkgate")
def main() -> None:
    """parkgate: parked human-in-the-loop asks that always close."""


@main.command()
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
    "--pg-timeout",
    "pg_timeout",
    envvar="PARKGATE_PG_TIMEOUT",
    default=None,
    callback=_pg_timeout_option,
    metavar="SECONDS",
    help="PostgreSQL only: seconds a request waits for a database connection before it gets "
    "a 503 (default 3; env PARKGATE_PG_TIMEOUT).",
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
    pg_timeout: float | None,
) -> None:
    """Run the HTTP gateway (with the web console and the demo workflow).

    With PostgreSQL, PARKGATE_PG_SCHEMA picks the schema (created if it does not exist):
    the migration run here and every worker use it. Every expiry logs one JSON line
    on stderr. A non-loopback --host needs a token (or --insecure-no-token).
    PARKGATE_TOKENS_FILE names a TOML file of named, scoped tokens (their hashes only);
    PARKGATE_CALLBACK_ALLOW lets callbacks reach internal receivers on purpose.
    """
    from parkgate.http.server import configure, migrate_configured_store
    from parkgate.http.server import serve as run_server
    from parkgate.http.settings import SettingsError, check_exposure, settings_from_env

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
    configure(db_url, token, pg_timeout, token_file=token_file, allowed_hosts=allowed_hosts, bind_host=host)
    try:
        warning = check_exposure(host, settings_from_env(), insecure_no_token)
    except SettingsError as error:
        raise click.ClickException(str(error)) from None
    if warning:
        click.secho(warning, err=True, fg="red", bold=True)
    check_can_listen(host, port)  # a port in use is one line, before a file or schema is made
    try:  # migrate (and fail clearly) in the store the workers will open, before they start
        with logging_to_stderr():  # a schema the store creates is logged (a JSON line)
            migrate_configured_store()
    except StoreError as error:
        raise click.ClickException(str(error)) from None
    # uvicorn binds the socket next, and logs "Uvicorn running on ..." once it has.
    click.echo(
        f"parkgate starting on {_http_url(host, port)} with {shown_url(db_url)} "
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
        )
    except SystemExit as stopped:
        if stopped.code in (None, 0):
            raise
        raise click.ClickException(
            f"the server did not start on {_http_url(host, port)} (uvicorn exited with {stopped.code}; "
            "its error is above)"
        ) from None


@main.command()
@db_option
def deliver(db_url: str) -> None:
    """Run due reads and callback delivery for a database, with no HTTP server.

    Each ask something waits on (one with a callback) is read when its TTL falls due,
    which closes it as expired, and the callbacks of closed asks are POSTed from the
    outbox. `parkgate serve` does the same in each worker; run this beside a library
    Gateway instead. Any number may run on one database. Ctrl-C or SIGTERM stops it.
    """
    with _gateway(db_url, surface="deliver") as gateway:
        click.echo(f"parkgate delivering callbacks and due reads for {shown_url(db_url)} (Ctrl-C stops)")
        asyncio.run(_deliver_until_stopped(gateway))
        click.echo("parkgate deliver stopped")


async def _deliver_until_stopped(gateway: Gateway) -> None:
    from parkgate.delivery import Deliverer

    task = asyncio.create_task(Deliverer(gateway).run())
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        with suppress(NotImplementedError, RuntimeError):  # Windows: Ctrl-C raises KeyboardInterrupt
            loop.add_signal_handler(signum, task.cancel)
    with suppress(asyncio.CancelledError):
        await task


def _print_reply(out: Console, reply: Reply) -> None:
    style = {
        ReplyKind.RETRY: "yellow",
        ReplyKind.ESCALATED: "bold red",
        ReplyKind.CANCELLED: "magenta",
        ReplyKind.SELECTED: "green",
        ReplyKind.ANSWERED: "green",
    }.get(reply.kind, "cyan")
    out.print(f"[{style}]\\[{reply.kind.value}][/{style}]", highlight=False)
    out.print(Text(visible_text(reply.text)), highlight=False)


@main.command()
@db_option
@click.option("--conversation", default=None, help="Conversation id (default: a new one).")
def chat(db_url: str, conversation: str | None) -> None:
    """Talk to the demo workflow (which UML diagram? -> describe it -> PlantUML).

    Replies to a parked ask never reach the model; anything else goes to a stand-in
    model that says it is one. Type /start to run the demo again (while a question is
    open, /start says how to leave it first); Ctrl-D to leave.
    """
    out = Console(highlight=False)
    conversation_id = conversation or f"chat-{uuid.uuid4().hex[:8]}"
    stream = sys.stdin.buffer
    with _gateway(db_url) as gateway:
        _start_demo(out, gateway, conversation_id)
        while True:
            if sys.stdin.isatty():
                out.print("[bold]>[/bold] ", end="")
            raw = stream.readline()
            if not raw:
                break
            line = raw.rstrip(b"\r\n")
            if line.strip() == CHAT_RESTART.encode():
                _start_demo(out, gateway, conversation_id)  # chat's own word: never a miss of the open ask
                continue
            try:
                reply = gateway.handle(conversation_id, line)
            except InputError as error:
                out.print(Text(visible_text(CHAT_REFUSED.format(error=error)), style="red"))
                continue
            if reply.kind is ReplyKind.PASS:
                if reply.expired_ask_id:
                    ttl = gateway.get(reply.expired_ask_id).ttl_seconds  # its own TTL, not the default
                    out.print(P.EXPIRED_NOTICE.format(hours=format_hours(ttl)), markup=False)
                text = line.decode("utf-8")
                out.print(Text(P.STAND_IN_MODEL.format(text=visible_text(text))), highlight=False)
                continue
            _print_reply(out, reply)
            if not reply.parked:  # the demo finished, or was dropped: say how to run it again
                out.print(Text(P.CHAT_AGAIN.format(restart=CHAT_RESTART), style="dim"), highlight=False)


def _start_demo(out: Console, gateway: Gateway, conversation_id: str) -> None:
    """Start the demo; with a question open, say how to leave it instead. Any other error
    (a conversation id no message could use, a store out of reach) ends chat with one line."""
    try:
        reply = gateway.start(conversation_id, "uml")
    except AskAlreadyOpen:
        out.print(f"[red]{escape(CHAT_STILL_PARKED.format(restart=CHAT_RESTART))}[/red]")
        return
    _print_reply(out, reply)


@main.command()
@db_option
@click.option(
    "--older-than",
    "older_than",
    default=None,
    help="Only list asks open longer than this (30m, 6h, 2d); the exit status still checks them all.",
)
@click.option("--json", "as_json", is_flag=True, help="One JSON object per line instead of a table.")
def asks(db_url: str, older_than: str | None, as_json: bool) -> None:
    """List open asks and their hours open: the clock check.

    Reads without closing anything, and exits 1 if any open ask is older than its
    TTL (a row the readers should have expired), listed or not: --older-than narrows
    the listing, never the check.
    """
    minimum = parse_duration(older_than) if older_than else None
    with _gateway(db_url, reading=True) as gateway:
        now = gateway.clock.now()
        everything = gateway.audit()
        found = [a for a in everything if minimum is None or now - a.asked_at >= minimum]
        overdue = [a for a in everything if a.is_expired(now)]
        if as_json:
            for ask in found:
                click.echo(json_line({**ask_to_dict(ask, now), "overdue": ask.is_expired(now)}))
        else:
            console = Console()
            console.print(_asks_table(found, now, shown_url(db_url)))
            shown = f"{len(found)} open" if minimum is None else f"{len(found)} of {len(everything)} open listed"
            console.print(f"{shown}, {len(overdue)} past their TTL")
    if overdue:
        sys.exit(1)


#: The most of a question ``asks`` shows (its first line); the rest is cut with an ellipsis.
ASKS_QUESTION_CHARS = 200


def _asks_table(found: list[Ask], now: datetime, where: str) -> Table:
    """The open asks as a table that fits 80 columns (a terminal's or a pipe's).

    The short values (id, time, hours, misses, state) never wrap; the last column takes
    the rest of the width for the conversation, the phase and the question, which fold.
    """
    table = Table(
        title=Text(f"open asks in {visible_text(where)}"), box=box.SIMPLE_HEAD, pad_edge=False, collapse_padding=True
    )
    table.add_column("ask", no_wrap=True)
    table.add_column("asked at (UTC)", no_wrap=True)
    table.add_column("hours", justify="right", no_wrap=True)
    table.add_column("misses", justify="right", no_wrap=True)
    table.add_column("state", no_wrap=True)
    table.add_column("conversation: question", overflow="fold", ratio=1)
    for ask in found:
        question = ask.prompt.split("\n", 1)[0]
        if len(question) > ASKS_QUESTION_CHARS or "\n" in ask.prompt:
            question = question[: ASKS_QUESTION_CHARS - 1] + "\u2026"
        where_asked = Text(visible_id(ask.conversation_id), style="bold")
        if ask.phase:
            where_asked.append(f" ({visible_id(ask.phase)})")
        where_asked.append("\n" + visible_text(question))
        table.add_row(
            Text(visible_id(ask.id[:12])),
            ask.asked_at.astimezone(UTC).strftime("%Y-%m-%d %H:%M"),
            f"{(now - ask.asked_at).total_seconds() / 3600:.2f}",
            str(ask.mismatches),
            Text("past TTL", style="red") if ask.is_expired(now) else "open",
            where_asked,
        )
    return table


def _doorcheck_lines(send: Callable[[str], dict[str, Any]]) -> Iterator[dict[str, Any]]:
    for text in (*DOORCHECK_INPUTS, DOORCHECK_EXIT):
        reply = send(text)
        yield {"input": text, "kind": reply["kind"], "parked": reply["parked"], "text": reply["text"]}


def doorcheck_verdict(lines: list[dict[str, Any]]) -> str | None:
    """``None`` when the door works, else what is wrong with the replies."""
    kinds = [line["kind"] for line in lines]
    if any(kind not in {k.value for k in ReplyKind} for kind in kinds):
        return f"a reply has no known kind: {kinds}"
    misses = kinds[: len(DOORCHECK_INPUTS)]
    if any(kind == ReplyKind.PASS.value for kind in misses):
        return "a non-answer was passed on (it would reach a model)"
    if misses[0] in set(misses[2:4]):
        return f"the reply never changed shape by the 3rd/4th non-answer: {misses}"
    if lines[-1]["parked"] or kinds[-1] != ReplyKind.CANCELLED.value:
        return f"'{DOORCHECK_EXIT}' did not leave: last reply {kinds[-1]}, parked={lines[-1]['parked']}"
    return None


@main.command()
@click.option(
    "--db", "db_url", envvar="PARKGATE_DB", default=None, help="Store to use (default: a temporary SQLite file)."
)
@click.option(
    "--url", default=None, help="A live gateway's base URL (http://host:port, /v1 or not) instead of in-process."
)
@click.option("--token", envvar="PARKGATE_TOKEN", default=None, help="Bearer token for --url.")
@click.option("--conversation", default=None, help="Conversation id to check in (default: a new one).")
def doorcheck(db_url: str | None, url: str | None, token: str | None, conversation: str | None) -> None:
    """The door check: four non-answers then 'cancel' to a fresh demo ask.

    Prints one JSON line per reply; exits 1 unless the reply changes shape by the
    3rd/4th line and the conversation ends unparked.
    """
    conversation_id = conversation or f"doorcheck-{uuid.uuid4().hex[:8]}"
    if url:
        lines = _doorcheck_http(url.rstrip("/"), token, conversation_id)
    else:
        with tempfile.TemporaryDirectory() as folder, _gateway(db_url or f"sqlite:///{folder}/d.db") as gateway:
            try:
                gateway.start(conversation_id, "uml")
            except AskAlreadyOpen as busy:  # the transaction rolled back: nothing changed
                raise _busy(conversation_id, busy.ask_id) from None
            lines = list(_doorcheck_lines(lambda text: gateway.handle(conversation_id, text).to_dict()))
    for line in lines:
        click.echo(json_line(line))
    problem = doorcheck_verdict(lines)
    if problem:
        click.echo(f"doorcheck FAILED: {problem}", err=True)
        sys.exit(1)
    click.echo("doorcheck passed: the reply escalated and the exit left the conversation unparked", err=True)


def shown_url(url: str) -> str:
    """``url`` as the CLI prints it: a password in it (``user:secret@`` or
    ``?password=secret``) replaced by ``***``, so a terminal or a log never shows it."""
    parts = urlsplit(url)
    if parts.password:
        url = url.replace(f":{parts.password}@", ":***@", 1)
    return re.sub(r"(?i)([?&]password=)[^&]*", r"\1***", url)


def _busy(conversation_id: str, ask_id: str | None) -> click.ClickException:
    return click.ClickException(
        f"conversation {conversation_id!r} is busy: it already has an open ask ({ask_id or 'unknown id'}), "
        "and the door check needs a fresh one; pick another --conversation, or leave it out "
        "to check in a new conversation"
    )


#: The command's option for each argument of :class:`~parkgate.client.Client` its errors may name.
_CLIENT_OPTIONS = {"base_url": "--url", "token": "--token"}


def _doorcheck_http(base: str, token: str | None, conversation_id: str) -> list[dict[str, Any]]:
    """The door check against a live gateway, through :class:`~parkgate.client.Client`;
    every way it can fail is one ``Error:`` line."""
    try:
        client = Client(base, token, timeout=10)
    except InputError as error:  # it names its argument (never the token's value); say the option instead
        argument, _, rest = str(error).partition(" ")
        raise click.ClickException(f"{_CLIENT_OPTIONS.get(argument, argument)} {rest}") from None
    step = "to start the demo workflow"
    try:
        with client:
            try:
                client.start(conversation_id, "uml")
            except AskAlreadyOpen as busy:  # the transaction rolled back: nothing changed
                raise _busy(conversation_id, busy.ask_id) from None

            def send(text: str) -> dict[str, Any]:
                nonlocal step
                step = f"the message {text!r}"
                try:
                    return client.handle(conversation_id, text).to_dict()
                except UnexpectedResponse as odd:
                    if odd.status < 300 and isinstance(odd.body, dict):
                        raise click.ClickException(
                            f"the gateway at {base} answered {text!r} without a reply kind"
                        ) from None
                    raise

            return list(_doorcheck_lines(send))
    except Unreachable as error:
        raise click.ClickException(f"the gateway at {base} did not answer ({error})") from None
    except (ParkgateError, StoreError) as error:
        raise click.ClickException(_refused(base, step, error)) from None


def _refused(base: str, what: str, error: Exception) -> str:
    """The line for an error response: the server's status, code and reason."""
    response = error if isinstance(error, ErrorResponse) else error.__cause__
    if not isinstance(response, ErrorResponse):  # refused by the client before it sent anything
        return visible_text(f"cannot send {what} to the gateway at {base}: {error}")
    reason = f"{response.code}: {response.detail}" if response.code else response.detail
    refused = f"the gateway at {base} refused {what} (HTTP {response.status}, {reason})"
    return visible_text(refused.replace("\n", " "))


@main.command()
@db_option
def migrate(db_url: str) -> None:
    """Apply pending schema migrations and print the schema version.

    With PostgreSQL, the schema PARKGATE_PG_SCHEMA names is created if it does not exist.
    """
    try:
        store = open_deployed_store(db_url, **_store_options(db_url))  # migrates: creates a new file or schema
        try:
            applied = list(store.applied)  # what this opening did
            if getattr(store, "created_schema", False):
                click.echo(f"created PostgreSQL schema {getattr(store, 'schema', '')}")
            version = store.schema_version()
        finally:
            store.close()
    except StoreError as error:
        raise click.ClickException(str(error)) from None
    if applied:
        click.echo(
            f"applied migration(s) {', '.join(map(str, applied))}; {shown_url(db_url)} is at schema version {version}"
        )
    else:
        click.echo(f"{shown_url(db_url)} is up to date at schema version {version}")


@main.command()
@click.option("--db", "db_urls", multiple=True, help="Also run the enumeration through this store (repeatable).")
@click.option("--escalate-after", default=3, show_default=True, type=click.IntRange(1, 20))
def prove(db_urls: tuple[str, ...], escalate_after: int) -> None:
    """Check the two properties over every state of the machine, and print the table."""
    from parkgate import prove as proof

    reports = [("pure machine", proof.check(escalate_after))]
    for url in db_urls:
        try:
            reports.append((shown_url(url), proof.check_store(url, escalate_after, schema=deployed_schema(url))))
        except ParkgateError as error:  # a SQLite error names its file already
            raise click.ClickException(f"{shown_url(url)}: {error}" if is_postgres_url(url) else str(error)) from None
    failed = False
    for name, report in reports:
        click.echo(f"== {name}")
        click.echo(report.render())
        failed = failed or bool(report.failures)
    if failed:
        sys.exit(1)
