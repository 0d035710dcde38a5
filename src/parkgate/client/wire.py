"""The client's pure layer: what each call sends and how its answer is read.

:class:`~parkgate.client.Client` and :class:`~parkgate.client.AsyncClient` share it and
add only the I/O: a builder here returns a :class:`Call` (method, path, body, and the
function that reads a success), and :func:`parkgate.client.responses.result` turns the
response into that value or raises the exception its error stands for. Arguments that
go into a URL path, the durations and the ``expect`` and ``context`` of an ask are
checked here with the library's own checks (:class:`~parkgate.errors.InputError` before
anything is sent); the server checks the rest, and its refusal is an ``InputError`` too.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Generic, TypeVar
from urllib.parse import quote

import httpx

from parkgate.channels.base import check_target
from parkgate.channels.registry import names as channel_names
from parkgate.client.views import AskPage, AskView, run_from_dict
from parkgate.core.events import STREAM_HEARTBEAT_SECONDS, LoggedEvent
from parkgate.core.expect import as_expect
from parkgate.core.expect import to_dict as expect_to_dict
from parkgate.core.history import HistoryQuery
from parkgate.core.kinds import AskKind
from parkgate.core.model import Reply, Run
from parkgate.core.shape import Form, declared_options
from parkgate.core.stats import Stats
from parkgate.errors import InputError
from parkgate.gateway.checks import (
    MAX_SKILL_OUTPUT_CHARS,
    MAX_WAIT_SECONDS,
    check_context,
    check_duration,
    check_id,
    check_inbound_text,
    check_offsets,
    check_sender,
)
from parkgate.gateway.options import ClientAskFields, ParkFields, RunFields, refuse_unknown

T = TypeVar("T")

#: Seconds a request may take (connect, send, and each read) unless the client is told otherwise.
DEFAULT_TIMEOUT = 10.0
#: How many asks a page of :meth:`~parkgate.client.Client.open_asks` holds unless told otherwise.
DEFAULT_PAGE_ASKS = 100
_JSON = {"Content-Type": "application/json"}


@dataclass(frozen=True, slots=True)
class Call(Generic[T]):
    """One request and how to read its success.

    ``about`` holds the ids the call is about (``conversation_id``, ``ask_id``, ``run_id``,
    ``workflow``): the library exception for an error response is built with them.
    ``hold`` is how long the server may hold the request (a long-poll), in seconds.
    """

    method: str
    path: str
    read: Callable[[Any], T]
    body: bytes | None = None
    params: Mapping[str, str | int | float] | None = None
    about: Mapping[str, str] = field(default_factory=dict)
    hold: float = 0.0

    @property
    def headers(self) -> Mapping[str, str]:
        """The request's headers: the JSON content type when it has a body."""
        return _JSON if self.body is not None else {}


@dataclass(frozen=True, slots=True)
class Connection:
    """Where and how a client connects: the base URL (ending in ``/``, before ``v1``), its
    headers, its timeout, and the longest it asks the server to hold one long-poll."""

    base_url: httpx.URL
    headers: Mapping[str, str]
    timeout: httpx.Timeout
    long_poll: float

    def client_options(self) -> dict[str, Any]:
        """The ``httpx.Client`` (or ``AsyncClient``) arguments for this connection."""
        return {"base_url": self.base_url, "headers": dict(self.headers), "timeout": self.timeout}

    def request_options(self, call: Call[Any]) -> dict[str, Any]:
        """The arguments of ``request`` that send ``call`` on this connection."""
        return {
            "method": call.method,
            "url": call.path,
            "content": call.body,
            "params": call.params,
            "headers": call.headers,
            "timeout": self.timeout_for(call),
        }

    def timeout_for(self, call: Call[Any]) -> httpx.Timeout:
        """The request's timeout: a long-poll's reads may take its hold longer."""
        if not call.hold or self.timeout.read is None:
            return self.timeout
        return httpx.Timeout(
            connect=self.timeout.connect,
            read=self.timeout.read + call.hold,
            write=self.timeout.write,
            pool=self.timeout.pool,
        )


