"""The asyncio client: :class:`AsyncClient`, every :class:`~parkgate.client.Client` call, awaited."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Sequence
from datetime import datetime, timedelta
from typing import Any, TypeVar, Unpack

import httpx

from parkgate.client import responses, stream, wire
from parkgate.client.errors import Unreachable
from parkgate.client.views import AskPage, AskView
from parkgate.core.events import LoggedEvent
from parkgate.core.history import HistoryQuery
from parkgate.core.kinds import AskKind
from parkgate.core.model import Reply, Run
from parkgate.core.stats import Stats
from parkgate.errors import UnknownRun
from parkgate.gateway.checks import MAX_WAIT_SECONDS, wait_seconds
from parkgate.gateway.options import ClientAskFields, ParkFields, RunFields

T = TypeVar("T")


class AsyncClient:
    """The same client for asyncio code: every :class:`~parkgate.client.Client` call, awaited.

    The arguments, results and errors are :class:`~parkgate.client.Client`'s. A
    :meth:`wait` holds no thread: it awaits its long-polls. ``async with AsyncClient(...)
    as client:`` closes its connections on exit, as ``await client.aclose()`` does.

    Args:
        transport: An ``httpx`` async transport to send through.
    """

    def __init__(
        self,
        base_url: str,
        token: str | None = None,
        *,
        timeout: float = wire.DEFAULT_TIMEOUT,
        transport: httpx.AsyncBaseTransport | None = None,
        long_poll: float = MAX_WAIT_SECONDS,
    ) -> None:
        self._connection = wire.connection(base_url, token, timeout, long_poll)
        self._http = httpx.AsyncClient(transport=transport, **self._connection.client_options())

    @property
    def base_url(self) -> str:
        """The server's base URL as the client uses it (ending in ``/``, without ``v1``)."""
        return str(self._connection.base_url)

    async def aclose(self) -> None:
        """Close the client's connections; closing twice is harmless."""
        await self._http.aclose()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def _send(self, call: wire.Call[T]) -> T:
        try:
            response = await self._http.request(**self._connection.request_options(call))
        except httpx.HTTPError as error:
            raise Unreachable(str(error) or type(error).__name__) from error
        return responses.result(call, response)

    async def ask(
        self,
        conversation_id: str,
        prompt: str,
        options: Sequence[str] | None = None,
        kind: AskKind | str | None = None,
        **fields: Unpack[ClientAskFields],
    ) -> Reply:
        """As :meth:`Client.ask <parkgate.client.Client.ask>`.

        Args:
            conversation_id: The conversation to park in.
            prompt: The question to show.
            options: The labels of a choice ask.
            kind: ``choice`` or ``text``; ``choice`` when ``options`` are given, else ``text``.
            **fields: The ask's options and the channel to post it on
                (:class:`~parkgate.gateway.options.ClientAskFields`).

        Returns:
            The ``asked`` reply.

        Raises:
            AskAlreadyOpen: An ask is open in the conversation and ``replace`` is false.
            InputError: An argument is not usable, here or by the server's checks.
        """
        return await self._send(wire.park(conversation_id, prompt, options, kind, fields))

    async def ask_from_text(self, conversation_id: str, skill_output: str, **fields: Unpack[ParkFields]) -> Reply:
        """As :meth:`Client.ask_from_text <parkgate.client.Client.ask_from_text>`.

        Args:
            conversation_id: The conversation to park in.
            skill_output: Text holding one stopping point.
            **fields: ``run_id``, ``ttl``, ``replace`` and ``callback_url``
                (:class:`~parkgate.gateway.options.ParkFields`).

        Returns:
            The ``asked`` reply, or ``pass`` when the output marks no stopping point.

        Raises:
            AskAlreadyOpen: An ask is open in the conversation and ``replace`` is false.
            InputError: An argument is not usable.
        """
        return await self._send(wire.park_text(conversation_id, skill_output, fields))

    async def start(self, conversation_id: str, workflow: str, **fields: Unpack[RunFields]) -> Reply:
        """As :meth:`Client.start <parkgate.client.Client.start>`.

        Args:
            conversation_id: The conversation to park the first question in.
            workflow: The workflow's name.
            **fields: ``run_id`` and ``replace`` (:class:`~parkgate.gateway.options.RunFields`).

        Returns:
            The ``asked`` reply of the first question.

        Raises:
            UnknownWorkflow: The server has no workflow of that name.
            AskAlreadyOpen: An ask is open in the conversation and ``replace`` is false.
        """
        return await self._send(wire.start(conversation_id, workflow, fields))

    async def handle(
        self,
        conversation_id: str,
        text: str | bytes,
        message_id: str | None = None,
        sender: str | None = None,
        *,
        ask_id: str | None = None,
    ) -> Reply:
        """As :meth:`Client.handle <parkgate.client.Client.handle>`."""
        return await self._send(wire.message(conversation_id, text, message_id, sender, ask_id))

    async def get(self, ask_id: str) -> AskView:
        """As :meth:`Client.get <parkgate.client.Client.get>`."""
        return await self._send(wire.read_ask(ask_id))

    async def wait(self, ask_id: str, timeout: float | timedelta) -> AskView:
        """As :meth:`Client.wait <parkgate.client.Client.wait>`: long-polls, awaited in turn."""
        deadline = time.monotonic() + wait_seconds(timeout)
        while True:
            hold = wire.next_hold(deadline - time.monotonic(), self._connection.long_poll)
            ask = await self._send(wire.read_ask(ask_id, hold))
            if not ask.is_open or time.monotonic() >= deadline:
                return ask

    async def open_asks(
        self,
        limit: int = wire.DEFAULT_PAGE_ASKS,
        cursor: str | None = None,
        *,
        conversation_id: str | None = None,
        owner: str | None = None,
    ) -> AskPage:
        """As :meth:`Client.open_asks <parkgate.client.Client.open_asks>`."""
        return await self._send(wire.open_asks(limit, cursor, conversation_id, owner))

    async def history(self, query: HistoryQuery | None = None, **filters: Any) -> AskPage:
        """As :meth:`Client.history <parkgate.client.Client.history>`."""
        return await self._send(wire.history(wire.history_query(query, filters)))

    async def stats(self, since: datetime | None = None, until: datetime | None = None, by: str | None = None) -> Stats:
        """As :meth:`Client.stats <parkgate.client.Client.stats>`."""
        return await self._send(wire.stats(since, until, by))

    async def parked(self, conversation_id: str, wait: float | timedelta = 0) -> AskView | None:
        """As :meth:`Client.parked <parkgate.client.Client.parked>`: long-polls, awaited in turn."""
        deadline = time.monotonic() + wait_seconds(wait)
        while True:
            hold = wire.next_hold(deadline - time.monotonic(), self._connection.long_poll)
            ask = await self._send(wire.parked(conversation_id, hold))
            if ask is not None or time.monotonic() >= deadline:
                return ask

    async def iter_open_asks(self, page_size: int = wire.DEFAULT_PAGE_ASKS) -> AsyncIterator[AskView]:
        """As :meth:`Client.iter_open_asks <parkgate.client.Client.iter_open_asks>`: ``async for``."""
        cursor: str | None = None
        while True:
            page = await self.open_asks(page_size, cursor)
            for ask in page.asks:
                yield ask
            if page.next is None:
                return
            cursor = page.next

    async def run(self, run_id: str) -> Run | None:
        """As :meth:`Client.run <parkgate.client.Client.run>`."""
        try:
            return await self._send(wire.run(run_id))
        except UnknownRun:
            return None

    async def workflows(self) -> list[str]:
        """As :meth:`Client.workflows <parkgate.client.Client.workflows>`."""
        return await self._send(wire.workflows())

    async def failed_callbacks(self, limit: int = wire.DEFAULT_PAGE_ASKS) -> list[AskView]:
        """As :meth:`Client.failed_callbacks <parkgate.client.Client.failed_callbacks>`."""
        return await self._send(wire.failed_callbacks(limit))

    async def cancel(self, ask_id: str, *, outcome: str = "cancelled", reason: str | None = None) -> AskView:
        """As :meth:`Client.cancel <parkgate.client.Client.cancel>`."""
        return await self._send(wire.cancel(ask_id, outcome, reason))

    async def record_run(self, run_id: str, conversation_id: str, outcome: str) -> Run:
        """Record a run that ended before it asked anything (:meth:`Client.record_run`)."""
        return await self._send(wire.record_run(run_id, conversation_id, outcome))

    async def finish_run(self, run_id: str, outcome: str = "done", *, output: Any = None) -> Run:
        """As :meth:`Client.finish_run <parkgate.client.Client.finish_run>`."""
        return await self._send(wire.finish_run(run_id, outcome, output))

    async def keep_agent_state(self, run_id: str, state: str) -> None:
        """Keep an agent SDK's state with the run (:meth:`Client.keep_agent_state`)."""
        await self._send(wire.keep_agent_state(run_id, state))

    async def agent_state(self, run_id: str) -> str | None:
        """The agent state kept with the run, or ``None`` (:meth:`Client.agent_state`)."""
        return await self._send(wire.agent_state(run_id))

    async def forget_agent_state(self, run_id: str) -> None:
        """Remove the agent state kept with the run (:meth:`Client.forget_agent_state`)."""
        await self._send(wire.forget_agent_state(run_id))

    async def closed_follow_ups(
        self, limit: int = wire.DEFAULT_PAGE_ASKS, *, watcher: str | None = None, after: str | None = None
    ) -> list[AskView]:
        """Closed asks whose follow-up is pending (:meth:`Client.closed_follow_ups`)."""
        return await self._send(wire.closed_follow_ups(limit, watcher, after))

    async def claim_follow_up(self, ask_id: str, lease: timedelta | float) -> bool:
        """Take an ask's follow-up for ``lease`` (:meth:`Client.claim_follow_up`)."""
        return await self._send(wire.claim_follow_up(ask_id, lease))

    async def follow_up_done(self, ask_id: str) -> None:
        """Mark an ask's follow-up done (:meth:`Client.follow_up_done`)."""
        await self._send(wire.follow_up_done(ask_id))

    async def retry_callback(self, ask_id: str) -> AskView:
        """As :meth:`Client.retry_callback <parkgate.client.Client.retry_callback>`."""
        return await self._send(wire.retry_callback(ask_id))

    async def events(self, ask_id: str) -> list[LoggedEvent]:
        """As :meth:`Client.events <parkgate.client.Client.events>`."""
        return await self._send(wire.ask_events(ask_id))

    async def follow_events(
        self, after: int | None = None, *, hold: float = MAX_WAIT_SECONDS
    ) -> AsyncIterator[LoggedEvent]:
        """As :meth:`Client.follow_events <parkgate.client.Client.follow_events>`: ``async for``."""
        parser = stream.EventParser(last_id=after)
        tries = 0
        while True:
            call = wire.event_stream(parser.last_id, hold)
            parser.restart()
            retry_after: float | None = None
            try:
                async with self._http.stream(**self._connection.request_options(call)) as response:
                    if not response.is_success:
                        await response.aread()
                        responses.result(call, response)
                    tries = 0
                    async for line in response.aiter_lines():
                        event = parser.feed(line)
                        if event is not None:
                            yield event
                continue  # the stream ended after its hold: reconnect at once
            except httpx.HTTPError as error:
                failure: Exception = Unreachable(str(error) or type(error).__name__)
            except stream.RECONNECTABLE as error:
                failure, retry_after = error, getattr(error, "retry_after", None)
            tries += 1
            if tries >= stream.RECONNECT_TRIES:
                raise failure
            await asyncio.sleep(stream.pause_before_retry(tries, parser.retry_seconds, retry_after))

    async def export_events(
        self, since: datetime | None = None, until: datetime | None = None
    ) -> AsyncIterator[LoggedEvent]:
        """As :meth:`Client.export_events <parkgate.client.Client.export_events>`: ``async for``."""
        call = wire.event_export(since, until)
        try:
            async with self._http.stream(**self._connection.request_options(call)) as response:
                if not response.is_success:
                    await response.aread()
                    responses.result(call, response)
                async for line in response.aiter_lines():
                    if line.strip():
                        yield stream.read_event(line)
        except httpx.HTTPError as error:
            raise Unreachable(str(error) or type(error).__name__) from error
