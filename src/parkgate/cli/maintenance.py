"""``parkgate migrate`` (set up or upgrade a store's schema), ``parkgate prove`` (check
the two properties over every state of the machine) and ``parkgate prune`` (delete old
events of closed asks)."""

from __future__ import annotations

import sys

import click

from parkgate.cli.asks import parse_duration
from parkgate.cli.stores import db_option, gateway_session, shown_url, store_options
from parkgate.errors import ParkgateError
from parkgate.store import StoreError, deployed_schema, is_postgres_url, open_deployed_store


@click.command()
@db_option
def migrate(db_url: str) -> None:
    """Apply pending schema migrations and print the schema version.

    With PostgreSQL, the schema PARKGATE_PG_SCHEMA names is created if it does not exist.
    """
    try:
        store = open_deployed_store(db_url, **store_options(db_url))  # migrates: creates a new file or schema
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


@click.command()
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


@click.command()
@db_option
@click.option(
    "--events-older-than",
    "older_than",
    required=True,
    help="Delete the events older than this (90d, 12h, 30m) of asks that have closed.",
)
def prune(db_url: str, older_than: str) -> None:
    """Delete old events from the event log, and print how many went.

    Only closed asks' events go: an open ask's timeline is kept whole, however old.
    """
    age = parse_duration(older_than)
    if age.total_seconds() <= 0:
        raise click.BadParameter(f"{older_than!r} is not a duration above 0", param_hint="--events-older-than")
    with gateway_session(db_url) as gateway:
        cutoff = gateway.clock.now() - age
        deleted = gateway.prune_events(age)
    click.echo(
        f"deleted {deleted} event{'' if deleted == 1 else 's'} of closed asks written before "
        f"{cutoff:%Y-%m-%d %H:%M} UTC ({older_than} ago); open asks' events are kept"
    )
