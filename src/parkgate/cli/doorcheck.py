"""``parkgate doorcheck``: four non-answers then the exit word to a fresh demo ask, in
process or against a live gateway through :class:`~parkgate.client.Client`."""

from __future__ import annotations

import contextlib
import sys
import tempfile
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import click

from parkgate.cli.stores import gateway_session
from parkgate.client import Client, ErrorResponse, UnexpectedResponse, Unreachable
from parkgate.core.display import json_line, visible_text
from parkgate.core.door import DOOR_EXIT, door_verdict
from parkgate.core.kinds import ReplyKind
from parkgate.errors import AskAlreadyOpen, InputError, ParkgateError

#: The four non-answers the door check sends before its exit word.
DOORCHECK_INPUTS = ("pick the right diagram", "did it run?", "huh", "what")
DOORCHECK_EXIT = DOOR_EXIT
#: The outcome of a door check's ask it leaves open (a check that failed or was cut off):
#: cancelled by the check itself, so it never waits in a production gateway's list.
DOORCHECK_OUTCOME = "doorcheck"

#: The command's option for each argument of :class:`~parkgate.client.Client` its errors may name.
_CLIENT_OPTIONS = {"base_url": "--url", "token": "--token"}

#: One door-check line: the input sent and the reply's kind, parked flag and text.
Line = dict[str, Any]


def _doorcheck_lines(send: Callable[[str], dict[str, Any]]) -> Iterator[Line]:
    """Send each input in turn and yield the line for its reply."""
    for text in (*DOORCHECK_INPUTS, DOORCHECK_EXIT):
        reply = send(text)
        yield {"input": text, "kind": reply["kind"], "parked": reply["parked"], "text": reply["text"]}


def doorcheck_verdict(lines: list[Line]) -> str | None:
    """``None`` when the door works, else what is wrong with the replies: the judgement
    of :func:`~parkgate.core.door.door_verdict`, and the exit's reply is ``cancelled``."""
    kinds = [line["kind"] for line in lines]
    if any(kind not in {known.value for known in ReplyKind} for kind in kinds):
        return f"a reply has no known kind: {kinds}"
    problem = door_verdict(lines, misses=len(DOORCHECK_INPUTS))
    if problem is None and kinds[-1] != ReplyKind.CANCELLED.value:
        return f"'{DOORCHECK_EXIT}' did not leave: last reply {kinds[-1]}, parked={lines[-1]['parked']}"
    return problem


@click.command()
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
        lines = _doorcheck_in_process(db_url, conversation_id)
    for line in lines:
        click.echo(json_line(line))
    problem = doorcheck_verdict(lines)
    if problem:
        click.echo(f"doorcheck FAILED: {problem}", err=True)
        sys.exit(1)
    click.echo("doorcheck passed: the reply escalated and the exit left the conversation unparked", err=True)


def _doorcheck_in_process(db_url: str | None, conversation_id: str) -> list[Line]:
    """The door check on a library gateway: ``db_url``'s store, or a temporary SQLite file."""
    with tempfile.TemporaryDirectory() as folder, gateway_session(db_url or f"sqlite:///{folder}/d.db") as gateway:
        try:
            started = gateway.start(conversation_id, "uml")
        except AskAlreadyOpen as busy:  # the transaction rolled back: nothing changed
            raise _busy(conversation_id, busy.ask_id) from None
        try:
            return list(_doorcheck_lines(lambda text: gateway.handle(conversation_id, text).to_dict()))
        finally:
            gateway.cancel(started.ask_id or "", outcome=DOORCHECK_OUTCOME)  # one left open; a closed one stays


def _busy(conversation_id: str, ask_id: str | None) -> click.ClickException:
    """The error for a conversation that already has an open ask: the check needs a fresh one."""
    return click.ClickException(
        f"conversation {conversation_id!r} is busy: it already has an open ask ({ask_id or 'unknown id'}), "
        "and the door check needs a fresh one; pick another --conversation, or leave it out "
        "to check in a new conversation"
    )


def _client(base: str, token: str | None) -> Client:
    """The client for ``--url``; an argument it refuses is named by its option."""
    try:
        return Client(base, token, timeout=10)
    except InputError as error:  # it names its argument (never the token's value)
        argument, _, rest = str(error).partition(" ")
        raise click.ClickException(f"{_CLIENT_OPTIONS.get(argument, argument)} {rest}") from None


def _doorcheck_http(base: str, token: str | None, conversation_id: str) -> list[Line]:
    """The door check against a live gateway, through :class:`~parkgate.client.Client`;
    every way it can fail is one ``Error:`` line."""
    client = _client(base, token)
    step = "to start the demo workflow"
    try:
        with client:
            try:
                started = client.start(conversation_id, "uml")
            except AskAlreadyOpen as busy:  # the transaction rolled back: nothing changed
                raise _busy(conversation_id, busy.ask_id) from None

            def send(text: str) -> dict[str, Any]:
                """Send one message; a success without a reply kind is one error line."""
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

            try:
                lines = list(_doorcheck_lines(send))
            finally:
                _clean_up(client, started.ask_id)
            return lines
    except Unreachable as error:
        raise click.ClickException(f"the gateway at {base} did not answer ({error})") from None
    except ParkgateError as error:
        raise click.ClickException(_refused(base, step, error)) from None


def _clean_up(client: Client, ask_id: str | None) -> None:
    """Cancel the check's ask if it is still open (outcome :data:`DOORCHECK_OUTCOME`), so a
    failed check leaves nothing parked; a token without the ``operate`` scope cannot, and
    the ask then closes at its TTL."""
    if ask_id is None:
        return
    with contextlib.suppress(ParkgateError):
        if client.get(ask_id).is_open:
            client.cancel(ask_id, outcome=DOORCHECK_OUTCOME)


def _refused(base: str, what: str, error: Exception) -> str:
    """The line for an error response: the server's status, code and reason."""
    response = error if isinstance(error, ErrorResponse) else error.__cause__
    if not isinstance(response, ErrorResponse):  # refused by the client before it sent anything
        return visible_text(f"cannot send {what} to the gateway at {base}: {error}")
    reason = f"{response.code}: {response.detail}" if response.code else response.detail
    refused = f"the gateway at {base} refused {what} (HTTP {response.status}, {reason})"
    return visible_text(refused.replace("\n", " "))
