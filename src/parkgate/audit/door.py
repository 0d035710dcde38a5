"""The door check against any chat endpoint: an HTTP route, or a Python ``handle`` function.

Each sender sends one message to a conversation that holds a parked question and
returns the line :func:`~parkgate.core.door.door_verdict` judges: the ``input``, the
reply's ``text`` and whether the conversation is still ``parked`` (``None`` when the
answer does not say). The reply and the flag are picked out of a JSON answer by a path
(:func:`pick`): ``text``, ``reply.text``, ``$.messages[0].content``.

The endpoint may be hostile or broken, so the HTTP sender is bounded: the whole check
has one deadline (an endpoint that drips a byte at a time is cut off at it), an answer's
body is read up to a cap and no further, and JSON nested deeper than :data:`MAX_JSON_DEPTH`
is refused; each is one :class:`~parkgate.errors.InputError` naming what happened.
"""

from __future__ import annotations

import asyncio
import codecs
import importlib
import inspect
import json
import re
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any
from urllib.parse import quote

from parkgate.core.door import DOOR_EXIT, DOOR_NON_ANSWERS, door_verdict
from parkgate.errors import InputError

#: One reply as the door check prints and judges it.
Line = dict[str, Any]
#: Sends one message and returns its line.
Send = Callable[[str], Line]

#: The body sent when none is given: parkgate's own messages route takes it.
DEFAULT_BODY = '{"text": "{text}"}'
DEFAULT_REPLY_PATH = "text"
DEFAULT_PARKED_PATH = "parked"
#: Seconds one request may wait to connect or between two reads.
REQUEST_TIMEOUT_SECONDS = 30.0
#: The defaults of ``parkgate audit door --deadline`` (seconds for the whole check over
#: HTTP) and ``--max-body`` (bytes of one answer).
DEFAULT_DEADLINE_SECONDS = 120.0
DEFAULT_MAX_BODY_BYTES = 1024 * 1024
#: How deep an answer's JSON may nest (arrays and objects); a chat reply needs a few levels.
MAX_JSON_DEPTH = 100

_PLACEHOLDER = re.compile(r"\{(text|conversation)\}")
_STEP = re.compile(r"\.?([^.\[\]]+)|\[(\d+)\]")
_PATH = re.compile(r"[^.\[\]]*(?:\.[^.\[\]]+|\[\d+\])*")
_MISSING = object()


def fill(template: str, values: Mapping[str, str]) -> str:
    """``template`` with each ``{text}`` and ``{conversation}`` replaced in one pass, so a
    value that holds a placeholder is never filled in again."""
    return _PLACEHOLDER.sub(lambda found: values[found.group(1)], template)


def body_template(template: str) -> Any:
    """A JSON body template, parsed; each placeholder must sit inside a JSON string."""
    try:
        parsed = json.loads(template)
    except ValueError as error:
        raise InputError(f"the body template is not JSON ({error}); put each placeholder in quotes") from None
    if "{text}" not in template:
        raise InputError('the body template has no "{text}" for the message')
    return parsed


def filled(value: Any, values: Mapping[str, str]) -> Any:
    """A parsed template with every string (keys too) :func:`fill`-ed."""
    if isinstance(value, str):
        return fill(value, values)
    if isinstance(value, list):
        return [filled(item, values) for item in value]
    if isinstance(value, dict):
        return {fill(key, values): filled(item, values) for key, item in value.items()}
    return value


def path_steps(path: str) -> list[tuple[str, str]]:
    """A path's steps, ``(name, "")`` or ``("", index)``; :class:`InputError` for one that
    is not names and ``[index]`` steps (see :func:`pick`)."""
    path = path.strip().removeprefix("$")
    if not _PATH.fullmatch(path):
        raise InputError(f"{path!r} is not a path like reply.text or messages[0].content")
    return [(name, index) for name, index in _STEP.findall(path)]


def pick(answer: Any, path: str) -> Any:
    """The value at ``path`` in a JSON answer, or ``None`` where there is none.

    A path is names and ``[index]`` steps, ``$`` (or an empty path) the whole answer:
    ``text``, ``reply.text``, ``$.messages[0].content``.
    """
    for name, index in path_steps(path):
        if name and isinstance(answer, Mapping):
            answer = answer.get(name, _MISSING)
        elif index and isinstance(answer, list) and int(index) < len(answer):
            answer = answer[int(index)]
        else:
            answer = _MISSING
        if answer is _MISSING:
            return None
    return answer


