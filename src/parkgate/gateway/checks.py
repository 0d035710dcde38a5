"""Argument checks for the gateway's public calls: each refuses bad input with
:class:`~parkgate.errors.InputError`, naming the argument, before anything is read or written.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from datetime import timedelta
from typing import Any

from parkgate.clock import as_timedelta
from parkgate.core import stopping_point
from parkgate.core.expect import Expect, as_expect, describe, value_of
from parkgate.core.kinds import AskKind
from parkgate.core.stopping_point import StoppingPointError
from parkgate.errors import InputError
from parkgate.workflow import Workflow

MAX_MESSAGE_CHARS = 16_000
#: Skill output carries prose around its stopping point, so it may be longer than a reply.
MAX_SKILL_OUTPUT_CHARS = 256_000
MAX_ID_CHARS = 200
#: The most responders one ask may name.
MAX_RESPONDERS = 100
#: The most reminders one ask may have.
MAX_REMINDERS = 10
#: The longest an HTTP long-poll (``GET /v1/asks/{id}?wait=S``) holds one request, in
#: seconds: the server's cap, and the most :class:`parkgate.client.Client` asks for at a time.
MAX_WAIT_SECONDS = 60.0
#: The longest TTL. A TTL is stored as seconds in a double, which keeps every microsecond
#: (the expiry boundary is exact to one) only up to ~285 years; 100 years stays well inside.
MAX_TTL = timedelta(days=36_500)
#: Characters an id may not hold: the C0 controls, DEL and the C1 controls (U+0080-U+009F);
#: one regex scan instead of a per-character loop.
_CONTROL_CHAR = re.compile("[\x00-\x1f\x7f-\x9f]")


def check_id(value: object, what: str) -> str:
    """An id: a non-blank string of at most :data:`MAX_ID_CHARS`, no control characters."""
    # Most ids are short printable ASCII: that alone rules out control characters and
    # lone surrogates, so one pass of str methods replaces the regex and the encode.
    if type(value) is str and value.isascii() and value.isprintable() and len(value) <= MAX_ID_CHARS and value.strip():
        return value
    if not isinstance(value, str):
        raise InputError(f"{what} must be a string, not {type(value).__name__}")
    if not value.strip():
        raise InputError(f"{what} is empty")
    if len(value) > MAX_ID_CHARS:
        raise InputError(f"{what} is {len(value)} characters; the limit is {MAX_ID_CHARS}")
    if _CONTROL_CHAR.search(value):
        raise InputError(f"{what} contains a control character")
    _check_unicode(value, what)
    return value


def _check_unicode(value: str, what: str) -> None:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise InputError(f"{what} is not valid Unicode (it holds a lone surrogate)") from None


def check_inbound_text(text: object, *, limit: int = MAX_MESSAGE_CHARS, what: str = "message") -> str:
    """Text as it arrives from a person or a skill (a string, or UTF-8 bytes, decoded), or
    :class:`InputError` naming why it is not usable."""
    if isinstance(text, (bytes, bytearray)):
        try:
            text = bytes(text).decode("utf-8")
        except UnicodeDecodeError as error:
            raise InputError(f"{what} is not valid UTF-8 (byte {error.start})") from None
    if not isinstance(text, str):
        raise InputError(f"{what} must be text, not {type(text).__name__}")
    if "\x00" in text:
        raise InputError(f"{what} contains a NUL character")
    if len(text) > limit:
        raise InputError(f"{what} is {len(text)} characters; the limit is {limit}")
    _check_unicode(text, what)
    return text


def check_optional_id(value: object, what: str) -> str | None:
    """``None``, or an id as :func:`check_id` takes it."""
    return None if value is None else check_id(value, what)


def check_sender(value: object, what: str = "sender") -> str | None:
    """``None``, or who sent a message: an opaque id as :func:`check_id` takes it (a Slack
    user id, an email, a username: non-empty, at most 200 characters, no control characters)."""
    return None if value is None else check_id(value, what)


def check_responders(value: object, what: str = "responders") -> tuple[str, ...]:
    """An ask's responders (or ``what``, such as ``escalate_to``): ``None`` (returned as
    ``()``: anyone answers), or a non-empty list of distinct senders, each as
    :func:`check_sender` takes it."""
    if value is None:
        return ()
    if isinstance(value, (str, bytes)) or not isinstance(value, (list, tuple)):
        raise InputError(f"{what} must be a list of senders, not {type(value).__name__}")
    if not value:
        raise InputError(f"{what} is empty: leave it out for an ask anyone may answer")
    if len(value) > MAX_RESPONDERS:
        raise InputError(f"{what} names {len(value)} senders; the limit is {MAX_RESPONDERS}")
    names = tuple(check_id(item, f"{what} item {position}") for position, item in enumerate(value, start=1))
    if len(set(names)) != len(names):
        duplicate = next(name for name in names if names.count(name) > 1)
        raise InputError(f"{what} names {duplicate!r} twice")
    return names


def check_offsets(value: object, what: str) -> tuple[float, ...]:
    """Reminders' offsets (``what``): ``None`` (none, returned as ``()``), seconds, or a
    non-empty list of at most :data:`MAX_REMINDERS` distinct positive durations (returned
    as seconds, ascending)."""
    if value is None:
        return ()
    items = list(value) if isinstance(value, (list, tuple)) else [value]
    if not items:
        raise InputError(f"{what} is empty: leave it out for no reminder")
    if len(items) > MAX_REMINDERS:
        raise InputError(f"{what} lists {len(items)} reminders; the limit is {MAX_REMINDERS}")
    offsets = sorted(check_duration(item, what).total_seconds() for item in items)
    if len(set(offsets)) != len(offsets):
        raise InputError(f"{what} lists one offset twice")
    return tuple(offsets)


def check_schedule(given: Mapping[str, Any]) -> tuple[tuple[float, ...], float | None, tuple[str, ...]]:
    """The reminders, escalation and escalation's responders in ``given`` (a
    :class:`~parkgate.core.schedule.ScheduleFields`), checked (``escalate_to`` only with
    ``escalate_after``).

    Raises:
        InputError: One is not usable; the message names it.
    """
    remind_after = check_offsets(given.get("remind_after"), "remind_after")
    raw_escalate = given.get("escalate_after")
    escalate_after = None if raw_escalate is None else check_duration(raw_escalate, "escalate_after").total_seconds()
    escalate_to = check_responders(given.get("escalate_to"), "escalate_to")
    if escalate_to and escalate_after is None:
        raise InputError("escalate_to needs escalate_after: say when the escalation falls due")
    return remind_after, escalate_after, escalate_to


def check_before_ttl(offset: float, ttl: timedelta, what: str) -> None:
    """A reminder's or an escalation's offset falls due before the ask's TTL."""
    if offset >= ttl.total_seconds():
        raise InputError(
            f"{what} of {offset:g} s is not shorter than the ask's TTL of {ttl.total_seconds():g} s: "
            "it would never fire"
        )


