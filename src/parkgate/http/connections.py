"""Bounds on the connections ``parkgate serve`` holds: a time limit for a request head and
a cap on each peer's connections (:class:`ConnectionBoundsMixin`, in the uvicorn protocols
:class:`BoundedH11Protocol` and :class:`parkgate.http.fastparser.BoundedHttpToolsProtocol`).

uvicorn counts every open connection against ``--max-connections`` (its
``limit_concurrency``) and answers 503 to every request past it, so connections that never
send a request would keep everyone out. Here:

- **a request head has** :attr:`ConnectionBounds.head_timeout` **seconds to arrive**, on a
  new connection and again after each response (a kept-alive connection between requests
  is also closed by uvicorn's ``timeout_keep_alive``, 5 s). A connection whose head is not
  in by then is closed: an idle or trickling socket frees its slot.
- **one peer address holds at most** :attr:`ConnectionBounds.max_per_peer` **connections**
  in a server process; one more is answered ``503`` with ``Retry-After`` and closed at once,
  so one peer never takes every slot. Behind a reverse proxy every connection comes from
  the proxy: raise the cap to ``--max-connections`` there and bound peers at the proxy.

The settings come from the environment, where :func:`parkgate.http.server.serve` puts
them for every worker: :data:`ENV_HEAD_TIMEOUT` and :data:`ENV_MAX_PER_PEER`.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, cast

from uvicorn.config import Config
from uvicorn.protocols.http.h11_impl import H11Protocol
from uvicorn.server import ServerState

#: Seconds a connection has to send a complete request head (env override below).
ENV_HEAD_TIMEOUT = "PARKGATE_HEAD_TIMEOUT"
DEFAULT_HEAD_TIMEOUT_SECONDS = 10.0
#: The most connections one peer address holds in a server process (env override below).
ENV_MAX_PER_PEER = "PARKGATE_MAX_CONNECTIONS_PER_PEER"
#: Seconds a peer refused for holding too many connections is told to wait.
PEER_RETRY_AFTER_SECONDS = 1
_PEER_REFUSAL_BODY = b"Too many connections from this address; retry later.\n"
#: The answer to a connection past its peer's cap, written before it is closed.
PEER_REFUSAL = (
    b"HTTP/1.1 503 Service Unavailable\r\n"
    b"content-type: text/plain; charset=utf-8\r\n"
    b"retry-after: %d\r\n"
    b"connection: close\r\n"
    b"content-length: %d\r\n\r\n%s"
) % (PEER_RETRY_AFTER_SECONDS, len(_PEER_REFUSAL_BODY), _PEER_REFUSAL_BODY)


@dataclass(frozen=True)
class ConnectionBounds:
    """The bounds every connection of a server process is held to.

    ``max_per_peer`` ``None`` means no cap per peer (only ``--max-connections``).
    """

    head_timeout: float = DEFAULT_HEAD_TIMEOUT_SECONDS
    max_per_peer: int | None = None


def bounds_from_env(environ: Mapping[str, str] | None = None) -> ConnectionBounds:
    """The bounds the environment names; a missing or blank variable keeps the default.

    Raises :class:`ValueError` for a head timeout that is not a number of seconds above 0
    (at most 3600) or a per-peer cap that is not a whole number of at least 1.
    """
    env = os.environ if environ is None else environ
    bounds = ConnectionBounds()
    timeout_text = env.get(ENV_HEAD_TIMEOUT, "").strip()
    peer_text = env.get(ENV_MAX_PER_PEER, "").strip()
    head_timeout = parse_head_timeout(timeout_text) if timeout_text else bounds.head_timeout
    max_per_peer = parse_count(peer_text, ENV_MAX_PER_PEER) if peer_text else bounds.max_per_peer
    return ConnectionBounds(head_timeout=head_timeout, max_per_peer=max_per_peer)


def parse_head_timeout(value: str | float) -> float:
    """A head timeout in seconds: a number above 0 and at most 3600 (:class:`ValueError` otherwise)."""
    try:
        seconds = float(value)
    except (TypeError, ValueError):
        seconds = float("nan")
    if not 0 < seconds <= 3600:  # also refuses nan
        raise ValueError(f"{ENV_HEAD_TIMEOUT} must be a number of seconds above 0 and at most 3600, not {value!r}")
    return seconds


def parse_count(value: str | int, name: str) -> int:
    """A whole number of at least 1 for the setting ``name`` (:class:`ValueError` otherwise)."""
    try:
        count = int(value)
    except (TypeError, ValueError):
        count = 0
    if count < 1:
        raise ValueError(f"{name} must be a whole number of at least 1, not {value!r}")
    return count


class PeerCounts:
    """How many connections each peer address holds in this process."""

    def __init__(self) -> None:
        self._held: dict[str, int] = {}

    def join(self, peer: str, cap: int | None) -> bool:
        """Count one more connection of ``peer``; ``False`` (and not counted) at its ``cap``."""
        held = self._held.get(peer, 0)
        if cap is not None and held >= cap:
            return False
        self._held[peer] = held + 1
        return True

    def leave(self, peer: str) -> None:
        """Count one connection of ``peer`` fewer."""
        held = self._held.get(peer, 0) - 1
        if held > 0:
            self._held[peer] = held
        else:
            self._held.pop(peer, None)

    def held(self, peer: str) -> int:
        """The connections ``peer`` holds now."""
        return self._held.get(peer, 0)


#: The peers of this process's connections (a server process runs one event loop).
PEERS = PeerCounts()
_bounds: ConnectionBounds | None = None


def process_bounds() -> ConnectionBounds:
    """This process's bounds, read from the environment once."""
    global _bounds
    if _bounds is None:
        _bounds = bounds_from_env()
    return _bounds


