"""The close signal says which waiters sleep: a test orders its threads by that, not by time.

A waiter counts as asleep from the moment it blocks in :meth:`Waiter.wait` (or awaits
:meth:`Waiter.wait_async`) until it wakes; a waiter that only reads never counts.
:meth:`CloseSignal.wait_until_asleep` blocks until enough waiters on an ask sleep, so a
close sent after it is certain to find the waiter asleep, and that close wakes it.
"""

from __future__ import annotations

import asyncio
import threading

from parkgate.store.signal import CloseSignal


def _sleeper(signal: CloseSignal, ask_id: str, woken: list[bool]) -> threading.Thread:
    def body() -> None:
        with signal.waiting(ask_id) as waiter:
            woken.append(waiter.wait(30))

    thread = threading.Thread(target=body)
    thread.start()
    return thread


def test_a_waiter_counts_as_asleep_while_it_blocks_and_the_close_wakes_it() -> None:
    signal = CloseSignal()
    woken: list[bool] = []
    assert signal.asleep("ask-1") == 0
    thread = _sleeper(signal, "ask-1", woken)
    assert signal.wait_until_asleep("ask-1", 10)
    assert signal.asleep("ask-1") == 1 and signal.asleep("ask-2") == 0  # per ask
    signal.closed(["ask-1"])
    thread.join(10)
    assert woken == [True]  # the close woke it, not its timeout
    assert signal.asleep("ask-1") == 0


def test_a_waiter_that_only_reads_is_never_asleep() -> None:
    signal = CloseSignal()
    with signal.waiting("ask-1"):
        assert signal.asleep("ask-1") == 0
        assert not signal.wait_until_asleep("ask-1", 0.01)  # nobody will sleep: it gives up


def test_it_waits_for_as_many_sleepers_as_asked() -> None:
    signal = CloseSignal()
    woken: list[bool] = []
    first = _sleeper(signal, "ask-1", woken)
    assert signal.wait_until_asleep("ask-1", 10)
    second = _sleeper(signal, "ask-1", woken)
    assert signal.wait_until_asleep("ask-1", 10, count=2)
    assert signal.asleep("ask-1") == 2
    signal.closed(["ask-1"])
    first.join(10)
    second.join(10)
    assert woken == [True, True] and signal.asleep("ask-1") == 0


def test_a_waiter_whose_time_runs_out_is_awake_again() -> None:
    signal = CloseSignal()
    with signal.waiting("ask-1") as waiter:
        assert waiter.wait(0) is False
        assert signal.asleep("ask-1") == 0


async def test_an_asyncio_waiter_counts_as_asleep_while_it_awaits() -> None:
    signal = CloseSignal()
    loop = asyncio.get_running_loop()

    async def wait() -> bool:
        with signal.waiting("ask-1", loop=loop) as waiter:
            return await waiter.wait_async(30)

    task = asyncio.create_task(wait())
    assert await asyncio.to_thread(signal.wait_until_asleep, "ask-1", 10)
    signal.closed(["ask-1"])
    assert await asyncio.wait_for(task, 10) is True
    assert signal.asleep("ask-1") == 0
