"""How every command opens its store and its gateway, and prints a store URL.

A command opens the store ``--db`` names (``PARKGATE_PG_SCHEMA`` picks the PostgreSQL
schema) with the server's short wait for a PostgreSQL connection, so an unreachable
database is one ``Error:`` line within seconds. Any expected error becomes that one line
(:class:`click.ClickException`), never a traceback.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import urlsplit

import click

from parkgate.cli.demo import WORKFLOWS
from parkgate.errors import ParkgateError
from parkgate.gateway import Gateway
from parkgate.http.logs import logging_to_stderr
from parkgate.store import DEFAULT_URL, SchemaMissing, Store, StoreError, is_postgres_url, open_deployed_store

db_option = click.option(
    "--db",
    "db_url",
    envvar="PARKGATE_DB",
    default=DEFAULT_URL,
    show_default=True,
    help="Store URL: sqlite:///file.db, a file path, or postgresql://... (env PARKGATE_DB).",
)


def shown_url(url: str) -> str:
    """``url`` as the CLI prints it: a password in it (``user:secret@`` or
    ``?password=secret``) replaced by ``***``, so a terminal or a log never shows it."""
    parts = urlsplit(url)
    if parts.password:
        url = url.replace(f":{parts.password}@", ":***@", 1)
    return re.sub(r"(?i)([?&]password=)[^&]*", r"\1***", url)


def store_location(store: Store) -> str:
    """Where a store keeps its tables, for an error message (never the URL: it may hold a password)."""
    path = getattr(store, "path", None)
    if path is not None:
        return str(path)
    schema = getattr(store, "schema", None)
    return f"the PostgreSQL schema {schema}" if schema else "this PostgreSQL database (its search_path)"


def store_options(db_url: str) -> dict[str, Any]:
    """What a command opens a store with: on PostgreSQL, the server's short wait for a
    connection (``PARKGATE_PG_TIMEOUT``, or the server's default), so an unreachable
    database fails fast instead of waiting out the library's longer timeout."""
    if not is_postgres_url(db_url):
        return {}
    from parkgate.http.app import ENV_PG_TIMEOUT, SERVER_PG_TIMEOUT_SECONDS, parse_pg_timeout

    value = os.environ.get(ENV_PG_TIMEOUT, "").strip()
    try:
        return {"timeout": parse_pg_timeout(value) if value else SERVER_PG_TIMEOUT_SECONDS}
    except ValueError as error:
        raise click.ClickException(f"{ENV_PG_TIMEOUT}: {error}") from None


def open_store(db_url: str, *, reading: bool = False) -> Store:
    """The store a command works on (``PARKGATE_PG_SCHEMA`` honoured), or a one-line error.

    ``reading`` (``asks``) creates and changes nothing: the store opens without migrating,
    and a missing SQLite file, a missing PostgreSQL schema or one without parkgate's
    tables is an error. Otherwise the store is migrated; a new SQLite file is created,
    but a PostgreSQL schema must exist already (only ``serve`` and ``migrate`` create one),
    so a typo in its name never sets up an empty schema.
    """
    store: Store | None = None
    options = store_options(db_url)
    try:
        if reading or is_postgres_url(db_url):
            store = open_deployed_store(db_url, migrate=False, **options)  # refuses a missing file or schema
            if reading and store.schema_version() == 0:
                raise StoreError(
                    f"no parkgate database at {store_location(store)}: it has no parkgate tables "
                    "(`parkgate migrate` sets them up), or fix --db"
                )
            if not reading:
                store.migrate()
            return store
        return open_deployed_store(db_url, **options)
    except SchemaMissing as missing:  # its own message speaks to the library's callers
        raise click.ClickException(
            f"the PostgreSQL schema {missing.schema!r} does not exist in this database: create it with "
            f"`parkgate migrate` (PARKGATE_PG_SCHEMA={missing.schema}), or fix the name"
        ) from None
    except StoreError as error:
        if store is not None:
            store.close()
        raise click.ClickException(str(error)) from None


@contextmanager
def gateway_session(db_url: str, surface: str = "cli", *, reading: bool = False) -> Iterator[Gateway]:
    """A gateway on :func:`open_store`'s store with the demo workflows; an expected error
    in the body becomes one line, and each expiry logs its JSON line on stderr."""
    gateway = Gateway(store=open_store(db_url, reading=reading), workflows=WORKFLOWS.values(), surface=surface)
    try:
        with logging_to_stderr():
            yield gateway
    except ParkgateError as error:
        raise click.ClickException(str(error)) from None
    finally:
        gateway.close()
