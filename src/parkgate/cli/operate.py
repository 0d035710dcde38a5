"""``parkgate show ID`` and ``parkgate cancel ID``: an operator's look at one ask, and cancel.

``ID`` is an ask's whole id, or the start of any ask's id, open or closed, as
``parkgate asks`` and ``parkgate history`` print it (its first 12 characters, or any start
of at least :data:`MIN_PREFIX` characters). A start that several asks share is refused,
naming them: nothing is cancelled on a guess.
"""

from __future__ import annotations

import click
from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from parkgate.cli.names import directory, people, person
from parkgate.cli.stores import db_option, gateway_session
from parkgate.core.directory import Directory
from parkgate.core.display import json_line, visible_id, visible_text
from parkgate.core.kinds import RunOutcome
from parkgate.core.model import SENDERS, Ask
from parkgate.core.shape import declared
from parkgate.errors import UnknownAsk
from parkgate.gateway import Gateway, ask_to_dict

#: The shortest start of an id taken for an open ask's whole id.
MIN_PREFIX = 4
#: How many of the asks an ambiguous start matches the error names.
AMBIGUOUS_SHOWN = 5


def resolve(gateway: Gateway, given: str) -> Ask:
    """The ask ``given`` names: its whole id, else the one ask (open or closed) whose id starts with it.

    A read by whole id closes an ask past its TTL as ``expired``, as every read does.

    Raises:
        click.ClickException: No ask has that id and no open ask's id starts with it, or
            several do (they are named).
    """
    try:
        return gateway.get(given)
    except UnknownAsk:
        pass
    if len(given) < MIN_PREFIX:
        raise click.ClickException(f"no ask has the id {visible_id(given)!r} (give at least {MIN_PREFIX} characters)")
    found = gateway.asks_starting(given, AMBIGUOUS_SHOWN + 1)
    if not found:
        raise click.ClickException(f"no ask has the id {visible_id(given)!r}, and no ask's id starts with it")
    if len(found) > 1:
        named = ", ".join(f"{visible_id(ask.id)} ({ask.status.value})" for ask in found[:AMBIGUOUS_SHOWN])
        count = str(len(found)) if len(found) <= AMBIGUOUS_SHOWN else f"more than {AMBIGUOUS_SHOWN}"
        more = " and more" if len(found) > AMBIGUOUS_SHOWN else ""
        raise click.ClickException(
            f"{count} asks have ids starting {visible_id(given)!r} ({named}{more}): give more of the id"
        )
    return gateway.get(found[0].id)


@click.command()
@db_option
@click.argument("ask_id")
@click.option("--json", "as_json", is_flag=True, help="The ask's JSON object on one line instead of a table.")
def show(db_url: str, ask_id: str, as_json: bool) -> None:
    """Show one ask, open or closed: ASK_ID whole, or the start of its id as `parkgate asks` prints it.

    People (responders, votes, who answered or closed it) are shown by their display
    names where PARKGATE_DIRECTORY names them; --json keeps ids.
    """
    names = Directory() if as_json else directory()
    with gateway_session(db_url, reading=True) as gateway:
        ask = resolve(gateway, ask_id)
        shown = ask_to_dict(ask, gateway.clock.now() if ask.is_open else None)
    if as_json:
        click.echo(json_line(shown))
        return
    table = Table(title=Text(f"ask {visible_id(ask.id)}"), box=box.SIMPLE, show_header=False, pad_edge=False)
    table.add_column("field", no_wrap=True, style="bold")
    table.add_column("value", overflow="fold")
    for field, value in shown.items():
        if value is None or value == [] or field == "ask_id":
            continue
        table.add_row(field, Text(_people_in(ask, field, names) or visible_text(_as_text(value))))
    Console().print(table)


def _as_text(value: object) -> str:
    return value if isinstance(value, str) else json_line(value)


#: The ask's fields that list senders (its responders, the escalation's), found by their codec.
SENDER_LISTS = frozenset(item.name for item in declared(Ask) if item.spec.codec is SENDERS)


def _people_in(ask: Ask, field: str, names: Directory) -> str | None:
    """A field that names people, as ``show`` prints it (display names where ``names`` has
    them; a vote as ``who: number. label``); ``None`` for any other field."""
    if field in SENDER_LISTS:
        return people(names, getattr(ask, field))
    if field == "votes":
        return "\n".join(f"{person(names, v.sender)}: {v.option_index}. {visible_text(v.answer)}" for v in ask.votes)
    if field in ("answered_by", "closed_by"):
        sender = getattr(ask, field)
        return None if sender is None else person(names, sender)
    return None


@click.command()
@db_option
@click.argument("ask_id")
@click.option(
    "--outcome",
    default=RunOutcome.CANCELLED.value,
    show_default=True,
    help="Recorded on the ask and its run: why it was cancelled (abandoned, say).",
)
def cancel(db_url: str, ask_id: str, outcome: str) -> None:
    """Cancel an open ask as an operator: ASK_ID whole, or the start of its id as `parkgate asks` prints it.

    An ask already closed is left as it is (and said so); exit 0 either way.
    """
    with gateway_session(db_url) as gateway:
        ask = resolve(gateway, ask_id)
        if not ask.is_open:
            click.echo(f"ask {visible_id(ask.id)} was already {ask.status.value} ({visible_text(ask.outcome)})")
            return
        closed = gateway.cancel(ask.id, outcome=outcome)
    click.echo(f"cancelled ask {visible_id(closed.id)} in {visible_id(closed.conversation_id)} ({closed.outcome})")
