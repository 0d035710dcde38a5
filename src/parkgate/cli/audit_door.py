"""``parkgate audit door``: the write-up's five replies to any chat endpoint, judged as
:func:`~parkgate.core.door.door_verdict` judges ``parkgate doorcheck``."""

from __future__ import annotations

import os
import sys
import uuid
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager

import click

from parkgate.audit.door import (
    DEFAULT_BODY,
    DEFAULT_DEADLINE_SECONDS,
    DEFAULT_MAX_BODY_BYTES,
    DEFAULT_PARKED_PATH,
    DEFAULT_REPLY_PATH,
    Send,
    audit_verdict,
    http_sender,
    load_function,
    python_sender,
    run_door,
)
from parkgate.core.display import json_line, visible_text
from parkgate.errors import ParkgateError


@click.command()
@click.option("--url", default=None, help="The chat endpoint to POST to; {conversation} in it is the conversation id.")
@click.option(
    "--python", "python_spec", default=None, help="module:function, an in-process handle(conversation, text)."
)
@click.option(
    "--parked-python", "parked_spec", default=None, help="With --python: module:function, is_parked(conversation)."
)
@click.option(
    "--body", default=DEFAULT_BODY, show_default=True, help="JSON body template holding {text} (and {conversation})."
)
@click.option(
    "--reply-path", default=DEFAULT_REPLY_PATH, show_default=True, help="Where the reply text is in the answer."
)
@click.option(
    "--parked-path", default=DEFAULT_PARKED_PATH, show_default=True, help="Where the parked flag is in the answer."
)
@click.option("--header", "headers", multiple=True, help="A request header, 'Name: value' (repeat it).")
@click.option(
    "--conversation", default=None, help="The conversation that holds the parked question (default: a new id)."
)
@click.option(
    "--deadline",
    type=click.FloatRange(min=0, min_open=True),
    default=DEFAULT_DEADLINE_SECONDS,
    show_default=True,
    help="With --url: seconds the whole check may take, every request and answer together.",
)
@click.option(
    "--max-body",
    "max_body",
    type=click.IntRange(min=1),
    default=DEFAULT_MAX_BODY_BYTES,
    show_default=True,
    help="With --url: the most bytes of one answer read; a longer one stops the check.",
)
def door(
    url: str | None,
    python_spec: str | None,
    parked_spec: str | None,
    body: str,
    reply_path: str,
    parked_path: str,
    headers: tuple[str, ...],
    conversation: str | None,
    deadline: float,
    max_body: int,
) -> None:
    """The door check: four non-answers, then 'cancel', to a parked conversation.

    Prints one JSON line per reply; exits 1 unless no reply is null or empty (a reply a
    caller would send to a model), the reply changes shape by the 3rd/4th non-answer,
    and the conversation ends unparked. Over --url the check is bounded: --deadline
    seconds in all (default 120), --max-body bytes an answer (default 1 MiB), JSON
    nested at most 100 deep; past any of them it stops with one error line (exit 1).
    """
    if (url is None) == (python_spec is None):
        raise click.UsageError("give one of --url URL or --python module:function")
    if parked_spec and not python_spec:
        raise click.UsageError("--parked-python goes with --python")
    conversation_id = conversation or f"audit-{uuid.uuid4().hex[:8]}"
    try:
        with _sender(
            url, python_spec, parked_spec, body, reply_path, parked_path, headers, conversation_id, deadline, max_body
        ) as send:
            lines = run_door(send)
    except ParkgateError as error:
        raise click.ClickException(visible_text(str(error))) from None
    for line in lines:
        click.echo(json_line(line))
    problem = audit_verdict(lines)
    if problem:
        click.echo(visible_text(f"door FAILED: {problem}"), err=True)
        sys.exit(1)
    click.echo("door passed: the reply changed shape and 'cancel' left the conversation unparked", err=True)


def _sender(
    url: str | None,
    python_spec: str | None,
    parked_spec: str | None,
    body: str,
    reply_path: str,
    parked_path: str,
    headers: tuple[str, ...],
    conversation_id: str,
    deadline: float,
    max_body: int,
) -> AbstractContextManager[Send]:
    """The HTTP or in-process sender the options name."""
    if python_spec is not None:
        if os.getcwd() not in sys.path:  # the installed script's path lacks it; uvicorn adds it too
            sys.path.insert(0, os.getcwd())
        handle = load_function(python_spec)
        is_parked = load_function(parked_spec) if parked_spec else None
        return python_sender(
            handle, conversation_id, is_parked=is_parked, reply_path=reply_path, parked_path=parked_path
        )
    return _reachable(
        http_sender(
            str(url),
            conversation_id,
            body=body,
            reply_path=reply_path,
            parked_path=parked_path,
            headers=_header_pairs(headers),
            deadline=deadline,
            max_body=max_body,
        ),
        str(url),
    )


def _header_pairs(headers: tuple[str, ...]) -> dict[str, str]:
    """``Name: value`` options as a mapping."""
    pairs: dict[str, str] = {}
    for header in headers:
        name, colon, value = header.partition(":")
        if not colon or not name.strip():
            raise click.BadParameter(f"{header!r} is not 'Name: value'", param_hint="--header")
        pairs[name.strip()] = value.strip()
    return pairs


@contextmanager
def _reachable(sender: AbstractContextManager[Send], url: str) -> Iterator[Send]:
    """``sender``, with a network failure as one ``Error:`` line naming the endpoint."""
    import httpx

    try:
        with sender as send:
            yield send
    except (httpx.HTTPError, httpx.InvalidURL) as error:
        raise click.ClickException(visible_text(f"the endpoint {url} did not answer ({error})")) from None