def parked_flag(value: Any) -> bool | None:
    """A parked flag as read: a JSON boolean, else ``None`` (the answer does not say)."""
    return value if isinstance(value, bool) else None


def reply_line(text: str, answer: Any, reply_path: str, parked_path: str) -> Line:
    """The line for ``answer``, the endpoint's reply to ``text``: a JSON value the paths
    read, or a plain string (its text; it says nothing of parked)."""
    if isinstance(answer, str):
        return {"input": text, "parked": None, "text": answer}
    reply = pick(answer, reply_path)
    return {
        "input": text,
        "parked": parked_flag(pick(answer, parked_path)),
        "text": reply if reply is None or isinstance(reply, str) else json.dumps(reply),
    }


def audit_verdict(lines: list[Line]) -> str | None:
    """:func:`~parkgate.core.door.door_verdict`, after the endpoint answered every message
    with a success: an HTTP error is named first."""
    for line in lines:
        status = line.get("status")
        if status is not None and not 200 <= status < 300:
            return f"the endpoint answered {line['input']!r} with HTTP {status}"
    return door_verdict(lines, misses=len(DOOR_NON_ANSWERS))


def run_door(send: Send) -> list[Line]:
    """Send the four non-answers, then the exit word, and return their lines."""
    return [send(text) for text in (*DOOR_NON_ANSWERS, DOOR_EXIT)]


def json_depth_within(text: str, limit: int = MAX_JSON_DEPTH) -> bool:
    """Whether JSON ``text`` nests arrays and objects at most ``limit`` deep, counted
    without parsing (brackets inside strings skipped), so a hostile answer is refused
    before the parser recurses into it."""
    depth = 0
    in_string = escaped = False
    for char in text:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            if depth > limit:
                return False
        elif char in "]}":
            depth -= 1
    return True


def decoded_answer(data: bytes, charset: str | None) -> Any:
    """An answer's body as read: its JSON value, or its text where it is not JSON.

    Raises:
        InputError: The JSON nests deeper than :data:`MAX_JSON_DEPTH`.
    """
    try:
        encoding = codecs.lookup(charset or "utf-8").name
    except LookupError:
        encoding = "utf-8"
    text = data.decode(encoding, errors="replace")
    if not json_depth_within(text):
        raise InputError(f"the answer nests JSON deeper than {MAX_JSON_DEPTH} levels")
    try:
        return json.loads(text)
    except ValueError:
        return text


