"""What :class:`~parkgate.adapters.approvals.ToolApprovals` calls, on a gateway or over HTTP.

The bridge makes the gateway calls in :data:`OVER_HTTP`, each one the clients offer under
the same name and arguments, so a :class:`~parkgate.client.AsyncClient` stands in for an
:class:`~parkgate.AsyncGateway` as it is, and a :class:`~parkgate.client.Client` does with
each call run in a worker thread. The agent's state is kept with its run on the server
(``/v1/runs/{run_id}/agent-state``). What needs the database itself (the watcher's close
signal) is refused with a message that says what to do.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, cast

from parkgate.errors import InputError
from parkgate.gateway import Gateway
from parkgate.gateway.async_gateway import AsyncGateway

#: The gateway calls the bridge makes, each a client method of that name.
OVER_HTTP = frozenset(
    {
        "ask",
        "handle",
        "get",
        "run",
        "cancel",
        "finish_run",
        "closed_follow_ups",
        "claim_follow_up",
        "follow_up_done",
        "keep_agent_state",
        "agent_state",
        "forget_agent_state",
    }
)


class Offloaded:
    """A :class:`~parkgate.client.Client` as the bridge's asyncio gateway: each call in
    :data:`OVER_HTTP` is the client's own, run in a worker thread; any other is refused.

    Args:
        client: The sync client.
    """

    def __init__(self, client: object) -> None:
        self.client = client

    def __getattr__(self, name: str) -> Callable[..., Awaitable[Any]]:
        if name.startswith("__") or name == "client":
            raise AttributeError(name)
        if name not in OVER_HTTP:
            raise InputError(f"{name} is not offered over HTTP: tool approvals on a Client make only their own calls")
        method = getattr(self.client, name)

        async def call(*args: Any, **options: Any) -> Any:
            return await asyncio.to_thread(method, *args, **options)

        return call


@dataclass(frozen=True, slots=True)
class Backend:
    """Where the bridge's calls go: ``calls`` (awaited; an :class:`AsyncGateway`, or a
    client standing in for one), ``local`` (the gateway on the database, for the close
    signal; ``None`` over HTTP) and, for an :class:`~parkgate.client.AsyncClient`, why the
    ``_sync`` methods are refused (its connections belong to the caller's event loop)."""

    calls: AsyncGateway
    local: Gateway | None = None
    no_sync: str | None = None


def backend(given: object) -> Backend:
    """The :class:`Backend` of a bridge on ``given``.

    Args:
        given: A :class:`Gateway`, an :class:`AsyncGateway`, a
            :class:`~parkgate.client.Client` or an :class:`~parkgate.client.AsyncClient`.

    Returns:
        Where its calls go.

    Raises:
        InputError: ``given`` is none of these.
    """
    if isinstance(given, AsyncGateway):
        return Backend(given, given.sync)
    if isinstance(given, Gateway):
        return Backend(AsyncGateway(given), given)
    from parkgate.client import AsyncClient, Client  # loads httpx: only for a client

    if isinstance(given, Client):
        return Backend(cast(AsyncGateway, Offloaded(given)))
    if isinstance(given, AsyncClient):
        refusal = (
            "tool approvals on an AsyncClient are awaited (run, handle, follow_up); give a Client for the _sync methods"
        )
        return Backend(cast(AsyncGateway, given), no_sync=refusal)
    named = type(given).__name__
    raise InputError(f"gateway must be a Gateway, an AsyncGateway, a Client or an AsyncClient, not {named}")