def check_quorum(value: object, responders: tuple[str, ...]) -> int:
    """How many ``responders`` must agree: ``None`` is 1; a whole number from 1 to their
    count, given only with responders."""
    if value is None:
        return 1
    if isinstance(value, bool) or not isinstance(value, int):
        raise InputError(f"quorum must be a whole number, not {type(value).__name__}")
    if not responders:
        raise InputError("quorum needs responders: name who may vote")
    if value < 1:
        raise InputError(f"quorum must be at least 1, not {value}")
    if value > len(responders):
        raise InputError(f"quorum of {value} is more than the {len(responders)} responders")
    return value


def check_flag(value: object, what: str) -> bool:
    """A real ``bool``."""
    # A bool only: "no" or 1 is a caller's mistake, not a choice to replace an open ask.
    if not isinstance(value, bool):
        raise InputError(f"{what} must be True or False, not {type(value).__name__}")
    return value


def check_limit(limit: object) -> int | None:
    """``None``, or a whole number of at least 1 (not a bool)."""
    if limit is None:
        return None
    if isinstance(limit, bool) or not isinstance(limit, int):
        raise InputError(f"limit must be a positive whole number or None, not {type(limit).__name__}")
    if limit < 1:
        raise InputError(f"limit must be at least 1, not {limit}")
    return limit


def check_duration(value: object, what: str) -> timedelta:
    """A positive duration of at most :data:`MAX_TTL`: a ``timedelta`` or a number of seconds."""
    try:
        duration = as_timedelta(value, what)  # type: ignore[arg-type]  # it checks the type itself
    except ValueError as error:
        raise InputError(str(error)) from None
    if duration > MAX_TTL:
        raise InputError(f"{what} of {duration} is longer than the limit, {MAX_TTL.days} days")
    return duration


def check_string(value: object, what: str, *, limit: int = MAX_MESSAGE_CHARS) -> str:
    """A string argument that is stored as given (not bytes), that :func:`check_inbound_text` accepts."""
    # Text only: bytes are not decoded here, since what is stored must be what was given.
    if not isinstance(value, str):
        raise InputError(f"{what} must be a string, not {type(value).__name__}")
    return check_inbound_text(value, limit=limit, what=what)


def wait_seconds(timeout: object) -> float:
    """How long a ``wait(ask_id, timeout)`` may wait, or :class:`InputError`.

    ``timeout`` is a :class:`~datetime.timedelta` or a finite number of seconds; one of
    0 or less means "read once, do not wait".
    """
    if isinstance(timeout, timedelta):
        seconds = timeout.total_seconds()
    elif isinstance(timeout, (int, float)) and not isinstance(timeout, bool):
        seconds = float(timeout)
    else:
        raise InputError(f"timeout must be a timedelta or a number of seconds, not {type(timeout).__name__}")
    if not math.isfinite(seconds):
        raise InputError(f"timeout must be a finite number of seconds, not {timeout!r}")
    return max(0.0, seconds)


