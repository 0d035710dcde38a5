"""The gateway for asyncio code: every :class:`~parkgate.gateway.Gateway` call, awaited."""

from __future__ import annotations

import asyncio
import contextlib
import inspect
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

from parkgate.checks import check_id, wait_seconds
from parkgate.clock import Clock
from parkgate.core import machine
from parkgate.core.expect import Expect
from parkgate.core.model import Ask
from parkgate.core.phrases import AskKind
from parkgate.errors import InputError
from parkgate.gateway import DEFAULT_TTL, WAIT_POLL_SECONDS, Gateway
from parkgate.metrics import Metrics
from parkgate.reply import Reply
from parkgate.store import DEFAULT_URL, Run, Store
from parkgate.workflow import Workflow

#: Gateway's own defaults, read from its signature (so they cannot drift from it here).
_GATEWAY_DEFAULTS: dict[str, object] = {
    name: parameter.default for name, parameter in inspect.signature(Gateway.__init__).parameters.items()
}


async def wait_for_close(
    gateway: Gateway,
    read: Callable[[], Awaitable[Ask]],
    seconds: float,
    *,
    first_pause: float,
    max_pause: float,
    give_up: Callable[[], Awaitable[bool]] | None = None,
) -> Ask:
    """Read the ask with ``read`` until it is closed, ``seconds`` pass, or ``give_up()``.

    Holds no thread while waiting: it wakes as soon as ``gateway`` closes an ask (from
    any thread), and otherwise reads again after a pause that grows by half each time
    from ``first_pause`` to ``max_pause``, for closes made by other processes.
    """
    loop = asyncio.get_running_loop()
    deadline = loop.time() + seconds
    woken = asyncio.Event()

    def wake() -> None:  # runs in the thread that committed the close
        with contextlib.suppress(RuntimeError):  # the loop may have closed meanwhile
            loop.call_soon_threadsafe(woken.set)

    remove = gateway._on_close(wake)
    try:
        pause = first_pause
        while True:
            woken.clear()  # before the read: a close after it still wakes this wait
            ask = await read()
            remaining = deadline - loop.time()
            if not ask.is_open or remaining <= 0 or (give_up is not None and await give_up()):
                return ask
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(woken.wait(), min(pause, remaining))
            pause = min(pause * 1.5, max_pause)
    finally:
        remove()