def connection(base_url: str, token: str | None, timeout: float, long_poll: float) -> Connection:
    """A client's settings, checked: :class:`InputError` names the argument that is wrong.

    ``base_url`` is ``http(s)://host[:port]`` with an optional path prefix (a proxy's);
    a trailing ``/`` or ``/v1`` is the same URL without it. ``token`` must be printable
    ASCII without spaces (it travels in a header; the message does not show it).
    """
    if not isinstance(base_url, str):
        raise InputError(f"base_url must be a string, not {type(base_url).__name__}")
    try:
        url = httpx.URL(base_url)
    except httpx.InvalidURL as error:
        raise InputError(f"base_url {base_url!r} is not a valid URL ({error})") from None
    if url.scheme not in ("http", "https") or not url.host:
        raise InputError(f"base_url must look like http://host:port, not {base_url!r}")
    if token is not None and not _header_safe(token):
        raise InputError("token must be printable ASCII with no spaces or line breaks")
    path = url.path.rstrip("/").removesuffix("/v1")
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return Connection(
        url.copy_with(path=path + "/", query=None, fragment=None),
        headers,
        httpx.Timeout(_seconds(timeout, "timeout", None)),
        _seconds(long_poll, "long_poll", MAX_WAIT_SECONDS),
    )


def _header_safe(token: object) -> bool:
    """Whether ``token`` can travel in an HTTP header as it is: printable ASCII, no spaces."""
    return (
        isinstance(token, str) and token.isascii() and token.isprintable() and not any(char.isspace() for char in token)
    )


def _seconds(value: object, what: str, most: float | None) -> float:
    """A positive, finite number of seconds (a number or a ``timedelta``), at most ``most``."""
    if isinstance(value, timedelta):
        seconds = value.total_seconds()
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        seconds = float(value)
    else:
        seconds = math.nan
    if not (math.isfinite(seconds) and seconds > 0) or (most is not None and seconds > most):
        limit = f" and at most {most:g}" if most is not None else ""
        raise InputError(f"{what} must be a number of seconds above 0{limit}, not {value!r}")
    return seconds


def path_segment(value: str) -> str:
    """``value`` as one URL path segment: every reserved character percent-encoded.

    ``/``, ``?``, ``#``, ``%``, spaces and non-ASCII are encoded, and so is a segment that
    is only ``.`` or ``..`` (a client would otherwise resolve it as a dot segment).
    """
    quoted = quote(value, safe="")
    return quoted.replace(".", "%2E") if quoted in (".", "..") else quoted


def _segment(value: object, what: str) -> str:
    return path_segment(check_id(value, what))


def _json(body: Mapping[str, Any]) -> bytes:
    """The JSON body, ``None`` fields left out (the server reads a missing field as its default).

    Every non-ASCII character is escaped, so text that UTF-8 cannot carry (a lone
    surrogate) reaches the server, whose refusal names the field.
    """
    try:
        given = {name: value for name, value in body.items() if value is not None}
        return json.dumps(given, allow_nan=False).encode("ascii")
    except (TypeError, ValueError) as error:
        raise InputError(f"the arguments cannot be sent as JSON ({error})") from None


# -- the calls ---------------------------------------------------------------------------


def park(
    conversation_id: str,
    prompt: str,
    options: Sequence[str] | None,
    kind: AskKind | str | None,
    fields: ClientAskFields,
) -> Call[Reply]:
    """``POST /v1/asks`` with a prompt, its ``options`` and ``kind``, and the ask's ``fields``
    (the channel to post on among them: ``post_to``, or a registered channel's key, such
    as ``slack={"channel": "C123"}``, checked by the server)."""
    refuse_unknown(
        {name: value for name, value in fields.items() if name not in channel_names()}, ClientAskFields, "ask"
    )
    body = {
        "conversation_id": conversation_id,
        "prompt": prompt,
        "options": options if options is None or isinstance(options, str) else list(options),
        "kind": kind,
        **options_json(fields, ClientAskFields),
    }
    return Call("POST", "v1/asks", Reply.from_dict, _json(body), about=_park_about(conversation_id, fields))


def park_text(conversation_id: str, skill_output: str, fields: ParkFields) -> Call[Reply]:
    """``POST /v1/asks`` with a skill's output (checked as the library checks it: no longer
    than :data:`~parkgate.gateway.checks.MAX_SKILL_OUTPUT_CHARS`, so its body is within the server's limit)."""
    refuse_unknown(fields, ParkFields, "ask_from_text")
    body = {
        "conversation_id": conversation_id,
        "skill_output": check_inbound_text(skill_output, limit=MAX_SKILL_OUTPUT_CHARS, what="skill output"),
        **options_json(fields, ParkFields),
    }
    return Call("POST", "v1/asks", Reply.from_dict, _json(body), about=_park_about(conversation_id, fields))