def check_default(spec: stopping_point.AskSpec, default: object) -> str | None:
    """The default to store: as given for a text ask, the option's own label for a choice."""
    if default is None:
        return None
    text = check_string(default, "default")
    if not text.strip():
        raise InputError("default is empty")
    if spec.kind is AskKind.TEXT:
        return text  # a text answer is kept as given, and so is a text default
    # Labels are tidied (whitespace folded) when the spec is made: tidy the default by the
    # same code, so "Use  case" names the option stored as "Use case".
    try:
        tidy = stopping_point.make_spec(AskKind.CHOICE, "default", [text]).options[0]
    except StoppingPointError:
        tidy = None  # not even a usable label, so not one of these
    if tidy not in spec.options:
        raise InputError(f"default {default!r} is not one of the options")
    return tidy


def check_expect(spec: stopping_point.AskSpec, expect: object, default: str | None) -> Expect | None:
    """The form ``spec``'s answer must take (:func:`~parkgate.core.expect.as_expect`), or ``None``.

    Only a text ask expects a form; a ``default`` must then be of that form.
    """
    found = as_expect(expect)
    if found is None:
        return None
    if spec.kind is not AskKind.TEXT:
        raise InputError("expect is for text asks: a choice ask's answer is one of its options")
    if default is not None and value_of(found, default) is None:
        raise InputError(f"default {default!r} is not {describe(found)}")
    return found


def check_workflow(workflow: object) -> Workflow:
    """A :class:`~parkgate.workflow.Workflow`."""
    if not isinstance(workflow, Workflow):
        raise InputError(f"workflow must be a parkgate Workflow, not {type(workflow).__name__}")
    for phase in workflow.phases:  # a phase's responders are senders like any others
        if phase.responders:
            check_responders(list(phase.responders))
        check_schedule(phase.schedule)
    return workflow


#: The largest ``context`` an ask may carry, as UTF-8 JSON.
MAX_CONTEXT_BYTES = 16_384


def check_context(context: object) -> dict[str, Any] | None:
    """An ask's context: ``None`` or a mapping with string keys that JSON can hold, at most
    :data:`MAX_CONTEXT_BYTES` encoded; returned as a plain dict (a copy)."""
    if context is None:
        return None
    if not isinstance(context, Mapping):
        raise InputError(f"context must be a mapping (a JSON object), not {type(context).__name__}")
    if not all(isinstance(key, str) for key in context):
        raise InputError("context keys must be strings")
    try:
        encoded = json.dumps(dict(context), ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as error:
        raise InputError(f"context must hold only JSON values ({error})") from None
    size = len(encoded.encode("utf-8", "surrogatepass"))
    if size > MAX_CONTEXT_BYTES:
        raise InputError(f"context is {size} bytes as JSON; the limit is {MAX_CONTEXT_BYTES}")
    _check_unicode(encoded, "context")
    value: dict[str, Any] = json.loads(encoded)
    _check_json_strings(value, "context")
    return value


def _check_json_strings(value: object, what: str) -> None:
    """Every key and string in a JSON value, at any depth, holds no NUL: :func:`check_inbound_text`'s
    rule for text. ``json.dumps`` escapes a NUL as ``\\u0000``, so the encoded text alone
    cannot tell it from the six characters a person typed. A stack, not recursion: a deep
    value cannot exhaust the interpreter's stack."""
    pending = [value]
    while pending:
        item = pending.pop()
        if isinstance(item, dict):
            pending.extend(item)
            pending.extend(item.values())
        elif isinstance(item, list):
            pending.extend(item)
        elif isinstance(item, str) and "\x00" in item:
            raise InputError(f"{what} contains a NUL character")


#: The longest agent state kept with a run, in characters (a transcript, not a log).
MAX_AGENT_STATE_CHARS = 64 * 1024 * 1024
#: The longest output a run keeps, in characters of its JSON text.
MAX_RUN_OUTPUT_CHARS = 256_000
#: The longest reason a close keeps (an operator's words on a cancel).
MAX_REASON_CHARS = 2_000


def check_reason(value: object) -> str | None:
    """A close's reason: ``None``, or text of at most :data:`MAX_REASON_CHARS` (blank is ``None``).

    Raises:
        InputError: Not text, or too long.
    """
    if value is None:
        return None
    return check_string(value, "reason", limit=MAX_REASON_CHARS).strip() or None


def check_output(output: object) -> None:
    """A run's output as :meth:`Gateway.finish_run <parkgate.Gateway.finish_run>` keeps it: a JSON value (finite
    numbers, text that is Unicode) of at most :data:`MAX_RUN_OUTPUT_CHARS` as JSON text."""
    try:
        text = json.dumps(output, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as error:
        raise InputError(f"output is not a JSON value ({error})") from None
    check_string(text, "output (as JSON)", limit=MAX_RUN_OUTPUT_CHARS)
