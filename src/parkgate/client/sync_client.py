"""The blocking client: :class:`Client`, the gateway's calls over HTTP with ``httpx``."""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping, Sequence
from datetime import timedelta
from typing import Any, TypeVar

import httpx

from parkgate.checks import MAX_WAIT_SECONDS, wait_seconds
from parkgate.client import responses, wire
from parkgate.client.errors import Unreachable
from parkgate.client.views import AskPage, AskView
from parkgate.core.expect import Expect
from parkgate.core.kinds import AskKind
from parkgate.errors import UnknownRun
from parkgate.reply import Reply
from parkgate.store import Run

T = TypeVar("T")


class Client:
    """A parkgate server's ``/v1`` API as the :class:`~parkgate.Gateway`'s calls.

    ``base_url`` is where the server listens (``http://127.0.0.1:8080``; a trailing ``/``
    or ``/v1`` changes nothing, and a path prefix before it is kept); ``token`` is the
    bearer token when the server runs with tokens. ``timeout`` bounds each request in
    seconds (a long-poll's read gets its wait on top); ``long_poll`` is the longest one
    request of :meth:`wait` asks the server to hold (at most its cap, 60 s; less for a
    proxy that cuts idle requests sooner). ``transport`` is an ``httpx`` transport to send
    through (retries, a Unix socket, an ASGI app in-process). A bad argument raises
    :class:`~parkgate.errors.InputError` naming it.

    Errors the server answers with are raised as the library's exceptions
    (:class:`~parkgate.errors.AskAlreadyOpen`, :class:`~parkgate.errors.UnknownAsk`,
    :class:`~parkgate.errors.StoreUnavailable`, ...) or the client's own
    (:mod:`parkgate.client.errors`). ``with Client(...) as client:`` closes its
    connections on exit, as :meth:`close` does.
    """

    def __init__(
        self,
        base_url: str,
        token: str | None = None,
        *,
        timeout: float = wire.DEFAULT_TIMEOUT,
        transport: httpx.BaseTransport | None = None,
        long_poll: float = MAX_WAIT_SECONDS,
    ) -> None:
        self._connection = wire.connection(base_url, token, timeout, long_poll)
        self._http = httpx.Client(transport=transport, **self._connection.client_options())

    @property
    def base_url(self) -> str:
        """The server's base URL as the client uses it (ending in ``/``, without ``v1``)."""
        return str(self._connection.base_url)

    def close(self) -> None:
        """Close the client's connections; closing twice is harmless."""
        self._http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _send(self, call: wire.Call[T]) -> T:
        try:
            response = self._http.request(**self._connection.request_options(call))
        except httpx.HTTPError as error:
            raise Unreachable(str(error) or type(error).__name__) from error
        return responses.result(call, response)

    # -- parking ---------------------------------------------------------------------------
    def ask(
        self,
        conversation_id: str,
        prompt: str,
        options: Sequence[str] | None = None,
        kind: AskKind | str | None = None,
        run_id: str | None = None,
        ttl: timedelta | float | None = None,
        *,
        replace: bool = False,
        default: str | None = None,
        callback_url: str | None = None,
        expect: Expect | str | Mapping[str, Any] | None = None,
        context: Mapping[str, Any] | None = None,
    ) -> Reply:
        """Park a question in ``conversation_id`` (``POST /v1/asks``); the reply is ``asked``.

        The arguments are :meth:`Gateway.ask <parkgate.Gateway.ask>`'s: ``kind`` defaults to
        ``choice`` with options, else ``text``; ``ttl`` is a timedelta or seconds;
        ``default`` is recorded as the answer if the ask expires; ``callback_url`` gets
        the ask's JSON when it closes; ``expect`` is the form a text ask's answer must
        take; ``context`` (a JSON object) is kept and shown with the ask. Raises
        :class:`~parkgate.errors.AskAlreadyOpen` unless ``replace``.
        """
        call = wire.park(
            conversation_id, prompt, options, kind, run_id, ttl, replace, default, callback_url, expect, context
        )
        return self._send(call)

    def ask_from_text(
        self,
        conversation_id: str,
        skill_output: str,
        run_id: str | None = None,
        ttl: timedelta | float | None = None,
        *,
        replace: bool = False,
        callback_url: str | None = None,
    ) -> Reply:
        """Park the stopping point marked in a skill's output; output without one parks
        nothing and the reply is ``pass``."""
        return self._send(wire.park_text(conversation_id, skill_output, run_id, ttl, replace, callback_url))

    def start(self, conversation_id: str, workflow: str, *, replace: bool = False, run_id: str | None = None) -> Reply:
        """Start a workflow the server has registered (the demo is ``uml``): its first
        question is parked. :class:`~parkgate.errors.UnknownWorkflow` for another name."""
        return self._send(wire.start(conversation_id, workflow, replace, run_id))

    # -- replies ---------------------------------------------------------------------------
    def handle(self, conversation_id: str, text: str | bytes, message_id: str | None = None) -> Reply:
        """Match one inbound message against the conversation's parked ask.

        The same ``message_id`` sent again (after an :class:`~parkgate.client.errors.Unreachable`,
        say) returns the first reply and changes nothing.
        """
        return self._send(wire.message(conversation_id, text, message_id))

    # -- reads -----------------------------------------------------------------------------
    def get(self, ask_id: str) -> AskView:
        """One ask (closing it as ``expired`` if it is past its TTL); :class:`~parkgate.errors.UnknownAsk`."""
        return self._send(wire.read_ask(ask_id))

    def wait(self, ask_id: str, timeout: float | timedelta) -> AskView:
        """Wait until the ask closes or ``timeout`` passes; return it as it then is.

        Each request is a long-poll of at most ``long_poll`` seconds (the server's cap is
        60 s); a longer wait is a loop of them. A ``timeout`` of 0 or less reads once.
        """
        deadline = time.monotonic() + wait_seconds(timeout)
        while True:
            hold = wire.next_hold(deadline - time.monotonic(), self._connection.long_poll)
            ask = self._send(wire.read_ask(ask_id, hold))
            if not ask.is_open or time.monotonic() >= deadline:
                return ask

    def open_asks(self, limit: int = wire.DEFAULT_PAGE_ASKS, cursor: str | None = None) -> AskPage:
        """One page of open asks, oldest first, each with ``hours_open``: ``limit`` of them
        (at most 1,000) after ``cursor``, the ``next`` of the page before."""
        return self._send(wire.open_asks(limit, cursor))

    def iter_open_asks(self, page_size: int = wire.DEFAULT_PAGE_ASKS) -> Iterator[AskView]:
        """Every open ask, oldest first, read a page of ``page_size`` at a time as it is consumed."""
        cursor: str | None = None
        while True:
            page = self.open_asks(page_size, cursor)
            yield from page.asks
            if page.next is None:
                return
            cursor = page.next

    def run(self, run_id: str) -> Run | None:
        """The run (status, outcome, pending ask, a workflow's answers), or ``None`` if unknown."""
        try:
            return self._send(wire.run(run_id))
        except UnknownRun:
            return None

    def workflows(self) -> list[str]:
        """The names of the workflows the server can :meth:`start`."""
        return self._send(wire.workflows())

    def failed_callbacks(self, limit: int = wire.DEFAULT_PAGE_ASKS) -> list[AskView]:
        """Asks whose callback was given up on, the latest failure first."""
        return self._send(wire.failed_callbacks(limit))

    # -- operating -------------------------------------------------------------------------
    def cancel(self, ask_id: str) -> AskView:
        """An operator's cancel: the ask closes as ``cancelled`` (a closed one comes back as it is)."""
        return self._send(wire.cancel(ask_id))

    def finish_run(self, run_id: str, outcome: str = "done") -> Run:
        """Mark a run complete with ``outcome``; :class:`~parkgate.errors.RunStillAsking` while
        its ask is open, :class:`~parkgate.errors.UnknownRun` for an unknown id."""
        return self._send(wire.finish_run(run_id, outcome))

    def retry_callback(self, ask_id: str) -> AskView:
        """Re-arm the ask's failed callback (due now, attempts from 0); the ask comes back with
        its ``callback``. :class:`~parkgate.errors.CallbackNotFailed` unless it had failed."""
        return self._send(wire.retry_callback(ask_id))