@contextmanager
def http_sender(
    url: str,
    conversation: str,
    *,
    body: str = DEFAULT_BODY,
    reply_path: str = DEFAULT_REPLY_PATH,
    parked_path: str = DEFAULT_PARKED_PATH,
    headers: Mapping[str, str] | None = None,
    deadline: float = DEFAULT_DEADLINE_SECONDS,
    max_body: int = DEFAULT_MAX_BODY_BYTES,
) -> Iterator[Send]:
    """A sender that POSTs each message to ``url`` as ``body``, within one deadline.

    Args:
        url: The endpoint; ``{conversation}`` in it is the conversation id, percent-encoded.
        conversation: The conversation that holds the parked question.
        body: A JSON template holding ``{text}`` (and ``{conversation}`` where needed).
        reply_path: Where the reply's text is in a JSON answer (:func:`pick`).
        parked_path: Where the parked flag is in a JSON answer.
        headers: Extra request headers (``Authorization``, say).
        deadline: Seconds every message together may take, from the first send: each
            request, its answer's headers and its body, however slowly they arrive.
        max_body: The most bytes of one answer's body read (after any decompression).

    Yields:
        The sender. A network failure raises :class:`httpx.HTTPError`; the deadline, a
        body over ``max_body`` or JSON nested too deep raise :class:`InputError`.
    """
    import httpx

    template = body_template(body)
    for path in (reply_path, parked_path):  # a bad path is refused before anything is sent
        path_steps(path)
    target = fill(url, {"text": "", "conversation": quote(conversation, safe="")})
    ends: float | None = None
    loop = asyncio.new_event_loop()
    sent_headers = httpx.Headers({"Accept-Encoding": "identity"})  # bytes counted are bytes sent
    sent_headers.update(dict(headers or {}))
    client = httpx.AsyncClient(timeout=REQUEST_TIMEOUT_SECONDS, headers=sent_headers)

    async def post(text: str) -> Line:
        payload = filled(template, {"text": text, "conversation": conversation})
        async with client.stream("POST", target, json=payload) as response:
            declared = response.headers.get("Content-Length", "")
            if declared.isdigit() and int(declared) > max_body:
                raise _too_big(text, max_body)
            data = bytearray()
            async for chunk in response.aiter_bytes():
                data += chunk
                if len(data) > max_body:
                    raise _too_big(text, max_body)
        try:
            answer = decoded_answer(bytes(data), response.charset_encoding)
        except InputError as error:
            raise InputError(f"the endpoint's answer to {text!r}: {error}") from None
        return {**reply_line(text, answer, reply_path, parked_path), "status": response.status_code}

    def send(text: str) -> Line:
        nonlocal ends
        ends = time.monotonic() + deadline if ends is None else ends
        try:
            return loop.run_until_complete(asyncio.wait_for(post(text), max(0.0, ends - time.monotonic())))
        except TimeoutError:
            raise InputError(
                f"the endpoint had not answered {text!r} when the {deadline:g} s deadline for the check passed"
            ) from None

    try:
        yield send
    finally:
        loop.run_until_complete(client.aclose())
        loop.close()


def _too_big(text: str, max_body: int) -> InputError:
    return InputError(f"the endpoint's answer to {text!r} is over {max_body} bytes, the most read (--max-body)")


def load_function(spec: str) -> Callable[..., Any]:
    """The function ``module:function`` names (``module`` importable from here)."""
    module_name, _, name = spec.partition(":")
    if not module_name or not name:
        raise InputError(f"{spec!r} is not module:function")
    try:
        found = getattr(importlib.import_module(module_name), name)
    except (ImportError, AttributeError) as error:
        raise InputError(f"cannot load {spec}: {error}") from None
    if not callable(found):
        raise InputError(f"{spec} is not a function")
    return found  # type: ignore[no-any-return]  # callable() checked it


@contextmanager
def python_sender(
    handle: Callable[..., Any],
    conversation: str,
    *,
    is_parked: Callable[..., Any] | None = None,
    reply_path: str = DEFAULT_REPLY_PATH,
    parked_path: str = DEFAULT_PARKED_PATH,
) -> Iterator[Send]:
    """A sender that calls ``handle(conversation, text)`` in process, sync or async.

    Args:
        handle: The answer handler; it returns the reply's text (or ``None``), or a
            mapping the paths read.
        conversation: The conversation that holds the parked question.
        is_parked: ``is_parked(conversation)``, sync or async, read after each reply;
            without it the parked flag is read from a mapping the handler returns.
        reply_path: Where the reply's text is in a returned mapping (:func:`pick`).
        parked_path: Where the parked flag is in a returned mapping.

    Yields:
        The sender; every coroutine runs on one event loop, closed at the end.
    """
    for path in (reply_path, parked_path):  # a bad path is refused before anything is sent
        path_steps(path)
    loop = asyncio.new_event_loop()

    def call(function: Callable[..., Any], *args: Any) -> Any:
        result = function(*args)
        return loop.run_until_complete(result) if inspect.isawaitable(result) else result

    def send(text: str) -> Line:
        try:
            answer = call(handle, conversation, text)
        except Exception as error:  # the handler's own failure is the finding, named
            raise InputError(f"the handler raised {type(error).__name__} on {text!r}: {error}") from None
        line: Line = (
            reply_line(text, answer, reply_path, parked_path)
            if isinstance(answer, Mapping)
            else {"input": text, "parked": None, "text": answer if answer is None else str(answer)}
        )
        if is_parked is not None:
            line["parked"] = parked_flag(call(is_parked, conversation))
        return line

    try:
        yield send
    finally:
        loop.close()
