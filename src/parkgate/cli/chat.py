"""``parkgate chat``: the demo workflow in a terminal, one line a message."""

from __future__ import annotations

import sys
import uuid

import click
from rich.console import Console
from rich.markup import escape
from rich.text import Text

from parkgate.cli.stores import db_option, gateway_session
from parkgate.core import phrases
from parkgate.core.display import format_hours, visible_text
from parkgate.core.kinds import ReplyKind
from parkgate.core.model import Reply
from parkgate.core.phrases import CHAT_REFUSED, CHAT_STILL_PARKED
from parkgate.errors import AskAlreadyOpen, InputError
from parkgate.gateway import Gateway
from parkgate.gateway.checks import check_sender

#: chat's own word for running the demo again; it never reaches the open ask as a miss.
CHAT_RESTART = "/start"

#: The colour each reply kind's tag is printed in; any other kind is cyan.
_KIND_STYLES = {
    ReplyKind.RETRY: "yellow",
    ReplyKind.ESCALATED: "bold red",
    ReplyKind.CANCELLED: "magenta",
    ReplyKind.SELECTED: "green",
    ReplyKind.ANSWERED: "green",
    ReplyKind.NOT_YOURS: "red",
    ReplyKind.VOTED: "blue",
}


def _print_reply(out: Console, reply: Reply) -> None:
    """The reply's kind as a coloured tag, then its text with every character visible."""
    style = _KIND_STYLES.get(reply.kind, "cyan")
    out.print(f"[{style}]\\[{reply.kind.value}][/{style}]", highlight=False)
    out.print(Text(visible_text(reply.text)), highlight=False)


def _start_demo(out: Console, gateway: Gateway, conversation_id: str) -> None:
    """Start the demo; with a question open, say how to leave it instead. Any other error
    (a conversation id no message could use, a store out of reach) ends chat with one line."""
    try:
        reply = gateway.start(conversation_id, "uml")
    except AskAlreadyOpen:
        out.print(f"[red]{escape(CHAT_STILL_PARKED.format(restart=CHAT_RESTART))}[/red]")
        return
    _print_reply(out, reply)


def _answer(out: Console, gateway: Gateway, conversation_id: str, line: bytes, sender: str | None) -> None:
    """Hand one typed line (from ``sender``) to the gateway and print what comes back.

    A line the gateway passes on goes to the stand-in model (after the expiry notice,
    when the line found the open ask expired, with that ask's own TTL).
    """
    try:
        reply = gateway.handle(conversation_id, line, sender=sender)
    except InputError as error:
        out.print(Text(visible_text(CHAT_REFUSED.format(error=error)), style="red"))
        return
    if reply.kind is ReplyKind.PASS:
        if reply.expired_ask_id:
            ttl = gateway.get(reply.expired_ask_id).ttl_seconds
            out.print(phrases.EXPIRED_NOTICE.format(hours=format_hours(ttl)), markup=False)
        text = line.decode("utf-8")
        out.print(Text(phrases.STAND_IN_MODEL.format(text=visible_text(text))), highlight=False)
        return
    _print_reply(out, reply)
    if not reply.parked:  # the demo finished, or was dropped: say how to run it again
        out.print(Text(phrases.CHAT_AGAIN.format(restart=CHAT_RESTART), style="dim"), highlight=False)


def _sender_option(context: click.Context, parameter: click.Parameter, value: str | None) -> str | None:
    """``--as``, checked as every sender is (refused before anything is read or written)."""
    try:
        return check_sender(value)
    except InputError as error:
        raise click.BadParameter(str(error)) from None


@click.command()
@db_option
@click.option("--conversation", default=None, help="Conversation id (default: a new one).")
@click.option(
    "--as",
    "sender",
    default=None,
    callback=_sender_option,
    help="Who is typing (a user id, an email): every message is sent from this sender.",
)
def chat(db_url: str, conversation: str | None, sender: str | None) -> None:
    """Talk to the demo workflow (which UML diagram? -> describe it -> PlantUML).

    Replies to a parked ask never reach the model; anything else goes to a stand-in
    model that says it is one. Type /start to run the demo again (while a question is
    open, /start says how to leave it first); Ctrl-D to leave. With --as NAME every
    line is NAME's message: on an ask for other responders it is ``not_yours``, and on
    a quorum ask a selection is NAME's vote.
    """
    out = Console(highlight=False)
    conversation_id = conversation or f"chat-{uuid.uuid4().hex[:8]}"
    stream = sys.stdin.buffer
    with gateway_session(db_url) as gateway:
        _start_demo(out, gateway, conversation_id)
        while True:
            if sys.stdin.isatty():
                out.print("[bold]>[/bold] ", end="")
            raw = stream.readline()
            if not raw:
                break
            line = raw.rstrip(b"\r\n")
            if line.strip() == CHAT_RESTART.encode():
                _start_demo(out, gateway, conversation_id)
            else:
                _answer(out, gateway, conversation_id, line, sender)
