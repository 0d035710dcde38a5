"""A bridge on an HTTP client: a :class:`~parkgate.client.Client` or an
:class:`~parkgate.client.AsyncClient` in the gateway's place.

The steps of ``start``, ``park``, ``drive`` and ``follow_up`` make gateway calls the
clients offer under the same names and arguments (:data:`OVER_HTTP`), so the client
stands in for the gateway as it is. What needs the database itself (the watcher's close
signal, a deliverer) is refused with a message that says what to do.
"""

from __future__ import annotations

from typing import Any, cast

from parkgate.errors import InputError
from parkgate.gateway import Gateway
from parkgate.gateway.async_gateway import AsyncGateway

#: The gateway calls a bridge's start, park, drive and follow_up make, each a client method of that name.
OVER_HTTP = frozenset(
    {
        "ask",
        "handle",
        "get",
        "parked",
        "cancel",
        "run",
        "finish_run",
        "record_run",
        "closed_follow_ups",
        "claim_follow_up",
        "follow_up_done",
    }
)
#: What a bridge on a client does not do, and what to use instead.
LOCAL_ONLY = (
    "a bridge on a Client starts, parks, drives and follows up threads over HTTP; the watcher "
    "(watch, running: the close signal and a deliverer) needs a Gateway on the database "
    "(docs/adapters/langgraph.md)"
)


class OverHttp:
    """A client as the bridge's gateway: the calls in :data:`OVER_HTTP` are the client's own.

    Args:
        client: A :class:`~parkgate.client.Client` (for the sync methods) or an
            :class:`~parkgate.client.AsyncClient` (for the ``a``-prefixed ones).
        refusal: Why any other attribute is refused.
    """

    def __init__(self, client: object, refusal: str = LOCAL_ONLY) -> None:
        self.client = client
        self.refusal = refusal

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or name in ("client", "refusal"):
            raise AttributeError(name)
        if name not in OVER_HTTP or self.client is None:
            raise InputError(f"{name} is not offered here: {self.refusal}")
        return getattr(self.client, name)


def backends(given: object) -> tuple[Gateway, AsyncGateway]:
    """The sync and the asyncio gateway of a bridge on ``given``.

    Args:
        given: A :class:`Gateway`, an :class:`AsyncGateway`, a
            :class:`~parkgate.client.Client` or an :class:`~parkgate.client.AsyncClient`.

    Returns:
        The gateway the sync methods call and the one the ``a``-prefixed methods await.
        For a client, an :class:`OverHttp` stands in for each (duck-typed: the bridge's
        steps call only the methods the client offers); the other kind of method is
        refused with a message naming the client to give instead.

    Raises:
        InputError: ``given`` is none of these.
    """
    if isinstance(given, AsyncGateway):
        return given.sync, given
    if isinstance(given, Gateway):
        return given, AsyncGateway(given)
    from parkgate.client import AsyncClient, Client  # loads httpx: only for a client

    if isinstance(given, Client):
        refused = OverHttp(None, "a bridge on a Client serves the sync methods; give an AsyncClient for these")
        return cast(Gateway, OverHttp(given)), cast(AsyncGateway, refused)
    if isinstance(given, AsyncClient):
        refused = OverHttp(None, "a bridge on an AsyncClient serves the a-prefixed methods; give a Client for these")
        return cast(Gateway, refused), cast(AsyncGateway, OverHttp(given))
    named = type(given).__name__
    raise InputError(f"gateway must be a Gateway, an AsyncGateway, a Client or an AsyncClient, not {named}")
