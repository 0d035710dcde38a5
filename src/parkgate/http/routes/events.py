"""The event log over HTTP: ``GET /v1/asks/{ask_id}/events`` (an ask's timeline),
``GET /v1/events/stream`` (new events as server-sent events,
:mod:`parkgate.http.event_stream`), and the rows of an export of events
(``GET /v1/export?what=events``, :mod:`parkgate.http.routes.history`).

Reads are scoped as the history is (:attr:`parkgate.http.tokens.Caller.tenant`): a named
token without the ``operate`` scope reads only the asks it parked, and another owner's
ask is a 404 ``unknown_ask``, the answer for an id no ask has; its stream and its export
hold its own asks' events only.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import datetime
from typing import Annotated, Any

from fastapi import APIRouter, Header, Query, Request
from fastapi.responses import Response, StreamingResponse

from parkgate.errors import InputError, TooManyLongPolls, UnknownAsk
from parkgate.gateway.async_gateway import AsyncGateway
from parkgate.gateway.checks import MAX_WAIT_SECONDS
from parkgate.http.dependencies import CallerDep, GatewayDep, LongPollsDep
from parkgate.http.errors import V1_ERRORS, Responses, documented
from parkgate.http.event_stream import EVENT_STREAM, STREAM_PAGE, follow
from parkgate.http.longpolls import ENV_MAX_LONG_POLLS, RETRY_AFTER_SECONDS
from parkgate.http.models import SafeJSONResponse
from parkgate.http.outputs import EventsOut
from parkgate.http.tokens import Scope, needs

router = APIRouter(tags=["events"])

#: The columns of an export of events as CSV (``data`` as its JSON).
EVENT_EXPORT_COLUMNS = ("id", "seq", "at", "type", "ask_id", "sender", "data")
_STREAM_DOC: Responses = {
    200: {
        "description": "New events as server-sent events: `id` the event's global id, `event` its type, "
        "`data` its JSON (with `id`); a `: heartbeat` comment every 15 s while none arrives.",
        # Before OpenAPI 3.2, a stream's schema describes each of its events (its fields as text).
        "content": {
            EVENT_STREAM: {
                "schema": {
                    "type": "object",
                    "properties": {
                        "id": {"type": "string", "description": "The event's global id."},
                        "event": {"type": "string", "description": "The event's type."},
                        "data": {
                            "type": "string",
                            "contentMediaType": "application/json",
                            "description": "The event's JSON, with its id.",
                        },
                        "retry": {"type": "string", "description": "How soon to reconnect, in milliseconds."},
                    },
                }
            }
        },
    }
}


@router.get("/v1/asks/{ask_id}/events", response_model=EventsOut, responses=documented(404, *V1_ERRORS))
@needs(Scope.READ, or_owner=True)
async def ask_events(ask_id: str, gateway: GatewayDep, caller: CallerDep) -> Response:
    """The ask's timeline: every event, in order (``seq`` 1 first), each
    ``{"seq", "at", "type", "ask_id", "sender", "data"}``.

    Reading it is a read of the ask: one past its TTL closes as ``expired`` first, and its
    timeline ends with that close.
    """
    ask = await gateway.get(ask_id)
    if not caller.sees(ask):
        raise UnknownAsk(ask_id)
    events = await gateway.events(ask_id)
    return SafeJSONResponse({"ask_id": ask_id, "events": [event.to_json() for event in events]})


@router.get("/v1/events/stream", response_class=StreamingResponse, responses=documented(*V1_ERRORS, extra=_STREAM_DOC))
@needs(Scope.READ, or_owner=True)
async def event_stream(
    request: Request,
    gateway: GatewayDep,
    caller: CallerDep,
    polls: LongPollsDep,
    after: Annotated[int | None, Query(ge=0, description="Start after this event id (0: the first kept).")] = None,
    wait: Annotated[
        float, Query(gt=0, le=MAX_WAIT_SECONDS, allow_inf_nan=False, description="End the stream after S seconds.")
    ] = MAX_WAIT_SECONDS,
    last_event_id: Annotated[str | None, Header(alias="Last-Event-ID")] = None,
) -> Response:
    """New events of the log as they are written, as server-sent events (``text/event-stream``).

    Starts after the event ``Last-Event-ID`` names (what a reconnecting ``EventSource``
    sends), else after ``?after=``, else after the latest event now. Each event is
    ``id: <its global id>``, ``event: <its type>``, ``data: <its JSON>``; a comment goes
    out every 15 s while none arrives. A named token without ``operate`` gets its own
    asks' events only. The stream ends after ``wait`` seconds (at most 60; the client
    reconnects with ``Last-Event-ID``) or when the server stops, and counts against the
    server's cap on long-polls (429 ``too_many_long_polls``).
    """
    start = after
    if last_event_id is not None and last_event_id.strip():
        try:
            start = max(0, int(last_event_id.strip()))
        except ValueError:
            raise InputError(
                f"Last-Event-ID must be an event id (a whole number), not {last_event_id[:40]!r}"
            ) from None
    if polls.active >= polls.cap:  # refused before the stream starts: a 429, not an empty stream
        raise TooManyLongPolls(polls.cap, ENV_MAX_LONG_POLLS, RETRY_AFTER_SECONDS)
    if start is None:
        start = await gateway.last_event_id()
    headers = {"Cache-Control": "no-store", "X-Accel-Buffering": "no"}
    if request.method == "HEAD":
        return Response(media_type=EVENT_STREAM, headers=headers)
    app = request.app
    stream = follow(
        gateway,
        app.state.event_tail,
        polls,
        app.state.stopping,
        start=start,
        owner=caller.tenant,
        hold=wait,
    )
    return StreamingResponse(stream, media_type=EVENT_STREAM, headers=headers)


async def events_export_rows(
    gateway: AsyncGateway, since: datetime | None, until: datetime | None, owner: str | None
) -> AsyncIterator[dict[str, Any]]:
    """The events of ``[since, until)`` (only ``owner``'s asks' when given), oldest first,
    each its JSON with ``id``: what an export of events holds, read a page at a time.

    Args:
        gateway: The gateway whose log is read.
        since: The window's start (inclusive); ``None``: the first kept event.
        until: The window's end (exclusive); ``None``: the latest.
        owner: Only the events of this owner's asks.

    Yields:
        Each event's JSON (:meth:`~parkgate.core.events.LoggedEvent.to_json` with ``id``).
    """
    after = 0
    while True:
        page = await gateway.events_after(after, STREAM_PAGE, owner=owner, since=since, until=until)
        for event in page:
            yield event.to_json(with_id=True)
        if len(page) < STREAM_PAGE:
            return
        after = page[-1].id
