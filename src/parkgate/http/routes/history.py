"""``/v1/stats`` and ``/v1/export``: the operator's figures of a window, and every ask or
every event of a window as CSV or JSON Lines.

Scoped as ``GET /v1/asks`` is (:attr:`~parkgate.http.tokens.Caller.tenant`): a tenant
token's figures and export hold its own asks only.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from datetime import datetime
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query
from fastapi.responses import Response, StreamingResponse

from parkgate.core.history import MAX_HISTORY_PAGE, HistoryQuery, HistoryStatus
from parkgate.core.model import AskShape
from parkgate.core.shape import public
from parkgate.errors import InputError
from parkgate.gateway import ask_to_dict
from parkgate.gateway.async_gateway import AsyncGateway
from parkgate.http.dependencies import CallerDep, GatewayDep
from parkgate.http.errors import V1_ERRORS, documented
from parkgate.http.models import SafeJSONResponse
from parkgate.http.outputs import StatsOut
from parkgate.http.routes.events import EVENT_EXPORT_COLUMNS, events_export_rows
from parkgate.http.tokens import Scope, needs

router = APIRouter(tags=["history"])

Since = Annotated[datetime | None, Query(description="The window's start (inclusive).")]
Until = Annotated[datetime | None, Query(description="The window's end (exclusive).")]
#: The columns of an export of asks: an ask's public JSON keys, in order.
ASK_EXPORT_COLUMNS: tuple[str, ...] = (*(item.wire for item in public(AskShape)), "next_due_at")
#: An export's media types, by format.
EXPORT_TYPES = {"csv": "text/csv; charset=utf-8", "jsonl": "application/x-ndjson"}


@router.get("/v1/stats", response_model=StatsOut, responses=documented(*V1_ERRORS))
@needs(Scope.READ)
async def stats(
    gateway: GatewayDep,
    caller: CallerDep,
    since: Since = None,
    until: Until = None,
    by: Annotated[Literal["day", "responder", "channel"] | None, Query(description="Figures per group too.")] = None,
) -> Response:
    """The figures of ``[since, until)``: ``{"since", "until", "by", "total", "groups", "truncated"}``.

    ``total`` and each group (``{"key", ...}``) hold ``opened``, ``answered``, ``expired``,
    ``cancelled``, ``time_to_answer`` (``p50``, ``p90``, ``p99`` in seconds, ``null`` when
    none, and ``count``), ``reminders``, ``escalations``, ``misses_per_ask`` and
    ``open_by_age`` (``<1h``, ``1-6h``, ``6-24h``, ``>24h``). Each is defined in
    :mod:`parkgate.core.stats`. A read: open asks past their TTL are closed as expired first.
    """
    figures = await gateway.stats(since, until, by, owner=caller.tenant)
    return SafeJSONResponse(figures.to_dict())


async def _ask_rows(
    gateway: AsyncGateway, since: datetime | None, until: datetime | None, owner: str | None
) -> AsyncIterator[dict[str, Any]]:
    """Every ask asked in ``[since, until)``, newest first, a page at a time (lapsed ones closed)."""
    query = HistoryQuery(status=HistoryStatus.ALL.value, since=since, until=until, owner=owner, limit=MAX_HISTORY_PAGE)
    while True:
        page = await gateway.history(query)
        for ask in page.asks:
            yield ask_to_dict(ask)
        if page.next_cursor is None:
            return
        query = query.next_page(page.next_cursor)


def _csv_line(row: Mapping[str, Any], columns: Iterable[str]) -> str:
    """One CSV line: plain values as they are, lists and objects as their JSON."""
    out = io.StringIO()
    cells = [row.get(name) for name in columns]
    csv.writer(out, lineterminator="\r\n").writerow(
        "" if cell is None else json.dumps(cell, ensure_ascii=False) if isinstance(cell, (list, dict)) else cell
        for cell in cells
    )
    return out.getvalue()


async def _encoded(
    rows: AsyncIterator[dict[str, Any]], form: str, columns: tuple[str, ...] | None
) -> AsyncIterator[bytes]:
    """``rows`` as the export's bytes: a CSV header and lines, or one JSON object a line."""
    header_sent = False
    async for row in rows:
        if form == "jsonl":
            yield (json.dumps(row, ensure_ascii=False) + "\n").encode()
            continue
        names = columns or tuple(row)
        if not header_sent:
            yield _csv_line({name: name for name in names}, names).encode()
            header_sent = True
        yield _csv_line(row, names).encode()
    if form == "csv" and not header_sent and columns:
        yield _csv_line({name: name for name in columns}, columns).encode()


@router.get(
    "/v1/export",
    response_class=StreamingResponse,
    responses=documented(
        *V1_ERRORS,
        extra={
            200: {
                "description": "The rows, as an attachment: CSV with a header line, or JSON Lines.",
                "content": {media.split(";")[0]: {"schema": {"type": "string"}} for media in EXPORT_TYPES.values()},
            }
        },
    ),
)
@needs(Scope.READ)
async def export(
    gateway: GatewayDep,
    caller: CallerDep,
    what: Annotated[Literal["asks", "events"], Query(description="asks, or events (the event log).")],
    format: Annotated[Literal["csv", "jsonl"], Query(description="CSV with a header line, or JSON Lines.")] = "jsonl",
    since: Since = None,
    until: Until = None,
) -> Response:
    """Every ask asked in ``[since, until)``, or every event written then, streamed as an attachment.

    Asks come newest first in their public JSON shape: in CSV one column per key (lists
    and objects as their JSON), in JSON Lines one object a line. A read: open asks past
    their TTL are closed as expired first. Events come oldest first (by ``id``), each its
    JSON with ``id``: in CSV the columns ``id, seq, at, type, ask_id, sender, data``
    (``data`` as its JSON).
    """
    for name, moment in (("since", since), ("until", until)):
        if moment is not None and moment.tzinfo is None:
            raise InputError(f"{name} must name its timezone (2026-05-01T00:00:00Z)")
    owner = caller.tenant
    source: Callable[..., AsyncIterator[dict[str, Any]]] = _ask_rows if what == "asks" else events_export_rows
    rows = source(gateway, since, until, owner)
    if what == "events":  # a store out of reach is a 503 before the response starts
        first = await anext(aiter(rows), None)
        rows = _chained(first, rows)
    columns = ASK_EXPORT_COLUMNS if what == "asks" else EVENT_EXPORT_COLUMNS
    stamp = gateway.sync.clock.now().strftime("%Y%m%dT%H%M%SZ")
    return StreamingResponse(
        _encoded(rows, format, columns),
        media_type=EXPORT_TYPES[format],
        headers={"Content-Disposition": f'attachment; filename="parkgate-{what}-{stamp}.{format}"'},
    )


async def _chained(first: dict[str, Any] | None, rest: AsyncIterator[dict[str, Any]]) -> AsyncIterator[dict[str, Any]]:
    if first is None:
        return
    yield first
    async for row in rest:
        yield row
