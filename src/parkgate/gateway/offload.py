"""The worker threads every blocking gateway call runs on when awaited (:func:`offload`)."""

from __future__ import annotations

import asyncio
import contextvars
import functools
import os
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import ParamSpec, TypeVar

Params = ParamSpec("Params")
Result = TypeVar("Result")

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