def options_json(fields: Mapping[str, Any], declared: type) -> dict[str, Any]:
    """An ask's options (:mod:`parkgate.gateway.options`) as the JSON fields of its request.

    The one place options are written as JSON: each under its JSON name, written as its
    form says (:class:`~parkgate.core.shape.Option`): durations as seconds, an ``expect``
    as its object, each checked here with the library's checks; ``post_to`` as its
    channel's key, checked here too; the rest as given, checked by the server.

    Args:
        fields: The options given, by name.
        declared: The options ``TypedDict`` the call takes.
    """
    options = declared_options(declared)
    body: dict[str, Any] = {}
    for name, value in fields.items():
        option = options.get(name)
        if option is None:
            body[name] = value
        else:
            send = _SEND.get(option.form)
            body[option.wire] = value if value is None or send is None else send(value, name)
    for name in channel_names():  # a channel's target, as POST /v1/asks takes it
        if isinstance(fields.get(name), Mapping):
            body[name] = dict(fields[name])
    target = check_target(body.pop("post_to", None))
    if target is not None:
        if body.get(target.channel) is not None:
            raise InputError(f"an ask is posted to one channel: give post_to or {target.channel}, not both")
        body[target.channel] = dict(target.where)
    return body


def _expect_json(value: object, _: str) -> dict[str, Any] | None:
    form = as_expect(value)
    return None if form is None else expect_to_dict(form)


#: How a value of each form that JSON cannot take as it is gets written there (checked as the library checks it).
_SEND: dict[Form, Callable[[Any, str], Any]] = {
    Form.SECONDS: lambda value, what: check_duration(value, what).total_seconds(),
    Form.OFFSETS: lambda value, what: list(check_offsets(value, what)),
    Form.EXPECT: _expect_json,
    Form.OBJECT: lambda value, _: check_context(value),
}


def _park_about(conversation_id: str, fields: RunFields) -> dict[str, str]:
    """The ids a park is about: its conversation, and its run when one is named."""
    about = {"conversation_id": conversation_id}
    run_id = fields.get("run_id")
    if run_id is not None:
        about["run_id"] = run_id
    return about


def message(
    conversation_id: str,
    text: str | bytes,
    message_id: str | None,
    sender: str | None = None,
    ask_id: str | None = None,
) -> Call[Reply]:
    """``POST /v1/conversations/{conversation_id}/messages`` (``sender`` and ``ask_id`` only when given)."""
    path = f"v1/conversations/{_segment(conversation_id, 'conversation_id')}/messages"
    body: dict[str, Any] = {"text": check_inbound_text(text), "message_id": message_id}
    if sender is not None:
        body["sender"] = check_sender(sender)
    if ask_id is not None:
        body["ask_id"] = check_id(ask_id, "ask_id")
    return Call("POST", path, Reply.from_dict, _json(body), about={"conversation_id": conversation_id})


def read_ask(ask_id: str, wait: float = 0.0) -> Call[AskView]:
    """``GET /v1/asks/{ask_id}``, held up to ``wait`` seconds until the ask closes."""
    params = {"wait": f"{wait:.3f}"} if wait > 0 else None
    path = f"v1/asks/{_segment(ask_id, 'ask_id')}"
    return Call("GET", path, AskView.from_dict, params=params, about={"ask_id": ask_id}, hold=wait)


def open_asks(
    limit: int, cursor: str | None, conversation_id: str | None = None, owner: str | None = None
) -> Call[AskPage]:
    """``GET /v1/asks?status=open``: one page, of one conversation or one owner when given."""
    params: dict[str, str | int] = {"status": "open", "limit": limit}
    if cursor is not None:
        params["cursor"] = cursor
    if conversation_id is not None:
        params["conversation_id"] = check_id(conversation_id, "conversation_id")
    if owner is not None:
        params["owner"] = check_id(owner, "owner")
    return Call("GET", "v1/asks", AskPage.from_dict, params=params)


def history(query: HistoryQuery) -> Call[AskPage]:
    """``GET /v1/asks`` with a history query's filters: one page of any status."""
    params: dict[str, str | int] = {"status": query.status, "limit": query.limit}
    for name in ("since", "until"):
        moment = getattr(query, name)
        if moment is not None:
            params[name] = moment.isoformat()
    for name in ("conversation_id", "responder", "channel", "outcome", "owner"):
        value = getattr(query, name)
        if value is not None:
            params[name] = check_id(value, name)
    if query.q is not None:
        params["q"] = query.q
    if query.cursor is not None:
        params["cursor"] = query.cursor
    return Call("GET", "v1/asks", AskPage.from_dict, params=params)