class AsyncGateway:
    """The same gateway for asyncio code: every :class:`Gateway` call, awaited.

    Each call runs the sync gateway's in a worker thread (``wait`` holds none: it waits
    on the loop for a close, reading the store between). Build it as a Gateway is built
    (``AsyncGateway("sqlite:///parkgate.db", ttl=...)``, or keyword options alone), or
    wrap an existing one: ``AsyncGateway(gateway)`` or ``AsyncGateway(gateway=gateway)``.
    The wrapped Gateway is :attr:`sync`. ``async with AsyncGateway(...) as gw:`` closes
    it on exit, like ``await gw.close()``, also when it was passed in.
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
    ) -> None:
        if isinstance(store_url, Gateway):  # AsyncGateway(gateway), as before gateway= existed
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
            self.sync: Gateway = Gateway(**options)
            return
        if not isinstance(gateway, Gateway):
            raise InputError(f"gateway must be a Gateway, not {type(gateway).__name__} (a store URL goes first)")
        given = [name for name, value in options.items() if value != _GATEWAY_DEFAULTS[name]]
        if given:
            raise InputError(
                f"{', '.join(given)} would build a new Gateway, but gateway= wraps an existing one: "
                "set them on that Gateway instead"
            )
        self.sync = gateway

    # -- lifecycle -------------------------------------------------------------
    async def close(self) -> None:
        """Close the wrapped :class:`Gateway` and its store (:meth:`Gateway.close`)."""
        await asyncio.to_thread(self.sync.close)

    async def __aenter__(self) -> AsyncGateway:
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
        run_id: str | None = None,
        ttl: timedelta | float | None = None,
        *,
        replace: bool = False,
        default: str | None = None,
        callback_url: str | None = None,
        phase: str | None = None,
        expect: Expect | str | Mapping[str, Any] | None = None,
    ) -> Reply:
        """Park a question in ``conversation_id`` (:meth:`Gateway.ask`)."""
        return await asyncio.to_thread(
            self.sync.ask,
            conversation_id,
            prompt,
            options,
            kind,
            run_id,
            ttl,
            replace=replace,
            default=default,
            callback_url=callback_url,
            phase=phase,
            expect=expect,
        )

    async def ask_from_text(
        self,
        conversation_id: str,
        skill_output: str,
        run_id: str | None = None,
        ttl: timedelta | float | None = None,
        *,
        replace: bool = False,
        callback_url: str | None = None,
    ) -> Reply:
        """Park the stopping point marked in a skill's output (:meth:`Gateway.ask_from_text`)."""
        return await asyncio.to_thread(
            self.sync.ask_from_text,
            conversation_id,
            skill_output,
            run_id,
            ttl,
            replace=replace,
            callback_url=callback_url,
        )

    async def start(
        self, conversation_id: str, workflow: str, *, replace: bool = False, run_id: str | None = None
    ) -> Reply:
        """Start a registered workflow (:meth:`Gateway.start`)."""
        return await asyncio.to_thread(self.sync.start, conversation_id, workflow, replace=replace, run_id=run_id)

    # -- replies ---------------------------------------------------------------
    async def handle(self, conversation_id: str, text: str | bytes, message_id: str | None = None) -> Reply:
        """Match one inbound message against the parked ask (:meth:`Gateway.handle`)."""
        return await asyncio.to_thread(self.sync.handle, conversation_id, text, message_id)

    # -- reads -----------------------------------------------------------------
    async def get(self, ask_id: str) -> Ask:
        """One ask by id, closed if past its TTL (:meth:`Gateway.get`)."""
        return await asyncio.to_thread(self.sync.get, ask_id)

    async def cancel(self, ask_id: str, *, outcome: str = "cancelled") -> Ask:
        """An operator's cancel, ``outcome`` saying why (:meth:`Gateway.cancel`)."""
        return await asyncio.to_thread(self.sync.cancel, ask_id, outcome=outcome)

    async def expire(self, ask_id: str) -> Ask:
        """Close an open ask as ``expired`` now (:meth:`Gateway.expire`)."""
        return await asyncio.to_thread(self.sync.expire, ask_id)

    async def open_asks(self, limit: int | None = None) -> list[Ask]:
        """Open asks, oldest first, closing any past their TTL (:meth:`Gateway.open_asks`)."""
        return await asyncio.to_thread(self.sync.open_asks, limit)

    async def audit(self, limit: int | None = None) -> list[Ask]:
        """Open asks exactly as stored, closing nothing (:meth:`Gateway.audit`)."""
        return await asyncio.to_thread(self.sync.audit, limit)

    async def run(self, run_id: str) -> Run | None:
        """The run with this id, or ``None`` (:meth:`Gateway.run`)."""
        return await asyncio.to_thread(self.sync.run, run_id)

    async def finish_run(self, run_id: str, outcome: str = "done") -> Run:
        """Mark a run complete and return it (:meth:`Gateway.finish_run`)."""
        return await asyncio.to_thread(self.sync.finish_run, run_id, outcome)

    async def wait(self, ask_id: str, timeout: float | timedelta) -> Ask:
        """Wait until the ask closes or ``timeout`` passes (:meth:`Gateway.wait`).

        Holds no thread while waiting. Wakes as soon as this gateway closes an ask (from
        any thread), and reads the store every :data:`~parkgate.gateway.WAIT_POLL_SECONDS`
        meanwhile, for closes made by other processes.
        """
        check_id(ask_id, "ask_id")
        return await wait_for_close(
            self.sync,
            lambda: self.get(ask_id),
            wait_seconds(timeout),
            first_pause=WAIT_POLL_SECONDS,
            max_pause=WAIT_POLL_SECONDS,
        )
