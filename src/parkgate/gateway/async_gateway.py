"""The gateway for asyncio code: every :class:`~parkgate.gateway.Gateway` call, awaited."""

from __future__ import annotations

import asyncio
import contextlib
import inspect
from collections.abc import Awaitable, Callable, Iterable, Sequence
from datetime import datetime, timedelta
from typing import Any, Unpack

from parkgate.channels.base import Channel
from parkgate.clock import Clock
from parkgate.core import machine
from parkgate.core.events import LoggedEvent
from parkgate.core.history import HistoryPage, HistoryQuery
from parkgate.core.kinds import AskKind
from parkgate.core.model import Ask, CallbackState, Reply, Run
from parkgate.core.stats import Stats
from parkgate.errors import InputError
from parkgate.gateway import DEFAULT_TTL, Gateway, pause_before_reading
from parkgate.gateway.calls import InlineAnswer
from parkgate.gateway.checks import check_flag, check_id, wait_seconds
from parkgate.gateway.offload import GATEWAY_THREADS as GATEWAY_THREADS
from parkgate.gateway.offload import OffloadBatches
from parkgate.gateway.offload import offload as offload
from parkgate.gateway.options import AskFields, OwnedParkFields, OwnedRunFields
from parkgate.metrics import Metrics
from parkgate.store import DEFAULT_URL, Store
from parkgate.store.base import AskGauges
from parkgate.store.channel_tables import ChannelJob, ChannelPost
from parkgate.store.signal import Waiter
from parkgate.workflow import Workflow

#: Gateway's own defaults, read from its signature (so they cannot drift from it here).
_GATEWAY_DEFAULTS: dict[str, object] = {
    name: parameter.default for name, parameter in inspect.signature(Gateway.__init__).parameters.items()
}


async def wait_for_close(
    gateway: Gateway,
    ask_id: str,
    seconds: float,
    *,
    give_up: Callable[[], Awaitable[bool]] | None = None,
    turns: asyncio.Semaphore | None = None,
) -> Ask:
    """Read the ask until it is closed, ``seconds`` pass, or ``give_up()`` says so.

    The one wait every asyncio waiter uses (:meth:`AsyncGateway.wait`, the HTTP long-poll,
    the adapters). It holds no thread while waiting: it sleeps on the close signal
    (:mod:`parkgate.store.signal`), which wakes it as soon as the ask closes in this process or
    another, and reads again when the ask's TTL falls due (that read closes it as
    ``expired``), at the end of the wait, and every
    :data:`~parkgate.store.signal.FALLBACK_READ_SECONDS`, as :meth:`Gateway.wait` does.
    ``give_up`` is asked every :data:`GIVE_UP_CHECK_SECONDS` while it sleeps (no read);
    with ``turns``, every read takes a turn of that semaphore, so that many waits
    starting or ending together read the store a few at a time.
    """
    loop = asyncio.get_running_loop()
    deadline = loop.time() + seconds
    with gateway.signal.waiting(ask_id, loop=loop) as waiter:
        while True:
            waiter.clear()  # before the read: a close after it still wakes this wait
            async with turns if turns is not None else contextlib.nullcontext():
                ask = await offload(gateway.get, ask_id)
            remaining = deadline - loop.time()
            if not ask.is_open or remaining <= 0:
                return ask
            pause = pause_before_reading(ask, gateway.clock.now(), remaining)
            if await _sleep(waiter, pause, give_up):
                return ask


async def _sleep(waiter: Waiter, pause: float, give_up: Callable[[], Awaitable[bool]] | None) -> bool:
    """Sleep ``pause`` seconds or until the waiter is woken; whether ``give_up()`` said to
    stop (asked every :data:`GIVE_UP_CHECK_SECONDS` meanwhile)."""
    if give_up is None:
        await waiter.wait_async(pause)
        return False
    loop = asyncio.get_running_loop()
    until = loop.time() + pause
    while True:
        if await waiter.wait_async(min(until - loop.time(), GIVE_UP_CHECK_SECONDS)):
            return False
        if await give_up():
            return True
        if loop.time() >= until:
            return False


#: How often a wait with ``give_up`` (a long-poll whose client may hang up) asks it.
GIVE_UP_CHECK_SECONDS = 1.0


#: The most stored replies one commit of :meth:`AsyncGateway.handle`'s batches holds: a
#: flood of messages makes more commits, never one that holds the write lock for long.
RECORDED_AT_ONCE = 64


