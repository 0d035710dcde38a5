"""``parkgate audit``: the clock check and the door check against a stack that is not parkgate.

``audit clock`` reads a LangGraph checkpointer's tables (``--langgraph``) or a table of
your own (``--table``) read-only and lists what is parked, oldest first; ``audit door``
(:mod:`~parkgate.cli.audit_door`) sends the write-up's five replies to a chat endpoint.
"""

from __future__ import annotations

import sys
from collections.abc import Callable

import click
from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from parkgate.audit.clock import ClockReport, Parked
from parkgate.audit.readonly import DEFAULT_MAX_ROWS, DEFAULT_TIMEOUT_SECONDS, Bounds
from parkgate.cli.asks import parse_duration
from parkgate.cli.audit_door import door
from parkgate.cli.stores import shown_url
from parkgate.clock import SystemClock
from parkgate.core.display import json_line, visible_text
from parkgate.errors import ParkgateError


@click.group()
def audit() -> None:
    """Run the clock and door checks against your own stack (LangGraph, a table, a chat endpoint)."""


@audit.command()
@click.option(
    "--langgraph", "langgraph_url", default=None, help="A LangGraph checkpointer: sqlite:///file.db or postgresql://..."
)
@click.option(
    "--table", default=None, help="A table of your own that holds the parked questions (schema.table allowed)."
)
@click.option("--asked-at", "asked_at", default=None, help="With --table: the column saying when a row was asked.")
@click.option(
    "--answered-at", "answered_at", default=None, help="With --table: the column that is NULL while a row is open."
)
@click.option(
    "--open-where", "open_where", default=None, help="With --table: a SQL condition for the open rows, run as written."
)
@click.option("--show", multiple=True, help="With --table: a column to show (repeat it; default: every column).")
@click.option("--db", "db_url", default=None, help="With --table: the database, sqlite:///file.db or postgresql://...")
@click.option("--older-than", "older_than", default=None, help="The bound (30m, 6h, 2d): exit 1 when any row is older.")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per row instead of a table.")
@click.option(
    "--timeout",
    type=click.FloatRange(min=0, min_open=True),
    default=DEFAULT_TIMEOUT_SECONDS,
    show_default=True,
    help="Seconds all the queries together may take; past it the read stops (exit 1).",
)
@click.option(
    "--max-rows",
    "max_rows",
    type=click.IntRange(min=1),
    default=DEFAULT_MAX_ROWS,
    show_default=True,
    help="The most rows one query may return; one more stops the read (exit 1).",
)
def clock(
    langgraph_url: str | None,
    table: str | None,
    asked_at: str | None,
    answered_at: str | None,
    open_where: str | None,
    show: tuple[str, ...],
    db_url: str | None,
    older_than: str | None,
    as_json: bool,
    timeout: float,
    max_rows: int,
) -> None:
    """The clock check: which parked rows are open, and for how long, oldest first.

    Reads without writing anything, and without building anything from what it reads
    (LangGraph's values are decoded as plain data). The read is bounded: --timeout
    seconds in all (default 30) and --max-rows rows a query (default 10000). The summary
    says how many rows are older than --older-than and how old the oldest is; the exit
    status is 1 when any is, or when the read fails or passes a bound.
    """
    bound = parse_duration(older_than) if older_than else None
    bounds = Bounds(timeout=timeout, max_rows=max_rows)
    read, source = _reader(langgraph_url, table, asked_at, answered_at, open_where, show, db_url, bounds)
    now = SystemClock().now()
    try:
        report = ClockReport(source, now, bound, read())
    except ParkgateError as error:
        raise click.ClickException(visible_text(str(error))) from None
    if as_json:
        for row in report.parked:
            click.echo(json_line(report.to_dict(row)))
        click.echo(report.summary(), err=True)
    else:
        console = Console()
        console.print(_clock_table(report))
        console.print(Text(visible_text(report.summary())))
    if report.overdue:
        sys.exit(1)


def _reader(
    langgraph_url: str | None,
    table: str | None,
    asked_at: str | None,
    answered_at: str | None,
    open_where: str | None,
    show: tuple[str, ...],
    db_url: str | None,
    bounds: Bounds,
) -> tuple[Callable[[], list[Parked]], str]:
    """What ``clock`` reads, and the name of the source it prints; bad combinations are usage errors."""
    if (langgraph_url is None) == (table is None):
        raise click.UsageError("give one of --langgraph URL or --table NAME")
    if langgraph_url is not None:
        if any((asked_at, answered_at, open_where, show, db_url)):
            raise click.UsageError("--asked-at, --answered-at, --open-where, --show and --db go with --table")
        from parkgate.audit.langgraph import parked_threads

        return (lambda: parked_threads(langgraph_url, bounds)), shown_url(langgraph_url)
    if not asked_at or not db_url:
        raise click.UsageError("--table needs --asked-at COLUMN and --db URL")
    if (answered_at is None) == (open_where is None):
        raise click.UsageError("--table needs one of --answered-at COLUMN or --open-where SQL")
    from parkgate.audit.table import parked_rows

    def read() -> list[Parked]:
        return parked_rows(
            db_url, str(table), asked_at, answered_at=answered_at, open_where=open_where, show=show, bounds=bounds
        )

    return read, f"{table} in {shown_url(db_url)}"


def _clock_table(report: ClockReport) -> Table:
    """The parked rows as a table: their fields, when asked, hours open, past the bound or not."""
    table = Table(title=Text(f"parked in {visible_text(report.source)}"), box=box.SIMPLE_HEAD, pad_edge=False)
    names = list(dict.fromkeys(name for row in report.parked for name in row.fields))
    for name in names:
        table.add_column(Text(visible_text(name)), overflow="fold")
    table.add_column("asked at (UTC)", no_wrap=True)
    table.add_column("hours", justify="right", no_wrap=True)
    table.add_column("state", no_wrap=True)
    for row in report.parked:
        table.add_row(
            *(Text(visible_text(row.fields.get(name, ""))) for name in names),
            row.asked_at.strftime("%Y-%m-%d %H:%M"),
            f"{report.hours_open(row):.2f}",
            Text("too old", style="red") if report.too_old(row) else "open",
        )
    return table


audit.add_command(door)
