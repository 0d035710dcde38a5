"""``parkgate asks``: the clock check, a read-only listing of the open asks."""

from __future__ import annotations

import re
import sys
from datetime import UTC, datetime, timedelta

import click
from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from parkgate.cli.names import directory, people, person
from parkgate.cli.stores import db_option, gateway_session, shown_url
from parkgate.core.directory import Directory
from parkgate.core.display import json_line, visible_id, visible_text
from parkgate.core.model import Ask
from parkgate.gateway import ask_to_dict

# Matched against the stripped text: a trailing ``\s*`` after ``\s*([smhd]?)`` would
# backtrack across a long run of spaces (quadratic in its length).
_DURATION = re.compile(r"(\d+(?:\.\d+)?)\s*([smhd]?)")
_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "": 3600}

#: The most of a question ``asks`` shows (its first line); the rest is cut with an ellipsis.
ASKS_QUESTION_CHARS = 200

#: How late a due read may be before ``asks`` calls it a fault: a working deliverer
#: reads every due time within seconds and passes at least every 15 s.
LATE_DUE_READ = timedelta(minutes=1)


def parse_duration(text: str) -> timedelta:
    """``90s``, ``30m``, ``6h``, ``2d``, or a bare number of hours."""
    found = _DURATION.fullmatch(text.strip())
    if not found:
        raise click.BadParameter(f"{text!r} is not a duration like 30m, 6h or 2d")
    try:
        return timedelta(seconds=float(found.group(1)) * _UNIT_SECONDS[found.group(2)])
    except OverflowError:
        raise click.BadParameter(f"{text!r} is not a duration like 30m, 6h or 2d (far too long)") from None


@click.command()
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

    Reads without closing anything. An ask past its TTL that nothing waits on is
    listed as such and is no fault: it closes as ``expired`` on its next read. The exit
    status is 1 only for a real fault: an ask something waits on (a callback, a watcher,
    a channel post) whose due read is more than a minute late, which happens only when
    no deliverer runs on the database or keeps up. --older-than narrows the listing,
    never the check. Asks with responders are listed again below, with who may answer,
    how many must agree and each responder's current vote: people by their display names
    where PARKGATE_DIRECTORY names them (--json keeps ids).
    """
    minimum = parse_duration(older_than) if older_than else None
    names = Directory() if as_json else directory()
    with gateway_session(db_url, reading=True) as gateway:
        now = gateway.clock.now()
        everything = gateway.audit()
        found = [ask for ask in everything if minimum is None or now - ask.asked_at >= minimum]
        lapsed = [ask for ask in everything if ask.is_expired(now)]
        late = [ask for ask in lapsed if due_read_late(ask, now)]
        if as_json:
            for ask in found:
                click.echo(
                    json_line(
                        {**ask_to_dict(ask, now), "overdue": ask.is_expired(now), "late": due_read_late(ask, now)}
                    )
                )
        else:
            console = Console()
            console.print(_asks_table(found, now, shown_url(db_url)))
            if any(ask.responders for ask in found):
                console.print(_who_table(found, names))
            shown = f"{len(found)} open" if minimum is None else f"{len(found)} of {len(everything)} open listed"
            console.print(f"{shown}, {len(lapsed)} past their TTL (each closes on its next read)")
            if late:
                console.print(
                    Text(
                        f"{len(late)} waited on and not closed: their due read is over "
                        f"{LATE_DUE_READ.total_seconds():.0f} s late. Is a deliverer running on this database "
                        "(parkgate serve or parkgate deliver)?",
                        style="red",
                    )
                )
    if late:
        sys.exit(1)


def due_read_late(ask: Ask, now: datetime) -> bool:
    """Is ``ask`` a fault of the clock: something waits on it and its due read, which
    should have closed it at its TTL, is more than :data:`LATE_DUE_READ` late?"""
    return ask.watched and ask.is_open and now - ask.due_at > LATE_DUE_READ


def _state(ask: Ask, now: datetime) -> Text:
    """``open``; ``past TTL`` (closes on its next read); ``late`` (its due read is late)."""
    if due_read_late(ask, now):
        return Text("late", style="bold red")
    return Text("past TTL", style="yellow") if ask.is_expired(now) else Text("open")


def _where_asked(ask: Ask) -> Text:
    """The conversation in bold, its phase, and the question's first line below them."""
    question = ask.prompt.split("\n", 1)[0]
    if len(question) > ASKS_QUESTION_CHARS or "\n" in ask.prompt:
        question = question[: ASKS_QUESTION_CHARS - 1] + "\u2026"
    where_asked = Text(visible_id(ask.conversation_id), style="bold")
    if ask.phase:
        where_asked.append(f" ({visible_id(ask.phase)})")
    where_asked.append("\n" + visible_text(question))
    return where_asked


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
        table.add_row(
            Text(visible_id(ask.id[:12])),
            ask.asked_at.astimezone(UTC).strftime("%Y-%m-%d %H:%M"),
            f"{(now - ask.asked_at).total_seconds() / 3600:.2f}",
            str(ask.mismatches),
            _state(ask, now),
            _where_asked(ask),
        )
    return table


def _who_table(found: list[Ask], names: Directory) -> Table:
    """The listed asks that have responders: who may answer, how many must agree, and each
    responder's current vote (``sender: number. label``), people by their display names
    in ``names`` where it has one, the names and votes folding."""
    table = Table(title="who may answer", box=box.SIMPLE_HEAD, pad_edge=False, collapse_padding=True)
    table.add_column("ask", no_wrap=True)
    table.add_column("responders", overflow="fold", ratio=1)
    table.add_column("quorum", justify="right", no_wrap=True)
    table.add_column("votes", overflow="fold", ratio=1)
    for ask in found:
        if not ask.responders:
            continue
        votes = "\n".join(f"{person(names, v.sender)}: {v.option_index}. {visible_text(v.answer)}" for v in ask.votes)
        table.add_row(
            Text(visible_id(ask.id[:12])),
            Text(people(names, ask.responders)),
            f"{ask.quorum} of {len(ask.responders)}",
            Text(votes) if votes else Text("none yet", style="dim"),
        )
    return table
