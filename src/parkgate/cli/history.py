"""``parkgate history`` and ``parkgate stats``: the operator's view of every ask on a
database, as :meth:`Gateway.history <parkgate.Gateway.history>` lists them and
:meth:`Gateway.stats <parkgate.Gateway.stats>` counts them (docs/history.md).

Both are reads: an open ask past its TTL that they bear on is closed as expired (at its
due time), as every read closes it, and its expiry line is written to stderr.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any

import click
from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from parkgate.cli.asks import ASKS_QUESTION_CHARS, parse_duration
from parkgate.cli.stores import db_option, gateway_session
from parkgate.core.display import json_line, visible_id, visible_text
from parkgate.core.history import DEFAULT_HISTORY_PAGE, MAX_HISTORY_PAGE, HistoryQuery, HistoryStatus, listing_of
from parkgate.core.model import Ask
from parkgate.core.stats import AGE_BUCKETS
from parkgate.gateway import ask_to_dict


def parse_moment(text: str, now: datetime) -> datetime:
    """``2026-05-01``, ``2026-05-01T09:00`` (UTC unless it names a zone) or a duration
    back from now (``7d``, ``12h``)."""
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        return now - parse_duration(text)
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def _when(moment: datetime | None) -> str:
    return "" if moment is None else moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M")


def _seconds(value: float | None) -> str:
    """A duration as a person reads it: ``42s``, ``3.5m``, ``2.1h``, ``1.2d``."""
    if value is None:
        return ""
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if value >= size:
            return f"{value / size:.1f}{unit}"
    return f"{value:.0f}s"


def _answer_time(ask: Ask) -> str:
    if ask.answered_at is None:
        return ""
    return _seconds((ask.answered_at - ask.asked_at).total_seconds())


def _who(ask: Ask) -> Text:
    """Who answered (or cancelled), else who it was for."""
    if ask.answered_by:
        return Text(visible_id(ask.answered_by))
    if ask.closed_by:
        return Text(f"{visible_id(ask.closed_by)} (cancel)")
    return Text(", ".join(visible_id(name) for name in ask.responders), style="dim")


def _history_table(asks: list[Ask], status: HistoryStatus) -> Table:
    table = Table(title=f"{status.value} asks", box=box.SIMPLE_HEAD, pad_edge=False, collapse_padding=True)
    columns: tuple[tuple[str, dict[str, Any]], ...] = (
        ("ask", {"no_wrap": True}),
        ("status", {"no_wrap": True}),
        ("asked (UTC)", {"no_wrap": True}),
        ("closed (UTC)", {"no_wrap": True}),
        ("to answer", {"justify": "right", "no_wrap": True}),
        ("prompt", {"overflow": "fold", "ratio": 1}),
        ("who", {"overflow": "fold"}),
    )
    for name, options in columns:
        table.add_column(name, **options)
    for ask in asks:
        question = ask.prompt.split("\n", 1)[0]
        if len(question) > ASKS_QUESTION_CHARS or "\n" in ask.prompt:
            question = question[: ASKS_QUESTION_CHARS - 1] + "\u2026"
        table.add_row(
            Text(visible_id(ask.id[:12])),
            f"{ask.status.value} ({visible_text(ask.outcome)})" if ask.outcome else ask.status.value,
            _when(ask.asked_at),
            _when(ask.closed_at),
            _answer_time(ask),
            Text(visible_text(question)),
            _who(ask),
        )
    return table


@click.command()
@db_option
@click.option(
    "--status",
    type=click.Choice([status.value for status in HistoryStatus]),
    default=HistoryStatus.CLOSED.value,
    show_default=True,
    help="Which asks: one status, closed (every closed one) or all.",
)
@click.option("--since", default=None, help="From this moment (2026-05-01, or 7d back); asked_at, closed_at if closed.")
@click.option("--until", default=None, help="Before this moment (the same forms).")
@click.option("--conversation", "conversation_id", default=None, help="Only this conversation's asks.")
@click.option(
    "--responder", default=None, help="Only asks this sender may answer, was escalated to, answered or voted on."
)
@click.option(
    "--channel",
    default=None,
    help="Only asks posted to this channel (its name) or channel target (name:where, as parked).",
)
@click.option("--outcome", default=None, help="Only asks closed with this outcome.")
@click.option("--owner", default=None, help="Only the asks this token name parked.")
@click.option("-q", "--search", "q", default=None, help="Only asks whose prompt holds this text (letter case aside).")
@click.option(
    "--limit",
    type=click.IntRange(1, MAX_HISTORY_PAGE),
    default=DEFAULT_HISTORY_PAGE,
    show_default=True,
    help="The most asks listed.",
)
@click.option("--json", "as_json", is_flag=True, help="One JSON object per line instead of a table.")
def history(
    db_url: str,
    status: str,
    since: str | None,
    until: str | None,
    conversation_id: str | None,
    responder: str | None,
    channel: str | None,
    outcome: str | None,
    owner: str | None,
    q: str | None,
    limit: int,
    as_json: bool,
) -> None:
    """List asks of any status, filtered: closed ones by default, the latest close first.

    Short ids are those `parkgate show` takes. A read: an open ask past its TTL is closed
    as expired (at its due time) and listed so.
    """
    with gateway_session(db_url, reading=True) as gateway:
        now = gateway.clock.now()
        query = HistoryQuery(
            status=status,
            since=None if since is None else parse_moment(since, now),
            until=None if until is None else parse_moment(until, now),
            conversation_id=conversation_id,
            responder=responder,
            channel=channel,
            outcome=outcome,
            owner=owner,
            q=q,
            limit=limit,
        )
        page = gateway.history(query)
    if as_json:
        for ask in page.asks:
            click.echo(json_line(ask_to_dict(ask)))
        return
    console = Console()
    console.print(_history_table(page.asks, listing_of(query)))
    more = " (more: narrow the filters or raise --limit)" if page.next_cursor is not None else ""
    console.print(f"{len(page.asks)} listed{more}")


_FIGURE_ROWS: tuple[tuple[str, Callable[[Mapping[str, Any]], str]], ...] = (
    ("opened", lambda f: str(f["opened"])),
    ("answered", lambda f: str(f["answered"])),
    ("expired", lambda f: str(f["expired"])),
    ("cancelled", lambda f: str(f["cancelled"])),
    ("answer p50", lambda f: _seconds(f["time_to_answer"]["p50"])),
    ("answer p90", lambda f: _seconds(f["time_to_answer"]["p90"])),
    ("answer p99", lambda f: _seconds(f["time_to_answer"]["p99"])),
    ("reminders", lambda f: str(f["reminders"])),
    ("escalations", lambda f: str(f["escalations"])),
    ("misses/ask", lambda f: "" if f["misses_per_ask"] is None else f"{f['misses_per_ask']:.2f}"),
)


def _figures_table(title: str, rows: list[tuple[str, Mapping[str, Any]]]) -> Table:
    """One column per group (``all`` first), one row per figure, then the open asks by age."""
    table = Table(title=title, box=box.SIMPLE_HEAD, pad_edge=False, collapse_padding=True)
    table.add_column("figure", no_wrap=True, style="bold")
    for key, _ in rows:
        table.add_column(Text(visible_id(key)), justify="right", no_wrap=True)
    for name, show in _FIGURE_ROWS:
        table.add_row(name, *(show(figures) for _, figures in rows))
    for bucket, _ in AGE_BUCKETS:
        table.add_row(f"open {bucket}", *(str(figures["open_by_age"][bucket]) for _, figures in rows))
    return table


@click.command()
@db_option
@click.option("--since", default="7d", show_default=True, help="The window's start (2026-05-01, or 7d back).")
@click.option("--until", default=None, help="The window's end, exclusive (default: now).")
@click.option("--by", type=click.Choice(["day", "responder", "channel"]), default=None, help="Figures per group too.")
@click.option("--owner", default=None, help="Only the asks this token name parked.")
@click.option("--json", "as_json", is_flag=True, help="The figures' JSON object instead of tables.")
def stats(db_url: str, since: str, until: str | None, by: str | None, owner: str | None, as_json: bool) -> None:
    """The figures of a window: asks opened, answered, expired, cancelled; time to answer
    (p50, p90, p99); reminders, escalations, misses per ask; open asks by age.

    A read: open asks past their TTL are closed as expired first. docs/history.md defines each figure.
    """
    with gateway_session(db_url, reading=True) as gateway:
        now = gateway.clock.now()
        start = parse_moment(since, now)
        end = None if until is None else parse_moment(until, now)
        figures = gateway.stats(start, end, by, owner=owner)
    if as_json:
        click.echo(json_line(figures.to_dict()))
        return
    window = f"{_when(start)} to {_when(end) if end else 'now'} (UTC)"
    console = Console()
    console.print(_figures_table(f"asks {window}", [("all", figures.total)]))
    if figures.groups:
        console.print(_figures_table(f"by {by}", [(str(group["key"]), group) for group in figures.groups]))
    if figures.truncated:
        console.print(Text("more asks than the figures read: the oldest are left out", style="yellow"))


__all__ = ["history", "parse_moment", "stats"]
