"""A closed gateway stays closed, on both stores (each store turns a call after close into
:class:`StoreClosed` in code of its own, so this is part of the store conformance suite).

``Gateway.close()`` (or the end of its ``with`` block) closes the store. Every later
call raises :class:`StoreClosed`, which names the way on, instead of quietly opening new
connections behind the caller's back; and the refused call changes nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import pytest

from parkgate import AsyncGateway, Gateway, ReplyKind, StoreClosed, StoreError
from parkgate.clock import ManualClock

if TYPE_CHECKING:
    from conftest import Reopen, StoreLocation

CALLS: dict[str, Callable[[Gateway, str], Any]] = {
    "handle": lambda gw, ask_id: gw.handle("chat-1", "1", message_id="m-1"),
    "ask": lambda gw, ask_id: gw.ask("chat-2", "Which?", ["A", "B"]),
    "get": lambda gw, ask_id: gw.get(ask_id),
    "cancel": lambda gw, ask_id: gw.cancel(ask_id),
    "open_asks": lambda gw, ask_id: gw.open_asks(),
    "audit": lambda gw, ask_id: gw.audit(),
    "wait": lambda gw, ask_id: gw.wait(ask_id, 0),
}


@pytest.mark.parametrize("call", sorted(CALLS))
def test_every_call_on_a_closed_gateway_is_refused_and_changes_nothing(
    call: str, gateway: Gateway, reopen: Reopen
) -> None:
    parked = gateway.ask("chat-1", "Deploy?", ["Deploy", "Hold"])
    gateway.close()

    with pytest.raises(StoreClosed) as refused:
        CALLS[call](gateway, parked.ask_id or "")
    assert isinstance(refused.value, StoreError)  # callers that catch StoreError still do
    assert "closed" in str(refused.value) and "new Gateway" in str(refused.value)

    # The ask is exactly as it was: still open, no miss counted, nothing else parked.
    fresh = reopen()
    [still] = fresh.open_asks()
    assert (still.id, still.status.value, still.mismatches) == (parked.ask_id, "open", 0)
    assert fresh.handle("chat-1", "1", message_id="m-1").kind is ReplyKind.SELECTED


def test_closing_twice_is_harmless_and_the_with_block_closes(store_location: StoreLocation, clock: ManualClock) -> None:
    with Gateway(store=store_location.open(), clock=clock) as gw:
        gw.ask("chat-1", "Deploy?", ["Deploy", "Hold"])
    gw.close()  # a second close is not an error
    with pytest.raises(StoreClosed):
        gw.handle("chat-1", "1")


async def test_a_closed_async_gateway_is_refused_too(store_location: StoreLocation, clock: ManualClock) -> None:
    agw = AsyncGateway(Gateway(store=store_location.open(), clock=clock))
    parked = await agw.ask("chat-1", "Deploy?", ["Deploy", "Hold"])
    await agw.close()
    with pytest.raises(StoreClosed):
        await agw.handle("chat-1", "1")
    with pytest.raises(StoreClosed):
        await agw.wait(parked.ask_id or "", 0.05)


def test_a_closed_store_refuses_its_own_calls_too(store_location: StoreLocation) -> None:
    """What a Gateway does not wrap (the schema version, the callback outbox, the health
    check's ping) says closed as well."""
    store = store_location.open()
    assert store.schema_version() > 0
    assert store.ping() is None  # open: the store answers
    store.close()
    for call in (
        store.schema_version,
        store.ping,
        lambda: store.claim_callbacks(datetime.now(UTC), datetime.now(UTC)),
        lambda: store.callback_done(1, datetime.now(UTC)),
        store.next_callback_at,
    ):
        with pytest.raises(StoreClosed):
            call()