def history_query(query: HistoryQuery | None, filters: Mapping[str, Any]) -> HistoryQuery:
    """The query a client's ``history(query, **filters)`` sends: ``filters`` over ``query``'s."""
    try:
        return dataclasses.replace(query, **filters) if query is not None else HistoryQuery(**filters)
    except TypeError as error:
        raise InputError(f"history takes HistoryQuery's fields: {error}") from None


def stats(since: datetime | None, until: datetime | None, by: str | None) -> Call[Stats]:
    """``GET /v1/stats``: the figures of ``[since, until)``, grouped ``by`` when given."""
    params: dict[str, str] = {}
    for name, moment in (("since", since), ("until", until)):
        if moment is not None:
            if moment.tzinfo is None:
                raise InputError(f"{name} must be a timezone-aware datetime")
            params[name] = moment.isoformat()
    if by is not None:
        params["by"] = str(getattr(by, "value", by))
    return Call("GET", "v1/stats", Stats.from_dict, params=params)


def parked(conversation_id: str, wait: float = 0.0) -> Call[AskView | None]:
    """``GET /v1/conversations/{conversation_id}``, held up to ``wait`` seconds until an ask is parked."""
    params = {"wait": f"{wait:.3f}"} if wait > 0 else None
    path = f"v1/conversations/{_segment(conversation_id, 'conversation_id')}"
    return Call("GET", path, _parked_ask, params=params, about={"conversation_id": conversation_id}, hold=wait)


def _parked_ask(data: Mapping[str, Any]) -> AskView | None:
    ask = data["ask"]
    return None if ask is None else AskView.from_dict(ask)


def cancel(ask_id: str, outcome: str | None = None, reason: str | None = None) -> Call[AskView]:
    """``POST /v1/asks/{ask_id}/cancel``, with the ``outcome`` and ``reason`` to record when given."""
    fields: dict[str, str] = {}
    if outcome is not None:
        fields["outcome"] = check_id(outcome, "outcome")
    if reason is not None:
        fields["reason"] = reason
    body = _json(fields) if fields else None
    path = f"v1/asks/{_segment(ask_id, 'ask_id')}/cancel"
    return Call("POST", path, AskView.from_dict, body, about={"ask_id": ask_id})


def ask_events(ask_id: str) -> Call[list[LoggedEvent]]:
    """``GET /v1/asks/{ask_id}/events``: the ask's timeline."""
    path = f"v1/asks/{_segment(ask_id, 'ask_id')}/events"
    return Call("GET", path, lambda data: [LoggedEvent.from_json(e) for e in data["events"]], about={"ask_id": ask_id})


def event_stream(after: int | None, wait: float) -> Call[None]:
    """``GET /v1/events/stream`` after the event ``after`` (``None``: after the latest),
    held ``wait`` seconds; its reads may take a heartbeat's interval longer than others'."""
    params: dict[str, str | int | float] = {"wait": f"{_seconds(wait, 'hold', MAX_WAIT_SECONDS):.3f}"}
    if after is not None:
        if isinstance(after, bool) or not isinstance(after, int) or after < 0:
            raise InputError(f"after must be an event id (a whole number of at least 0), not {after!r}")
        params["after"] = after
    return Call("GET", "v1/events/stream", lambda data: None, params=params, hold=STREAM_HEARTBEAT_SECONDS)


def event_export(since: datetime | None, until: datetime | None) -> Call[None]:
    """``GET /v1/export?what=events`` as JSON Lines, of ``[since, until)``."""
    params: dict[str, str | int | float] = {"what": "events", "format": "jsonl"}
    for name, moment in (("since", since), ("until", until)):
        if moment is None:
            continue
        if not isinstance(moment, datetime) or moment.tzinfo is None:
            raise InputError(f"{name} must be a datetime with its timezone, not {moment!r}")
        params[name] = moment.isoformat()
    return Call("GET", "v1/export", lambda data: None, params=params, hold=STREAM_HEARTBEAT_SECONDS)


def closed_follow_ups(limit: int, watcher: str | None = None, after: str | None = None) -> Call[list[AskView]]:
    """``GET /v1/follow-ups``: one watcher's when ``watcher`` is given, after the ask ``after`` when given."""
    params: dict[str, str | int] = {"limit": limit}
    if watcher is not None:
        params["watcher"] = check_id(watcher, "watcher")
    if after is not None:
        params["after"] = check_id(after, "after")
    return Call("GET", "v1/follow-ups", lambda data: list(AskPage.from_dict(data).asks), params=params)


