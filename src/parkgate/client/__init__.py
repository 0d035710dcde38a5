"""A typed client for a parkgate server: the gateway's calls over HTTP, sync and asyncio.

How to use it::

    from parkgate.client import Client

    with Client("http://127.0.0.1:8080", token="...") as client:
        reply = client.ask("chat-1", "Deploy now?", ["Yes", "No"])   # reply.kind is ReplyKind.ASKED
        client.handle("chat-1", "1")                                # ReplyKind.SELECTED
        ask = client.wait(reply.ask_id, timeout=300)                # AskView: status, answer, ...
        for open_ask in client.iter_open_asks():                    # every page, oldest first
            print(open_ask.ask_id, open_ask.hours_open)

    async with AsyncClient("http://127.0.0.1:8080") as client:      # the same calls, awaited
        reply = await client.handle("chat-1", "menu")

The calls are the :class:`~parkgate.Gateway`'s: ``ask``, ``ask_from_text``, ``start``,
``handle`` (each a :class:`~parkgate.Reply`), ``get``, ``wait`` (an :class:`AskView`,
the ask's JSON typed; ``wait`` long-polls and loops past the server's 60 s cap),
``open_asks`` (one :class:`AskPage`; ``iter_open_asks`` walks them all), ``cancel``,
``run`` and ``finish_run`` (a :class:`~parkgate.store.Run`), ``retry_callback``,
``failed_callbacks`` and ``workflows``. The base URL may end in ``/`` or ``/v1``.

Errors come back as the exceptions the library raises (:class:`~parkgate.errors.AskAlreadyOpen`,
:class:`~parkgate.errors.UnknownAsk`, :class:`~parkgate.errors.InputError`,
:class:`~parkgate.errors.StoreUnavailable`, ...), or as the client's own for what only
HTTP has (:class:`Unauthorized`, :class:`Forbidden` with the missing ``scope``,
:class:`RateLimited` with ``retry_after``, :class:`Unreachable`, ...): the tree is in
:mod:`parkgate.client.errors`. All of them derive from
:class:`~parkgate.errors.ParkgateError`.
"""

from parkgate.client.async_client import AsyncClient
from parkgate.client.errors import (
    BadRequest,
    BodyTooLarge,
    ClientError,
    ErrorResponse,
    Forbidden,
    InvalidRequest,
    NotFound,
    RateLimited,
    ServerError,
    TooManyOpenAsks,
    Unauthorized,
    UnexpectedResponse,
    Unreachable,
    UnsupportedMediaType,
)
from parkgate.client.sync_client import Client
from parkgate.client.views import AskPage, AskView

__all__ = [
    "AskPage",
    "AskView",
    "AsyncClient",
    "BadRequest",
    "BodyTooLarge",
    "Client",
    "ClientError",
    "ErrorResponse",
    "Forbidden",
    "InvalidRequest",
    "NotFound",
    "RateLimited",
    "ServerError",
    "TooManyOpenAsks",
    "Unauthorized",
    "UnexpectedResponse",
    "Unreachable",
    "UnsupportedMediaType",
]
