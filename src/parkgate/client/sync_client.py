"""The blocking client: :class:`Client`, the gateway's calls over HTTP with ``httpx``."""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
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


class Client:
    """A parkgate server's ``/v1`` API as the :class:`~parkgate.Gateway`'s calls.

    Errors the server answers with are raised as the library's exceptions
    (:class:`~parkgate.errors.AskAlreadyOpen`, :class:`~parkgate.errors.UnknownAsk`,
    :class:`~parkgate.errors.StoreUnavailable`, ...) or the client's own
    (:mod:`parkgate.client.errors`). ``with Client(...) as client:`` closes its
    connections on exit, as :meth:`close` does.

    Args:
        base_url: Where the server listens (``http://127.0.0.1:8080``; a trailing ``/``
            or ``/v1`` changes nothing, and a path prefix before it is kept).
        token: The bearer token, when the server runs with tokens.
        timeout: Bounds each request in seconds (a long-poll's read gets its wait on top).
        transport: An ``httpx`` transport to send through (retries, a Unix socket, an
            ASGI app in-process).
        long_poll: The longest one request of :meth:`wait` asks the server to hold (at
            most its cap, 60 s; less for a proxy that cuts idle requests sooner).

    Raises:
        InputError: An argument is bad; the message names it.
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
        **fields: Unpack[ClientAskFields],
    ) -> Reply:
        """Park a question in ``conversation_id`` (``POST /v1/asks``); the reply is ``asked``.

        The arguments are :meth:`Gateway.ask <parkgate.Gateway.ask>`'s, less those the
        server decides (``owner`` is its token's name).

        Args:
            conversation_id: The conversation to park in.
            prompt: The question to show.
            options: The labels of a choice ask.
            kind: ``choice`` or ``text``; ``choice`` when ``options`` are given, else ``text``.
            **fields: ``run_id``, ``ttl`` (a timedelta or seconds), ``replace``,
                ``callback_url`` (gets the ask's JSON when it closes), ``default`` (recorded
                as the answer if the ask expires), ``expect`` (the form a text ask's answer
                must take), ``context`` (a JSON object kept and shown with the ask),
                ``phase``, ``responders`` (who may answer: sender ids; anyone when left
                out), ``quorum`` (how many responders must agree on one option),
                ``remind_after``, ``escalate_after`` and ``escalate_to`` (reminders before
                the ask expires and whom it escalates to: :class:`~parkgate.ScheduleFields`),
                ``follow_up`` (a waiter claims the closed ask's follow-up; a string names it) and
                ``key`` (an idempotency key: a park with a key this token parked before
                returns that ask, ``parked`` false once it closed), and ``post_to`` (a
                :class:`~parkgate.channels.ChannelTarget`, as the library takes it) or a
                registered channel's key (``slack={"channel": "C123", "thread_ts": ...}``,
                ``telegram={"chat_id": 42}``, as ``POST /v1/asks`` takes it) to post the ask
                on a channel the server serves (:meth:`get` then shows where), as
                :class:`~parkgate.gateway.options.ClientAskFields` says.

        Returns:
            The ``asked`` reply.

        Raises:
            AskAlreadyOpen: An ask is open in the conversation and ``replace`` is false.
            InputError: An argument is not usable, here or by the server's checks.
        """
        return self._send(wire.park(conversation_id, prompt, options, kind, fields))

    def ask_from_text(self, conversation_id: str, skill_output: str, **fields: Unpack[ParkFields]) -> Reply:
        """Park the stopping point marked in a skill's output.

        Args:
            conversation_id: The conversation to park in.
            skill_output: Text holding one stopping point.
            **fields: ``run_id``, ``ttl``, ``replace``, ``callback_url`` and ``key``, as in :meth:`ask`
                (:class:`~parkgate.gateway.options.ParkFields`).

        Returns:
            The ``asked`` reply, or ``pass`` when the output marks no stopping point (nothing is parked).

        Raises:
            AskAlreadyOpen: An ask is open in the conversation and ``replace`` is false.
            InputError: An argument is not usable.
        """
        return self._send(wire.park_text(conversation_id, skill_output, fields))

    def start(self, conversation_id: str, workflow: str, **fields: Unpack[RunFields]) -> Reply:
        """Start a workflow the server has registered (the demo is ``uml``): its first question is parked.

        Args:
            conversation_id: The conversation to park the first question in.
            workflow: The workflow's name.
            **fields: ``run_id`` and ``replace``, as in :meth:`ask` (:class:`~parkgate.gateway.options.RunFields`).

        Returns:
            The ``asked`` reply of the first question.

        Raises:
            UnknownWorkflow: The server has no workflow of that name.
            AskAlreadyOpen: An ask is open in the conversation and ``replace`` is false.
        """
        return self._send(wire.start(conversation_id, workflow, fields))

    # -- replies ---------------------------------------------------------------------------
    def handle(
        self,
        conversation_id: str,
        text: str | bytes,
        message_id: str | None = None,
        sender: str | None = None,
        *,
        ask_id: str | None = None,
    ) -> Reply:
        """Match one inbound message against the conversation's parked ask.

        Args:
            conversation_id: The conversation the message arrived in.
            text: What the person wrote (bytes must be UTF-8).
            message_id: The message's id: sent again (after an
                :class:`~parkgate.client.errors.Unreachable`, say) it returns the first
                reply and changes nothing.
            sender: Who wrote it (a user id, an email). On an ask with responders, only
                theirs count (anyone else's is ``not_yours``); a token bound to a sender
                posts as that sender, and naming another is a 403 ``sender_mismatch``.
            ask_id: The ask the message answers: it goes to that ask only, and once that
                ask has closed the reply is ``late``, saying how and when it closed.

        Returns:
            What the gateway did, by kind; ``pass`` when nothing was parked.
        """
        return self._send(wire.message(conversation_id, text, message_id, sender, ask_id))

    # -- reads -----------------------------------------------------------------------------
    def get(self, ask_id: str) -> AskView:
        """One ask, closing it as ``expired`` if it is past its TTL.

        Args:
            ask_id: The ask's id.

        Returns:
            The ask as it is after this read.

        Raises:
            UnknownAsk: No ask has this id (or it is another owner's).
        """
        return self._send(wire.read_ask(ask_id))

    def wait(self, ask_id: str, timeout: float | timedelta) -> AskView:
        """Wait until the ask closes or ``timeout`` passes.

        Each request is a long-poll of at most ``long_poll`` seconds (the server's cap is
        60 s); a longer wait is a loop of them.

        Args:
            ask_id: The ask to wait for.
            timeout: A timedelta or seconds; 0 or less reads once.

        Returns:
            The ask as it then is: closed, or still open when ``timeout`` passed.

        Raises:
            UnknownAsk: No ask has this id (or it is another owner's).
        """
        deadline = time.monotonic() + wait_seconds(timeout)
        while True:
            hold = wire.next_hold(deadline - time.monotonic(), self._connection.long_poll)
            ask = self._send(wire.read_ask(ask_id, hold))
            if not ask.is_open or time.monotonic() >= deadline:
                return ask

    def open_asks(
        self,
        limit: int = wire.DEFAULT_PAGE_ASKS,
        cursor: str | None = None,
        *,
        conversation_id: str | None = None,
        owner: str | None = None,
    ) -> AskPage:
        """One page of open asks, oldest first, each with ``hours_open``.

        Args:
            limit: The most asks on the page (at most 1,000).
            cursor: The ``next`` of the page before; ``None`` for the first page.
            conversation_id: Only this conversation's open ask (at most one).
            owner: Only the asks the token of this name parked.

        Returns:
            The page: its asks, and the cursor of the next page (``None`` after the last).
        """
        return self._send(wire.open_asks(limit, cursor, conversation_id, owner))

    def history(self, query: HistoryQuery | None = None, **filters: Any) -> AskPage:
        """One page of asks of any status (``GET /v1/asks``), as :meth:`Gateway.history
        <parkgate.Gateway.history>` lists them; the server closes the lapsed asks it finds.

        Args:
            query: The filters (:class:`~parkgate.core.history.HistoryQuery`); ``None``:
                made from ``filters``.
            **filters: ``HistoryQuery``'s fields (``status``, ``since``, ``until``,
                ``conversation_id``, ``responder``, ``channel``, ``outcome``, ``owner``,
                ``q``, ``limit``, ``cursor``), over ``query``'s.

        Returns:
            The page: its asks and ``next`` (also ``next_cursor``), ``None`` after the last.
        """
        return self._send(wire.history(wire.history_query(query, filters)))

    def stats(self, since: datetime | None = None, until: datetime | None = None, by: str | None = None) -> Stats:
        """The operator's figures for ``[since, until)`` (``GET /v1/stats``), as
        :meth:`Gateway.stats <parkgate.Gateway.stats>` computes them.

        Args:
            since: The window's start (timezone-aware), or ``None``.
            until: The window's end (exclusive), or ``None``.
            by: ``"day"``, ``"responder"`` or ``"channel"``: figures per group too.

        Returns:
            The figures, in all and per group.
        """
        return self._send(wire.stats(since, until, by))

    def parked(self, conversation_id: str, wait: float | timedelta = 0) -> AskView | None:
        """The conversation's open ask (``GET /v1/conversations/{id}``), as a surface looks for it.

        Args:
            conversation_id: The conversation to look at.
            wait: How long to wait while nothing is parked there (a timedelta or seconds;
                long-polls of at most ``long_poll`` seconds each); 0 reads once.

        Returns:
            The open ask, or ``None`` when nothing is parked (still, once ``wait`` passed).
        """
        deadline = time.monotonic() + wait_seconds(wait)
        while True:
            hold = wire.next_hold(deadline - time.monotonic(), self._connection.long_poll)
            ask = self._send(wire.parked(conversation_id, hold))
            if ask is not None or time.monotonic() >= deadline:
                return ask

    def iter_open_asks(self, page_size: int = wire.DEFAULT_PAGE_ASKS) -> Iterator[AskView]:
        """Every open ask, oldest first, read a page at a time as it is consumed.

        Args:
            page_size: How many asks each request reads.

        Yields:
            Each open ask.
        """
        cursor: str | None = None
        while True:
            page = self.open_asks(page_size, cursor)
            yield from page.asks
            if page.next is None:
                return
            cursor = page.next

    def run(self, run_id: str) -> Run | None:
        """The run (status, outcome, pending ask, a workflow's answers).

        Args:
            run_id: The run's id.

        Returns:
            The run, or ``None`` if unknown.
        """
        try:
            return self._send(wire.run(run_id))
        except UnknownRun:
            return None

    def workflows(self) -> list[str]:
        """The names of the workflows the server can :meth:`start`.

        Returns:
            Those names.
        """
        return self._send(wire.workflows())

    def failed_callbacks(self, limit: int = wire.DEFAULT_PAGE_ASKS) -> list[AskView]:
        """Asks whose callback was given up on, the latest failure first.

        Args:
            limit: The most asks returned.

        Returns:
            Those asks, each with its ``callback``.
        """
        return self._send(wire.failed_callbacks(limit))

    # -- operating -------------------------------------------------------------------------
    def cancel(self, ask_id: str, *, outcome: str = "cancelled", reason: str | None = None) -> AskView:
        """An operator's cancel: the ask closes as ``cancelled``.

        Args:
            ask_id: The ask to cancel.
            outcome: An id-like string recorded on the ask and its run that says why
                (``abandoned``, say), as :meth:`Gateway.cancel <parkgate.Gateway.cancel>` takes.
            reason: Why, in words: kept with the close in the ask's event log.

        Returns:
            The ask as it is now (a closed one comes back as it was).

        Raises:
            UnknownAsk: No ask has this id.
        """
        return self._send(wire.cancel(ask_id, outcome, reason))

    def record_run(self, run_id: str, conversation_id: str, outcome: str) -> Run:
        """Record a run that ended before it asked anything, as complete with ``outcome``.

        Args:
            run_id: The run's id, new to the server.
            conversation_id: The conversation the run belonged to.
            outcome: An id-like string recorded on the run.

        Returns:
            The run, recorded as complete (owned by this token).
        """
        return self._send(wire.record_run(run_id, conversation_id, outcome))

    def finish_run(self, run_id: str, outcome: str = "done", *, output: Any = None) -> Run:
        """Mark a run complete once the work after its last answer is done.

        Args:
            run_id: The run to finish.
            outcome: An id-like string recorded on the run.
            output: What the run gave (an agent's final output), any JSON value, kept on
                the run; ``None`` keeps what was recorded before.

        Returns:
            The run, now complete.

        Raises:
            RunStillAsking: The run's ask is open.
            UnknownRun: No run has this id.
        """
        return self._send(wire.finish_run(run_id, outcome, output))

    def keep_agent_state(self, run_id: str, state: str) -> None:
        """Keep an agent SDK's serialised state with the run, replacing what was kept
        (:meth:`Gateway.keep_agent_state <parkgate.Gateway.keep_agent_state>`).

        Args:
            run_id: The run (it need not exist yet; one another token started is unknown).
            state: The state as text.
        """
        self._send(wire.keep_agent_state(run_id, state))

    def agent_state(self, run_id: str) -> str | None:
        """The agent state kept with the run.

        Args:
            run_id: The run.

        Returns:
            The state, or ``None`` when none is kept.
        """
        return self._send(wire.agent_state(run_id))

    def forget_agent_state(self, run_id: str) -> None:
        """Remove the agent state kept with the run, if any.

        Args:
            run_id: The run.
        """
        self._send(wire.forget_agent_state(run_id))

    def closed_follow_ups(
        self, limit: int = wire.DEFAULT_PAGE_ASKS, *, watcher: str | None = None, after: str | None = None
    ) -> list[AskView]:
        """Closed asks parked with ``follow_up`` whose follow-up is not done, earliest close first.

        Args:
            limit: The most asks returned (at most 1,000).
            watcher: Only the asks parked with ``follow_up`` naming this watcher.
            after: Only the asks listed after this ask (the last of the page before).

        Returns:
            Those asks (a claimed one only once its claim ran out; only this token's own).
        """
        return self._send(wire.closed_follow_ups(limit, watcher, after))

    def claim_follow_up(self, ask_id: str, lease: timedelta | float) -> bool:
        """Take the follow-up of an ask parked with ``follow_up`` for ``lease``.

        Args:
            ask_id: The ask whose follow-up is taken.
            lease: How long the claim holds (a positive timedelta or seconds).

        Returns:
            True for the one caller, in any process, that took it; false for everyone else.
        """
        return self._send(wire.claim_follow_up(ask_id, lease))

    def follow_up_done(self, ask_id: str) -> None:
        """Mark the ask's follow-up done: it is never listed or claimed again.

        Args:
            ask_id: The ask whose follow-up is done.
        """
        self._send(wire.follow_up_done(ask_id))

    def retry_callback(self, ask_id: str) -> AskView:
        """Re-arm the ask's failed callback: due now, its attempts counted from 0.

        Args:
            ask_id: The ask whose callback failed.

        Returns:
            The ask, with its ``callback``.

        Raises:
            CallbackNotFailed: The ask's callback had not failed.
        """
        return self._send(wire.retry_callback(ask_id))

    # -- the event log ---------------------------------------------------------------------
    def events(self, ask_id: str) -> list[LoggedEvent]:
        """The ask's timeline (``GET /v1/asks/{id}/events``): every event, in order.

        Args:
            ask_id: The ask's id.

        Returns:
            Its events, ``seq`` 1 first.

        Raises:
            UnknownAsk: No ask has this id (or it is another owner's).
        """
        return self._send(wire.ask_events(ask_id))

    def follow_events(self, after: int | None = None, *, hold: float = MAX_WAIT_SECONDS) -> Iterator[LoggedEvent]:
        """Every event as it is written (``GET /v1/events/stream``), for as long as it is iterated.

        Each stream the server holds ``hold`` seconds; the client then reconnects after the
        last event it saw, so none is repeated or skipped. A server that is out of reach,
        busy or without its store is tried again, waiting longer each time; after
        :data:`~parkgate.client.stream.RECONNECT_TRIES` failures in a row the last error is
        raised. A named token without ``operate`` gets its own asks' events only.

        Args:
            after: Start after the event with this ``id`` (0: from the first kept);
                ``None`` starts after the latest one now.
            hold: How long one stream lasts, in seconds (at most 60).

        Yields:
            Each event, with its ``id``, oldest first.

        Raises:
            Unreachable: The server could not be reached, this many times in a row.
        """
        parser = stream.EventParser(last_id=after)
        tries = 0
        while True:
            call = wire.event_stream(parser.last_id, hold)
            parser.restart()
            retry_after: float | None = None
            try:
                with self._http.stream(**self._connection.request_options(call)) as response:
                    if not response.is_success:
                        response.read()
                        responses.result(call, response)
                    tries = 0
                    for line in response.iter_lines():
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
            time.sleep(stream.pause_before_retry(tries, parser.retry_seconds, retry_after))

    def export_events(self, since: datetime | None = None, until: datetime | None = None) -> Iterator[LoggedEvent]:
        """Every event written in ``[since, until)``, oldest first (``GET /v1/export?what=events``),
        read as it is consumed.

        Args:
            since: The window's start (inclusive; a timezone-aware datetime); ``None``: the first kept.
            until: The window's end (exclusive); ``None``: now.

        Yields:
            Each event, with its ``id``.

        Raises:
            InputError: A moment without its timezone.
        """
        call = wire.event_export(since, until)
        try:
            with self._http.stream(**self._connection.request_options(call)) as response:
                if not response.is_success:
                    response.read()
                    responses.result(call, response)
                for line in response.iter_lines():
                    if line.strip():
                        yield stream.read_event(line)
        except httpx.HTTPError as error:
            raise Unreachable(str(error) or type(error).__name__) from error