class AsyncGateway:
    """The same gateway for asyncio code: every :class:`Gateway` call, awaited.

    Each call runs the sync gateway's on a worker thread (:func:`offload`; ``wait`` holds none: it waits
    on the loop for a close, reading the store between). Build it as a Gateway is built
    (``AsyncGateway("sqlite:///parkgate.db", ttl=...)``, or keyword options alone), or
    wrap an existing one: ``AsyncGateway(gateway)`` or ``AsyncGateway(gateway=gateway)``.
    The wrapped Gateway is :attr:`sync`. ``async with AsyncGateway(...) as gw:`` closes
    it on exit, like ``await gw.close()``, also when it was passed in. The other
    arguments are :class:`Gateway`'s.

    Args:
        store_url: As for :class:`Gateway`, or the Gateway to wrap.
        gateway: The Gateway to wrap; no other option may be given with it.
        deliver: Run the deliverer as a task on the event loop.
    """

    def __init__(
        self,
        store_url: str | Gateway = DEFAULT_URL,
        *,
        gateway: Gateway | None = None,
        store: Store | None = None,
        ttl: timedelta | float = DEFAULT_TTL,
        clock: Clock | Callable[[], datetime] | None = None,
        escalate_after: int = machine.DEFAULT_ESCALATE_AFTER,
        workflows: Iterable[Workflow] = (),
        surface: str = "library",
        metrics: Metrics | None = None,
        deliver: bool = False,
    ) -> None:
        check_flag(deliver, "deliver")
        self._deliver = deliver
        self._delivering: asyncio.Task[None] | None = None
        if isinstance(store_url, Gateway):  # AsyncGateway(gateway): the positional form of gateway=
            if gateway is not None:
                raise InputError("pass the gateway once: AsyncGateway(gateway) or AsyncGateway(gateway=gateway)")
            gateway, store_url = store_url, DEFAULT_URL
        options: dict[str, Any] = {
            "store_url": store_url,
            "store": store,
            "ttl": ttl,
            "clock": clock,
            "escalate_after": escalate_after,
            "workflows": workflows,
            "surface": surface,
            "metrics": metrics,
        }
        if gateway is None:
            gateway = Gateway(**options)
        elif not isinstance(gateway, Gateway):
            raise InputError(f"gateway must be a Gateway, not {type(gateway).__name__} (a store URL goes first)")
        else:
            given = [name for name, value in options.items() if value != _GATEWAY_DEFAULTS[name]]
            if given:
                raise InputError(
                    f"{', '.join(given)} would build a new Gateway, but gateway= wraps an existing one: "
                    "set them on that Gateway instead"
                )
        self.sync: Gateway = gateway
        #: :meth:`Gateway.record_inline` for one answer, awaited: whether its reply was
        #: stored, in one commit with the others that came meanwhile (see :meth:`handle`).
        self.record_inline: OffloadBatches[InlineAnswer, bool] = OffloadBatches(
            gateway.record_inline, failed=False, most=RECORDED_AT_ONCE
        )
        self._start_delivering()

    def _start_delivering(self) -> None:
        """With ``deliver=True``, run the deliverer as a task on the running loop (if any yet)."""
        if not self._deliver or self._delivering is not None:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return  # built outside a loop: ``async with`` starts it
        from parkgate.gateway.delivering import deliverer_for  # loads httpx: only when delivering

        self._delivering = loop.create_task(deliverer_for(self.sync).run(), name="parkgate-deliver")

    # -- lifecycle -------------------------------------------------------------
    async def close(self) -> None:
        """Stop the deliverer task (``deliver=True``), then close the wrapped :class:`Gateway`
        and its store (:meth:`Gateway.close`)."""
        task, self._delivering = self._delivering, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        await offload(self.sync.close)

    async def __aenter__(self) -> AsyncGateway:
        self._start_delivering()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def register(self, workflow: Workflow) -> None:
        """Make ``workflow`` startable by name (:meth:`Gateway.register`)."""
        self.sync.register(workflow)  # no I/O: nothing to hand to a thread

    # -- parking ---------------------------------------------------------------
    async def ask(
        self,
        conversation_id: str,
        prompt: str,
        options: Sequence[str] | None = None,
        kind: AskKind | str | None = None,
        **fields: Unpack[AskFields],
    ) -> Reply:
        """Park a question in ``conversation_id`` (:meth:`Gateway.ask`).

        Args:
            conversation_id: The conversation to park in.
            prompt: The question to show.
            options: The labels of a choice ask.
            kind: ``choice`` or ``text``; ``choice`` when ``options`` are given.
            **fields: The ask's options by keyword (:class:`~parkgate.gateway.options.AskFields`),
                as :meth:`Gateway.ask` takes them.

        Returns:
            The ``asked`` reply.

        Raises:
            AskAlreadyOpen: An ask is open in the conversation and ``replace`` is false.
            InputError: An argument is not usable (see :meth:`Gateway.ask` for the others).
        """
        return await offload(self.sync.ask, conversation_id, prompt, options, kind, **fields)

    async def ask_from_text(self, conversation_id: str, skill_output: str, **fields: Unpack[OwnedParkFields]) -> Reply:
        """Park the stopping point marked in a skill's output (:meth:`Gateway.ask_from_text`).

        Args:
            conversation_id: The conversation to park in.
            skill_output: Text holding one stopping point.
            **fields: ``run_id``, ``ttl``, ``replace``, ``callback_url`` and ``owner``
                (:class:`~parkgate.gateway.options.OwnedParkFields`).

        Returns:
            The ``asked`` reply, or ``pass`` when the output marks no stopping point.

        Raises:
            AskAlreadyOpen: An ask is open in the conversation and ``replace`` is false.
            InputError: An argument is not usable (see :meth:`Gateway.ask_from_text`).
        """
        return await offload(self.sync.ask_from_text, conversation_id, skill_output, **fields)

    async def start(self, conversation_id: str, workflow: str, **fields: Unpack[OwnedRunFields]) -> Reply:
        """Start a registered workflow (:meth:`Gateway.start`).

        Args:
            conversation_id: The conversation to park the first phase in.
            workflow: A registered workflow's name.
            **fields: ``run_id``, ``replace``, ``owner``, ``responders``, ``quorum`` and
                ``post_to`` (:class:`~parkgate.gateway.options.OwnedRunFields`).

        Returns:
            The ``asked`` reply of the first phase.

        Raises:
            UnknownWorkflow: No workflow of that name is registered.
            InputError: An argument is not usable (see :meth:`Gateway.start`).
        """
        return await offload(self.sync.start, conversation_id, workflow, **fields)

    # -- replies ---------------------------------------------------------------
    async def handle(
        self,
        conversation_id: str,
        text: str | bytes,
        message_id: str | None = None,
        sender: str | None = None,
        *,
        ask_id: str | None = None,
    ) -> Reply:
        """Match one inbound message from ``sender`` against the parked ask, or the ask
        ``ask_id`` names (``late`` once it closed) (:meth:`Gateway.handle`).

        Where the store's reads never wait (SQLite), a message that finds nothing parked
        is decided on the loop's own thread (:meth:`Gateway.answer_inline`); the reply of
        one with a ``message_id`` is stored first, in a batch with the others that
        arrive meanwhile (one commit on a worker thread, :meth:`Gateway.record_inline`).
        Any other message is answered on a worker thread."""
        inline = self.sync.answer_inline(conversation_id, text, message_id, sender, ask_id=ask_id)
        if inline is not None and (inline.unrecorded is None or await self.record_inline(inline)):
            return inline.reply
        return await offload(self.sync.handle, conversation_id, text, message_id, sender, ask_id=ask_id)

    # -- reads -----------------------------------------------------------------
    async def get(self, ask_id: str) -> Ask:
        """One ask by id, closed if past its TTL (:meth:`Gateway.get`)."""
        return await offload(self.sync.get, ask_id)

    async def cancel(self, ask_id: str, *, outcome: str = "cancelled", reason: str | None = None) -> Ask:
        """An operator's cancel, ``outcome`` and ``reason`` saying why (:meth:`Gateway.cancel`)."""
        return await offload(self.sync.cancel, ask_id, outcome=outcome, reason=reason)

    async def expire(self, ask_id: str, *, outcome: str = "expired") -> Ask:
        """Close an open ask as ``expired`` now, ``outcome`` saying why (:meth:`Gateway.expire`)."""
        return await offload(self.sync.expire, ask_id, outcome=outcome)

    async def open_asks(
        self,
        limit: int | None = None,
        *,
        after: Ask | tuple[datetime, str] | None = None,
        owner: str | None = None,
        conversation_id: str | None = None,
    ) -> list[Ask]:
        """Open asks, oldest first, closing any past their TTL (:meth:`Gateway.open_asks`)."""
        return await offload(self.sync.open_asks, limit, after=after, owner=owner, conversation_id=conversation_id)

    async def count_open_asks(self, owner: str | None = None) -> int:
        """How many asks are open, all or ``owner``'s (:meth:`Gateway.count_open_asks`)."""
        return await offload(self.sync.count_open_asks, owner)

    async def count_pending_callbacks(self, owner: str) -> int:
        """How many of ``owner``'s callbacks wait to be delivered (:meth:`Gateway.count_pending_callbacks`)."""
        return await offload(self.sync.count_pending_callbacks, owner)

    async def events(self, ask_id: str) -> list[LoggedEvent]:
        """``ask_id``'s timeline, in order (:meth:`Gateway.events`)."""
        return await offload(self.sync.events, ask_id)

    async def events_after(
        self,
        after_id: int = 0,
        limit: int = 100,
        *,
        owner: str | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
    ) -> list[LoggedEvent]:
        """Every ask's events after ``after_id``, in order (:meth:`Gateway.events_after`)."""
        return await offload(self.sync.events_after, after_id, limit, owner=owner, since=since, until=until)

    async def last_event_id(self) -> int:
        """The ``id`` of the latest event (:meth:`Gateway.last_event_id`)."""
        return await offload(self.sync.last_event_id)

    async def prune_events(self, older_than: timedelta) -> int:
        """Delete closed asks' events older than ``older_than`` (:meth:`Gateway.prune_events`)."""
        return await offload(self.sync.prune_events, older_than)

    async def record_late(self, ask_id: str, sender: str | None, surface: str, text: str | None = None) -> Ask:
        """Record an answer that reached a closed ask (:meth:`Gateway.record_late`)."""
        return await offload(self.sync.record_late, ask_id, sender, surface, text)

    async def audit(self, limit: int | None = None) -> list[Ask]:
        """Open asks exactly as stored, closing nothing (:meth:`Gateway.audit`)."""
        return await offload(self.sync.audit, limit)

    async def history(self, query: HistoryQuery | None = None, **filters: Any) -> HistoryPage:
        """Asks of every status, filtered, a page at a time; lapsed ones closed first (:meth:`Gateway.history`)."""
        return await offload(self.sync.history, query, **filters)

    async def stats(
        self,
        since: datetime | None = None,
        until: datetime | None = None,
        by: str | None = None,
        *,
        owner: str | None = None,
    ) -> Stats:
        """The operator's figures for ``[since, until)`` (:meth:`Gateway.stats`)."""
        return await offload(self.sync.stats, since, until, by, owner=owner)

    async def asks_starting(self, prefix: str, limit: int = 10) -> list[Ask]:
        """Asks, open or closed, whose id starts with ``prefix``, as stored (:meth:`Gateway.asks_starting`)."""
        return await offload(self.sync.asks_starting, prefix, limit)

    async def parked(self, conversation_id: str) -> Ask | None:
        """The conversation's open ask as stored, closing nothing (:meth:`Gateway.parked`)."""
        return await offload(self.sync.parked, conversation_id)

    async def closed_follow_ups(
        self, limit: int = 100, *, owner: str | None = None, watcher: str | None = None, after: str | None = None
    ) -> list[Ask]:
        """Closed asks whose follow-up is pending (:meth:`Gateway.closed_follow_ups`)."""
        return await offload(self.sync.closed_follow_ups, limit, owner=owner, watcher=watcher, after=after)

    async def claim_follow_up(self, ask_id: str, lease: timedelta | float) -> bool:
        """Take an ask's follow-up for ``lease`` (:meth:`Gateway.claim_follow_up`)."""
        return await offload(self.sync.claim_follow_up, ask_id, lease)

    async def follow_up_done(self, ask_id: str) -> None:
        """Mark an ask's follow-up done (:meth:`Gateway.follow_up_done`)."""
        await offload(self.sync.follow_up_done, ask_id)

    async def run(self, run_id: str) -> Run | None:
        """The run with this id, or ``None`` (:meth:`Gateway.run`)."""
        return await offload(self.sync.run, run_id)

    async def finish_run(self, run_id: str, outcome: str = "done", *, output: Any = None) -> Run:
        """Mark a run complete and return it (:meth:`Gateway.finish_run`)."""
        return await offload(self.sync.finish_run, run_id, outcome, output=output)

    async def record_run(self, run_id: str, conversation_id: str, outcome: str, *, owner: str | None = None) -> Run:
        """Record a run that ended before it asked anything (:meth:`Gateway.record_run`)."""
        return await offload(self.sync.record_run, run_id, conversation_id, outcome, owner=owner)

    async def keep_agent_state(self, run_id: str, state: str) -> None:
        """Keep an agent SDK's state with a run (:meth:`Gateway.keep_agent_state`)."""
        await offload(self.sync.keep_agent_state, run_id, state)

    async def agent_state(self, run_id: str) -> str | None:
        """The agent state kept with a run, or ``None`` (:meth:`Gateway.agent_state`)."""
        return await offload(self.sync.agent_state, run_id)

    async def forget_agent_state(self, run_id: str) -> None:
        """Remove the agent state kept with a run (:meth:`Gateway.forget_agent_state`)."""
        await offload(self.sync.forget_agent_state, run_id)

    async def gauges(self) -> AskGauges:
        """The open, overdue and unread-due figures (:meth:`Gateway.gauges`)."""
        return await offload(self.sync.gauges)

    async def read_due(self, limit: int = 100) -> int:
        """Read the asks whose TTL has fallen due (:meth:`Gateway.read_due`)."""
        return await offload(self.sync.read_due, limit)

    async def callback_states(self, ask_ids: Sequence[str]) -> dict[str, CallbackState]:
        """Where these asks' callbacks stand (:meth:`Gateway.callback_states`)."""
        return await offload(self.sync.callback_states, ask_ids)

    async def failed_callbacks(self, limit: int = 100) -> list[Ask]:
        """The asks whose callback failed (:meth:`Gateway.failed_callbacks`)."""
        return await offload(self.sync.failed_callbacks, limit)

    async def retry_callback(self, ask_id: str) -> CallbackState:
        """Re-arm a failed callback (:meth:`Gateway.retry_callback`)."""
        return await offload(self.sync.retry_callback, ask_id)

    async def next_due(self) -> datetime | None:
        """The earliest due time among asks something waits on (:meth:`Gateway.next_due`)."""
        return await offload(self.sync.next_due)

    async def wait(self, ask_id: str, timeout: float | timedelta) -> Ask:
        """Wait until the ask closes or ``timeout`` passes (:meth:`Gateway.wait`).

        Holds no thread while waiting: it wakes on the close signal, as soon as the ask
        closes here or in another process, and reads the ask when its TTL falls due.
        """
        check_id(ask_id, "ask_id")
        return await wait_for_close(self.sync, ask_id, wait_seconds(timeout))

    # -- channels --------------------------------------------------------------
    async def add_channel(self, channel: Channel) -> None:
        """Add ``channel``: the deliverer runs its jobs (:meth:`Gateway.add_channel`)."""
        self.sync.add_channel(channel)  # no I/O: nothing to hand to a thread

    async def handle_in_channel(
        self,
        conversation_id: str,
        text: str | bytes,
        message_id: str | None,
        sender: str | None,
        *,
        ask_id: str | None = None,
    ) -> Reply:
        """A channel's message or click, its reply queued for the thread (:meth:`Gateway.handle_in_channel`)."""
        return await offload(self.sync.handle_in_channel, conversation_id, text, message_id, sender, ask_id=ask_id)

    async def channel_post(self, ask_id: str) -> ChannelPost | None:
        """Where ``ask_id`` is posted, as stored (:meth:`Gateway.channel_post`)."""
        return await offload(self.sync.channel_post, ask_id)

    async def channel_posts(self, ask_ids: list[str]) -> list[ChannelPost | None]:
        """Where each ask is posted, as stored (:meth:`Gateway.channel_posts`)."""
        return await offload(self.sync.channel_posts, ask_ids)

    async def open_asks_in(
        self, channel: str, thread_key: str, *, under: bool = False, limit: int = 2
    ) -> list[tuple[str, str]]:
        """The open asks posted in a thread (or under a place), as stored (:meth:`Gateway.open_asks_in`)."""
        return await offload(self.sync.open_asks_in, channel, thread_key, under=under, limit=limit)

    async def ask_in_thread(self, channel: str, thread_key: str) -> tuple[str, str] | None:
        """The latest ask posted in a thread, as stored (:meth:`Gateway.ask_in_thread`)."""
        return await offload(self.sync.ask_in_thread, channel, thread_key)

    async def failed_channel_jobs(self, limit: int = 100) -> list[tuple[ChannelJob, str | None]]:
        """The channel jobs given up, the latest first (:meth:`Gateway.failed_channel_jobs`)."""
        return await offload(self.sync.failed_channel_jobs, limit)