class ConnectionBoundsMixin:
    """The head timeout and the per-peer cap, for any of uvicorn's HTTP protocol classes.

    Mixed in before the protocol class (``class P(ConnectionBoundsMixin, H11Protocol)``):
    the head timer is armed when the connection opens and after each response; when it
    fires while no request is in progress the connection is closed (a request in progress
    had its head in time). uvicorn makes one instance per connection.
    """

    # What the protocol class it is mixed into provides.
    cycle: Any
    client: tuple[str, int] | None
    transport: asyncio.Transport
    loop: asyncio.AbstractEventLoop
    logger: logging.Logger

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.bounds = process_bounds()
        self._peer: str | None = None
        self._head_timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        """Count the peer's connection (refusing one past its cap) and start the head timer."""
        super().connection_made(transport)  # type: ignore[misc]
        stream = cast(asyncio.Transport, transport)  # uvloop's transports are not asyncio's classes
        peer = self.client[0] if self.client else None
        if peer is not None:
            if not PEERS.join(peer, self.bounds.max_per_peer):
                self.logger.warning("Refused a connection: %s holds its %s.", peer, ENV_MAX_PER_PEER)
                stream.write(PEER_REFUSAL)
                stream.close()
                return
            self._peer = peer
        self._arm_head_timer()

    def connection_lost(self, exc: Exception | None) -> None:
        """Stop the head timer and count the peer's connection out."""
        self._stop_head_timer()
        if self._peer is not None:
            PEERS.leave(self._peer)
            self._peer = None
        super().connection_lost(exc)  # type: ignore[misc]

    def on_response_complete(self) -> None:
        """After each response the next request's head has the head timeout to arrive."""
        super().on_response_complete()  # type: ignore[misc]
        if not self.transport.is_closing():
            self._arm_head_timer()

    def _arm_head_timer(self) -> None:
        self._stop_head_timer()
        self._head_timer = self.loop.call_later(self.bounds.head_timeout, self._head_timed_out)

    def _stop_head_timer(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _head_timed_out(self) -> None:
        self._head_timer = None
        if self.cycle is not None and not self.cycle.response_complete:
            return  # a request is in progress: its head came in time
        if not self.transport.is_closing():
            self.logger.info("Closed a connection that sent no request head in %g s.", self.bounds.head_timeout)
            self.transport.close()


class BoundedH11Protocol(ConnectionBoundsMixin, H11Protocol):
    """uvicorn's h11 protocol with a head timeout and a per-peer cap (module docstring).

    h11 itself refuses (400, connection closed) a head that grows past uvicorn's
    ``h11_max_incomplete_event_size`` while it is incomplete.
    """

    def __init__(
        self,
        config: Config,
        server_state: ServerState,
        app_state: dict[str, Any],
        _loop: asyncio.AbstractEventLoop | None = None,
    ) -> None:
        super().__init__(config, server_state, app_state, _loop)