def claim_follow_up(ask_id: str, lease: timedelta | float) -> Call[bool]:
    """``POST /v1/asks/{ask_id}/follow-up/claim`` for ``lease`` (checked as the library checks it)."""
    seconds = check_duration(lease, "lease").total_seconds()
    path = f"v1/asks/{_segment(ask_id, 'ask_id')}/follow-up/claim"
    body = _json({"lease_seconds": seconds})
    return Call("POST", path, lambda data: bool(data["claimed"]), body, about={"ask_id": ask_id})


def follow_up_done(ask_id: str) -> Call[AskView]:
    """``POST /v1/asks/{ask_id}/follow-up/done``."""
    path = f"v1/asks/{_segment(ask_id, 'ask_id')}/follow-up/done"
    return Call("POST", path, AskView.from_dict, about={"ask_id": ask_id})


def retry_callback(ask_id: str) -> Call[AskView]:
    """``POST /v1/asks/{ask_id}/callback/retry``."""
    path = f"v1/asks/{_segment(ask_id, 'ask_id')}/callback/retry"
    return Call("POST", path, AskView.from_dict, about={"ask_id": ask_id})


def failed_callbacks(limit: int) -> Call[list[AskView]]:
    """``GET /v1/callbacks/failed``."""
    return Call("GET", "v1/callbacks/failed", lambda data: list(AskPage.from_dict(data).asks), params={"limit": limit})


def run(run_id: str) -> Call[Run]:
    """``GET /v1/runs/{run_id}``."""
    return Call("GET", f"v1/runs/{_segment(run_id, 'run_id')}", run_from_dict, about={"run_id": run_id})


def record_run(run_id: str, conversation_id: str, outcome: str) -> Call[Run]:
    """``POST /v1/runs``."""
    body = _json({"run_id": run_id, "conversation_id": conversation_id, "outcome": outcome})
    return Call("POST", "v1/runs", run_from_dict, body, about={"run_id": run_id, "conversation_id": conversation_id})


def finish_run(run_id: str, outcome: str, output: Any = None) -> Call[Run]:
    """``POST /v1/runs/{run_id}/finish``, with the run's ``output`` when given."""
    path = f"v1/runs/{_segment(run_id, 'run_id')}/finish"
    body = {"outcome": outcome} if output is None else {"outcome": outcome, "output": output}
    return Call("POST", path, run_from_dict, _json(body), about={"run_id": run_id})


def keep_agent_state(run_id: str, state: str) -> Call[None]:
    """``PUT /v1/runs/{run_id}/agent-state``."""
    path = f"v1/runs/{_segment(run_id, 'run_id')}/agent-state"
    return Call("PUT", path, lambda data: None, _json({"state": state}), about={"run_id": run_id})


def agent_state(run_id: str) -> Call[str | None]:
    """``GET /v1/runs/{run_id}/agent-state``."""
    path = f"v1/runs/{_segment(run_id, 'run_id')}/agent-state"
    return Call(
        "GET", path, lambda data: None if data["state"] is None else str(data["state"]), about={"run_id": run_id}
    )


def forget_agent_state(run_id: str) -> Call[None]:
    """``DELETE /v1/runs/{run_id}/agent-state``."""
    path = f"v1/runs/{_segment(run_id, 'run_id')}/agent-state"
    return Call("DELETE", path, lambda data: None, about={"run_id": run_id})


def start(conversation_id: str, workflow: str, fields: RunFields) -> Call[Reply]:
    """``POST /v1/workflows/{workflow}/start``."""
    refuse_unknown(fields, RunFields, "start")
    path = f"v1/workflows/{_segment(workflow, 'workflow')}/start"
    body = {"conversation_id": conversation_id, **options_json(fields, RunFields)}
    about = {"conversation_id": conversation_id, "workflow": workflow}
    return Call("POST", path, Reply.from_dict, _json(body), about=about)


def workflows() -> Call[list[str]]:
    """``GET /v1/workflows``."""
    return Call("GET", "v1/workflows", lambda data: [str(name) for name in data["workflows"]])


# -- long-polls ----------------------------------------------------------------------------


def next_hold(remaining: float, long_poll: float) -> float:
    """How long the next long-poll of a wait asks the server to hold it, in seconds."""
    return max(0.0, min(remaining, long_poll))
