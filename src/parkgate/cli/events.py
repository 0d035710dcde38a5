"""``parkgate events ASK_ID`` (an ask's timeline as a table) and ``parkgate events
--follow`` (each event as it is written), on a database as ``parkgate show`` reads it
(docs/events.md).

Reading a timeline is a read of the ask: one past its TTL closes as expired first. A
follower reads the log after the latest event (or ``--after``), woken by the database's
changes and at least every :data:`FOLLOW_POLL_SECONDS`; Ctrl-C ends it with exit 0.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Mapping
from datetime import UTC
from typing import Any

import click
from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from parkgate.cli.names import directory, people, person
from parkgate.cli.operate import resolve
from parkgate.cli.stores import db_option, gateway_session
from parkgate.core.directory import Directory
from parkgate.core.display import json_line, visible_id, visible_text
from parkgate.core.events import EventKind, LoggedEvent

#: How often a follower reads the log when nothing said it changed, in seconds.
FOLLOW_POLL_SECONDS = 0.5
#: The most events a follower reads at once.
FOLLOW_PAGE = 100


def _for(names: Directory, data: Mapping[str, Any]) -> str:
    responders = list(data.get("responders") or [])
    if not responders:
        return "for anyone"
    return f"for {people(names, responders)} ({data.get('quorum', 1)} of {len(responders)} must agree)"


def _parked(names: Directory, data: Mapping[str, Any]) -> str:
    parts = [_for(names, data), f"TTL {data.get('ttl_seconds')} s"]
    if data.get("channel"):
        parts.append(f"posted to {data['channel']}")
    return ", ".join(parts)


def _touched(names: Directory, data: Mapping[str, Any]) -> str:
    kind = str(data.get("kind"))
    return f"{kind}: {data['text']}" if data.get("text") is not None else kind


def _closed(names: Directory, data: Mapping[str, Any]) -> str:
    said = f"{data.get('status')} ({data.get('outcome')})" if data.get("outcome") else str(data.get("status"))
    if data.get("answer") is not None:
        said += f": {data['answer']}"
    return said + (f", because {data['reason']}" if data.get("reason") else "")


def _delivered(names: Directory, data: Mapping[str, Any]) -> str:
    status = f"HTTP {data['status']}" if data.get("status") is not None else "no answer"
    return (
        f"{data.get('target')} to {data.get('host')}: {data.get('result')} "
        f"({status}, {data.get('latency_ms')} ms, attempt {data.get('attempt')})"
    )


#: What each type's ``data`` says, in words (a type not named here: its JSON).
_SAYS: dict[EventKind, Callable[[Directory, Mapping[str, Any]], str]] = {
    EventKind.PARKED: _parked,
    EventKind.TOUCHED: _touched,
    EventKind.REFUSED: lambda names, data: f"refused: {data.get('kind')}",
    EventKind.VOTED: lambda names, data: (
        f"voted {data.get('answer')} ({data.get('votes')} of {data.get('quorum')} needed)"
    ),
    EventKind.REMINDED: lambda names, data: f"reminder {data.get('number')} to {people(names, data.get('to') or [])}",
    EventKind.ESCALATED: lambda names, data: f"escalated to {people(names, data.get('to') or [])}",
    EventKind.CLOSED: _closed,
    EventKind.DELIVERED: _delivered,
    EventKind.POSTED: lambda names, data: f"{data.get('channel')} {data.get('job')}: {data.get('result')}",
    EventKind.LATE: lambda names, data: (
        f"came late on {data.get('surface')}: the ask closed {data.get('status')} at {data.get('closed_at')}"
    ),
}


def says(event: LoggedEvent, names: Directory) -> str:
    """What ``event`` records, in words (people by their display names)."""
    describe = _SAYS.get(event.type)
    try:
        return describe(names, event.data) if describe else json_line(dict(event.data))
    except (TypeError, ValueError, KeyError):  # data of an unexpected shape: shown as it is
        return json_line(dict(event.data))


def _sender(event: LoggedEvent, names: Directory) -> Text:
    return Text(person(names, event.sender)) if event.sender else Text("clock", style="dim")


def _timeline(ask_id: str, found: list[LoggedEvent], names: Directory) -> Table:
    table = Table(title=Text(f"events of ask {visible_id(ask_id)}"), box=box.SIMPLE_HEAD, pad_edge=False)
    table.add_column("seq", justify="right", no_wrap=True)
    table.add_column("at (UTC)", no_wrap=True)
    table.add_column("type", no_wrap=True)
    table.add_column("sender", overflow="fold")
    table.add_column("what", overflow="fold", ratio=1)
    for event in found:
        table.add_row(
            str(event.seq),
            event.at.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S"),
            event.type.value,
            _sender(event, names),
            Text(visible_text(says(event, names))),
        )
    return table


def _line(event: LoggedEvent, names: Directory) -> Text:
    """One followed event on a line: its id, time, ask, seq, type, sender and what."""
    line = Text(f"{event.id:>6} {event.at.astimezone(UTC).strftime('%Y-%m-%d %H:%M:%S')} ")
    line.append(visible_id(event.ask_id[:12]), style="bold")
    line.append(f" #{event.seq} {event.type.value} ")
    line.append(_sender(event, names))
    line.append(": " + visible_text(says(event, names)))
    return line


@click.command()
@db_option
@click.argument("ask_id", required=False)
@click.option("--follow", is_flag=True, help="Print each event as it is written (Ctrl-C stops).")
@click.option("--after", type=click.IntRange(0), default=None, help="With --follow: start after this event id.")
@click.option("--json", "as_json", is_flag=True, help="One event's JSON a line instead of a table.")
def events(db_url: str, ask_id: str | None, follow: bool, after: int | None, as_json: bool) -> None:
    """Show an ask's timeline (ASK_ID whole, or its short id), or --follow the event log.

    With --follow, every ask's events are printed as they are written, after the latest
    one now (or --after ID, 0 for every event kept); with ASK_ID too, only that ask's.
    """
    names = directory()
    with gateway_session(db_url, reading=True) as gateway:
        if not follow:
            if ask_id is None:
                raise click.UsageError("give an ASK_ID, or --follow")
            ask = resolve(gateway, ask_id)
            found = gateway.events(ask.id)
            if as_json:
                for event in found:
                    click.echo(json_line(event.to_json()))
                return
            Console().print(_timeline(ask.id, found, names))
            return
        only = resolve(gateway, ask_id).id if ask_id is not None else None
        start = gateway.last_event_id() if after is None else after
        click.echo(f"following events after {start} (Ctrl-C stops)", err=True)
        show: Callable[[LoggedEvent], None]
        if as_json:
            show = lambda event: click.echo(json_line(event.to_json(with_id=True)))  # noqa: E731
        else:
            console = Console()
            show = lambda event: console.print(_line(event, names))  # noqa: E731
        changed = threading.Event()
        stop_listening = gateway.signal.listen(lambda *_: changed.set())
        try:
            while True:
                changed.clear()
                page = gateway.events_after(start, FOLLOW_PAGE)
                for event in page:
                    start = event.id
                    if only is None or event.ask_id == only:
                        show(event)
                sys.stdout.flush()
                if len(page) < FOLLOW_PAGE:
                    changed.wait(FOLLOW_POLL_SECONDS)
        except KeyboardInterrupt:
            click.echo(f"stopped after event {start}", err=True)
        finally:
            stop_listening()
