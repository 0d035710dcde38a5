"""The worker threads every blocking gateway call runs on when awaited (:func:`offload`),
and calls gathered into batches for them (:class:`OffloadBatches`)."""

from __future__ import annotations

import asyncio
import contextvars
import functools
import os
import threading
import weakref
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Generic, ParamSpec, TypeVar

Params = ParamSpec("Params")
Result = TypeVar("Result")
Item = TypeVar("Item")

#: Blocking gateway calls running at once in a process: as many as Starlette runs sync
#: routes at once (anyio's default of 40 threads), so awaiting the gateway admits as much
#: concurrency as sync routes would.
GATEWAY_THREADS = 40
_threads: ThreadPoolExecutor | None = None
_threads_lock = threading.Lock()


def _gateway_threads() -> ThreadPoolExecutor:
    """The process's pool of :data:`GATEWAY_THREADS` threads, started on first use."""
    global _threads
    with _threads_lock:
        if _threads is None:
            _threads = ThreadPoolExecutor(max_workers=GATEWAY_THREADS, thread_name_prefix="parkgate-gateway")
        return _threads


def _forget_threads() -> None:
    """In a forked child the parent's threads do not exist: the next call starts a new pool."""
    global _threads, _threads_lock
    _threads, _threads_lock = None, threading.Lock()


os.register_at_fork(after_in_child=_forget_threads)


async def offload(call: Callable[Params, Result], *args: Params.args, **kwargs: Params.kwargs) -> Result:
    """``call(*args, **kwargs)`` on a worker thread, awaited: how every blocking gateway call
    (a store read or write) reaches asyncio code, so the loop never blocks on one.

    The threads are one pool per process (:data:`GATEWAY_THREADS`), shared by every event
    loop in it; the call runs in a copy of the caller's context, as with
    :func:`asyncio.to_thread`. A cancelled caller stops waiting at once (a timeout stays
    a timeout); a call already running goes on to its end on its thread, its result dropped.
    """
    context = contextvars.copy_context()
    loop = asyncio.get_running_loop()
    return await loop.run_in_executor(_gateway_threads(), functools.partial(context.run, call, *args, **kwargs))


class _Batching(Generic[Item, Result]):
    """One event loop's items waiting for the next batch, and the task that runs batches."""

    def __init__(self) -> None:
        self.waiting: list[tuple[Item, asyncio.Future[Result]]] = []
        self.task: asyncio.Task[None] | None = None


class OffloadBatches(Generic[Item, Result]):
    """Items awaited one by one, handed to ``call`` in batches on a worker thread.

    The first item of an event loop starts a batch at once (on the loop's next turn, so
    the items of the same turn join it); those that arrive while a batch runs wait and
    make the next one: each call takes as many as came during the one before, up to
    ``most`` (a flood of items never makes one call long), a group commit's shape without
    a timer. An error in ``call`` gives every item of its batch ``failed`` (each caller
    then does its own work alone, and meets its own error).

    Args:
        call: The blocking call: one result for each item, in order.
        failed: What an item gets when ``call`` raised.
        most: The most items one call takes.
    """

    def __init__(self, call: Callable[[Sequence[Item]], Sequence[Result]], failed: Result, most: int) -> None:
        if most < 1:
            raise ValueError("most must be 1 or more")
        self._call = call
        self._failed = failed
        self._most = most
        self._loops: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Batching[Item, Result]] = (
            weakref.WeakKeyDictionary()
        )

    async def __call__(self, item: Item) -> Result:
        """``item``'s result, once the batch that holds it has run."""
        loop = asyncio.get_running_loop()
        batching = self._loops.get(loop)
        if batching is None:
            batching = self._loops[loop] = _Batching()
        future: asyncio.Future[Result] = loop.create_future()
        batching.waiting.append((item, future))
        if batching.task is None:
            batching.task = loop.create_task(self._run(batching))
        return await future

    async def _run(self, batching: _Batching[Item, Result]) -> None:
        """Run batches until none waits."""
        batch: list[tuple[Item, asyncio.Future[Result]]] = []
        try:
            while batching.waiting:
                batch, batching.waiting = batching.waiting[: self._most], batching.waiting[self._most :]
                try:
                    results: Sequence[Result] = await offload(self._call, [item for item, _ in batch])
                except Exception:
                    results = [self._failed] * len(batch)
                for (_, future), result in zip(batch, results, strict=True):
                    if not future.done():
                        future.set_result(result)
        finally:
            batching.task = None
            for _, future in [*batch, *batching.waiting]:
                future.cancel()  # the loop is closing: nobody is left to run them (a no-op if done)
            batching.waiting = []
