"""Callback delivery against real receivers on loopback: signed, fenced, bounded, independent.

Each receiver is a raw asyncio TCP server in the test's loop, so a test controls exactly
what goes on the wire (a gzip bomb, a drip, a huge body) and sees how much of it the
deliverer read. The store is the shared ``gateway``'s (SQLite).
"""

from __future__ import annotations

import asyncio
import base64
import gzip
import json
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta

import pytest
from standardwebhooks import Webhook

from parkgate import Gateway, ManualClock
from parkgate.core.events import EventKind
from parkgate.core.fence import parse_allow_list
from parkgate.core.model import CallbackStatus
from parkgate.delivery.outbox import OutboxDeliverer
from parkgate.delivery.signing import Signer, parse_secrets
from parkgate.errors import CallbackNotFailed, UnknownAsk
from parkgate.webhooks import WebhookVerificationError, verify

SECRET = "whsec_" + base64.b64encode(b"a test secret of thirty-two bytes").decode()
LOOPBACK = parse_allow_list("127.0.0.1")

Answer = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


class Wire:
    """What one receiver saw: each request's head and body, and the bytes it managed to send."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, bytes]] = []
        self.sent = 0


@asynccontextmanager
async def receiver(answer: Callable[[Wire, asyncio.StreamWriter], Awaitable[None]]) -> AsyncIterator[tuple[str, Wire]]:
    """A raw HTTP receiver on 127.0.0.1; yields its URL and what it saw."""
    wire = Wire()

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1")
            sizes = [line.split(":", 1)[1] for line in head.split("\r\n") if line.lower().startswith("content-length")]
            length = int(sizes[0]) if sizes else 0
            wire.requests.append((head, await reader.readexactly(length)))
            await answer(wire, writer)
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}/hook", wire
    finally:
        server.close()


async def ok(wire: Wire, writer: asyncio.StreamWriter) -> None:
    writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
    await writer.drain()


def headers_of(head: str) -> dict[str, str]:
    lines = head.split("\r\n")[1:]
    return {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines if line)}


def close_with_callback(gateway: Gateway, conversation: str, url: str) -> str:
    parked = gateway.ask(conversation, "Deploy?", ["Deploy", "Hold"], callback_url=url)
    gateway.handle(conversation, "1")
    return parked.ask_id or ""


def deliverer(gateway: Gateway, **options: object) -> OutboxDeliverer:
    options.setdefault("allow", LOOPBACK)
    options.setdefault("signer", None)
    return OutboxDeliverer(gateway.store, gateway.clock, **options)  # type: ignore[arg-type]


@pytest.fixture
def gateway(store: object) -> Gateway:
    """A gateway on the real clock: signatures carry the time, and receivers check it."""
    return Gateway(store=store)  # type: ignore[arg-type]


async def test_a_signed_callback_verifies_and_a_forged_one_does_not(gateway: Gateway) -> None:
    async with receiver(ok) as (url, wire):
        ask_id = close_with_callback(gateway, "signed", url)
        worker = deliverer(gateway, signer=Webhook(SECRET))
        assert await worker.deliver_due() == 1
    ((head, body),) = wire.requests
    headers = headers_of(head)
    assert headers["webhook-id"] == f"{ask_id}.closed" and headers["webhook-signature"].startswith("v1,")
    event = verify(body, headers, SECRET)
    assert (event["type"], event["data"]["ask_id"], event["data"]["status"]) == ("ask.closed", ask_id, "answered")
    forged = json.dumps({**json.loads(body), "type": "ask.reminder"}).encode()
    with pytest.raises(WebhookVerificationError):
        verify(forged, headers, SECRET)
    other = "whsec_" + base64.b64encode(b"another secret, thirty-two bytes").decode()
    with pytest.raises(WebhookVerificationError):
        verify(body, headers, other)


async def test_a_rotated_pair_of_secrets_signs_with_both_and_verifies_with_either(gateway: Gateway) -> None:
    old = "whsec_" + base64.b64encode(b"the secret being rotated out now").decode()
    async with receiver(ok) as (url, wire):
        close_with_callback(gateway, "rotated", url)
        worker = deliverer(gateway, signer=Signer([SECRET, old]))
        assert await worker.deliver_due() == 1
    ((head, body),) = wire.requests
    headers = headers_of(head)
    assert len(headers["webhook-signature"].split(" ")) == 2
    assert verify(body, headers, SECRET)["type"] == "ask.closed"
    assert verify(body, headers, old)["type"] == "ask.closed"
    assert Webhook(old).verify(body, headers)["type"] == "ask.closed"  # any Standard Webhooks library
    assert verify(body, headers, ["whsec_" + base64.b64encode(b"x" * 32).decode(), old])["type"] == "ask.closed"


@pytest.mark.parametrize(
    ("secret", "says"),
    [
        ("hunter2", "must start with whsec_"),
        ("whsec_not base64!", "not whsec_ followed by base64"),
        ("whsec_" + base64.b64encode(b"too short").decode(), "needs at least 24"),
    ],
)
def test_a_secret_that_cannot_sign_is_refused_saying_how_to_make_one(secret: str, says: str) -> None:
    with pytest.raises(ValueError, match=says) as refused:
        parse_secrets(f"{SECRET} {secret}")
    assert "os.urandom(32)" in str(refused.value)


async def test_a_410_gone_stops_the_retries_and_fails_the_callback_with_the_reason(gateway: Gateway) -> None:
    async def gone(wire: Wire, writer: asyncio.StreamWriter) -> None:
        writer.write(b"HTTP/1.1 410 Gone\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
        await writer.drain()

    async with receiver(gone) as (url, wire):
        ask_id = close_with_callback(gateway, "gone", url)
        worker = deliverer(gateway)
        assert await worker.deliver_due() == 0
        assert await worker.deliver_due() == 0  # no retry
    assert len(wire.requests) == 1
    state = gateway.callback_states([ask_id])[ask_id]
    assert state.status is CallbackStatus.FAILED and state.attempts == 1
    assert state.last_error is not None and "410 Gone" in state.last_error
    assert gateway.store.next_callback_at() is None


async def test_a_gzip_bomb_is_not_inflated_and_a_huge_body_is_not_read(gateway: Gateway) -> None:
    bomb = gzip.compress(b"\0" * (64 * 1024 * 1024), compresslevel=9)

    async def gzip_bomb(wire: Wire, writer: asyncio.StreamWriter) -> None:
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\n" + f"Content-Length: {len(bomb)}\r\n\r\n".encode())
        writer.write(bomb)
        await writer.drain()

    async def huge(wire: Wire, writer: asyncio.StreamWriter) -> None:
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 300000000\r\n\r\n")
        chunk = b"x" * 65536
        for _ in range(300_000_000 // 65536):
            writer.write(chunk)
            await writer.drain()
            wire.sent += len(chunk)

    async with receiver(gzip_bomb) as (bomb_url, bomb_wire), receiver(huge) as (huge_url, huge_wire):
        close_with_callback(gateway, "bomb", bomb_url)
        close_with_callback(gateway, "huge", huge_url)
        assert await deliverer(gateway).deliver_due() == 2  # a 200 is a 200, whatever follows it
    ((head, _),) = bomb_wire.requests
    assert headers_of(head)["accept-encoding"] == "identity"
    # It stopped reading and hung up: of 300 MB the receiver got rid of only what the
    # loopback socket buffers hold (a few MB), never the rest.
    assert huge_wire.sent < 300_000_000 // 10


async def test_a_slow_receiver_delays_no_other_callback(gateway: Gateway) -> None:
    async def drip(wire: Wire, writer: asyncio.StreamWriter) -> None:
        for byte in b"HTTP/1.1 200 OK\r\n":
            writer.write(bytes([byte]))
            await writer.drain()
            await asyncio.sleep(5)

    async with receiver(drip) as (slow_url, _), receiver(ok) as (fast_url, fast_wire):
        slow_id = close_with_callback(gateway, "slow", slow_url)
        close_with_callback(gateway, "fast", fast_url)
        worker = deliverer(gateway, deadline=2.0)
        started = time.monotonic()
        tasks = await worker.start_due()
        while not fast_wire.requests:
            await asyncio.sleep(0.01)
        fast_after = time.monotonic() - started
        results = await asyncio.gather(*tasks)
    assert sorted(results) == [False, True]
    assert fast_after < 2.0  # before the slow one's deadline: it waited for nothing
    state = gateway.callback_states([slow_id])[slow_id]
    assert state.status is CallbackStatus.PENDING and state.attempts == 1
    assert state.last_error is not None and "within 2 s" in state.last_error  # the deadline is per delivery


async def test_a_name_resolving_to_an_internal_address_is_refused_at_delivery(gateway: Gateway) -> None:
    async with receiver(ok) as (url, wire):
        port = url.split(":")[2].split("/")[0]
        ask_id = close_with_callback(gateway, "rebound", f"http://hooks.example:{port}/hook")

        async def rebinding(host: str, _: int) -> list[str]:
            return ["127.0.0.1"]  # what a hostile DNS answer says at delivery time

        assert await deliverer(gateway, allow=parse_allow_list(""), resolver=rebinding).deliver_due() == 0
        assert wire.requests == []  # never connected
        state = gateway.callback_states([ask_id])[ask_id]
        assert state.status is CallbackStatus.PENDING and "internal address" in (state.last_error or "")
        # Allowed on purpose, it goes to the address that was checked, with the URL's Host.
        allowed = deliverer(gateway, allow=parse_allow_list("127.0.0.1"), resolver=rebinding)
        gateway.store.callback_failed(0, "", None)  # a no-op on a missing row: nothing else moves
        await _make_due(gateway, ask_id)
        assert await allowed.deliver_due() == 1
    ((head, _),) = wire.requests
    assert headers_of(head)["host"] == f"hooks.example:{port}"


async def _make_due(gateway: Gateway, ask_id: str) -> None:
    with gateway.store.transaction() as tx:
        tx.send(  # type: ignore[attr-defined]
            "UPDATE outbox SET next_attempt_at = ? WHERE ask_id = ?",
            (tx.dialect.encode_time(datetime.now(UTC) - timedelta(seconds=1)), ask_id),  # type: ignore[attr-defined]
        )


async def test_an_unparsable_url_fails_at_once_and_is_never_claimed_again(gateway: Gateway) -> None:
    ask_id = close_with_callback(gateway, "bad-url", "http://hooks.test/ok")
    with gateway.store.transaction() as tx:  # as a row written before the park-time check existed
        tx.send("UPDATE outbox SET url = ? WHERE ask_id = ?", ("http://[::1", ask_id))  # type: ignore[attr-defined]
    worker = deliverer(gateway)
    assert await worker.deliver_due() == 0
    state = gateway.callback_states([ask_id])[ask_id]
    assert state.status is CallbackStatus.FAILED and state.attempts == 1
    assert (state.last_error or "").startswith("undeliverable")
    assert gateway.store.claim_callbacks(datetime.now(UTC) + timedelta(days=1), datetime.now(UTC)) == []


async def test_attempts_are_capped_then_failed_until_an_operator_rearms_it(gateway: Gateway) -> None:
    async def refuse(wire: Wire, writer: asyncio.StreamWriter) -> None:
        writer.write(b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n\r\n")
        await writer.drain()

    async with receiver(refuse) as (url, wire):
        ask_id = close_with_callback(gateway, "capped", url)
        worker = deliverer(gateway, max_attempts=3, base_delay=0.01, max_delay=0.01)
        for _ in range(3):
            await worker.deliver_due()
            await asyncio.sleep(0.05)
        assert await worker.deliver_due() == 0
        assert len(wire.requests) == 3  # no fourth attempt
        state = gateway.callback_states([ask_id])[ask_id]
        assert (state.status, state.attempts, state.last_error) == (CallbackStatus.FAILED, 3, "HTTP 503")
        assert gateway.gauges().callbacks_failed == 1
        rearmed = gateway.retry_callback(ask_id)
        assert (rearmed.status, rearmed.attempts) == (CallbackStatus.PENDING, 0)
        await worker.deliver_due()
        assert len(wire.requests) == 4
    with pytest.raises(CallbackNotFailed, match="pending"):
        gateway.retry_callback(ask_id)
    with pytest.raises(UnknownAsk):
        gateway.retry_callback("no-such-ask")


async def test_an_open_ask_with_a_callback_shows_it_pending(gateway: Gateway) -> None:
    parked = gateway.ask("open", "Deploy?", ["Deploy", "Hold"], callback_url="http://hooks.test/h")
    assert gateway.callback_states([parked.ask_id or ""]) == {}  # nothing queued while it is open
    with pytest.raises(CallbackNotFailed, match="no callback queued"):
        gateway.retry_callback(parked.ask_id or "")


def test_manual_clock_gateways_still_deliver(store: object) -> None:
    gateway = Gateway(store=store, clock=ManualClock())  # type: ignore[arg-type]
    assert gateway.store.next_callback_at() is None


@pytest.mark.engines("the delivered event locks its ask's row on PostgreSQL, in the transaction that marks the outbox")
async def test_each_attempt_is_a_delivered_event_with_the_receivers_status(
    store: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def once_down(wire: Wire, writer: asyncio.StreamWriter) -> None:
        if len(wire.requests) == 1:  # the first attempt: the receiver is down for a moment
            writer.write(b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
            await writer.drain()
            return
        await ok(wire, writer)

    async with receiver(once_down) as (url, wire), receiver(ok) as (subscriber, seen):
        monkeypatch.setenv("PARKGATE_CALLBACK_ALLOW", "127.0.0.1")
        monkeypatch.setenv("PARKGATE_EVENTS_URL", subscriber)
        gateway = Gateway(store=store)  # type: ignore[arg-type]
        parked = gateway.ask("flaky", "Deploy?", ["Deploy", "Hold"], callback_url=url, owner="team-a")
        gateway.handle("flaky", "1")
        ask_id = parked.ask_id or ""
        worker = deliverer(gateway, base_delay=0.0, max_delay=0.0)
        await worker.deliver_due()  # the callback fails (503), the subscriber's two events arrive
        await worker.deliver_due()  # the callback's retry is delivered
    assert len(wire.requests) == 2 and len(seen.requests) == 2
    logged = [event for event in gateway.events(ask_id) if event.type is EventKind.DELIVERED]
    assert {event.owner for event in logged} == {"team-a"}  # the ask's tenant reads them
    deliveries = [event.data for event in logged]
    callback = [(d["attempt"], d["status"], d["result"]) for d in deliveries if d["target"] == "callback"]
    assert callback == [(1, 503, "retrying"), (2, 200, "delivered")]
    events = sorted(
        (d["event_id"], d["attempt"], d["status"], d["result"]) for d in deliveries if d["target"] == "events"
    )
    assert events == [(f"{ask_id}.closed", 1, 200, "delivered"), (f"{ask_id}.opened", 1, 200, "delivered")]
    assert {d["host"] for d in deliveries} == {"127.0.0.1"}
    assert all(isinstance(d["latency_ms"], float) and d["latency_ms"] >= 0 for d in deliveries)
    assert gateway.events(ask_id)[-1].data["result"] == "delivered"  # after the close, in the order they were written


async def test_a_refused_connection_is_an_attempt_with_no_status_then_failed(gateway: Gateway) -> None:
    async with receiver(ok) as (url, _wire):
        pass  # closed: nothing listens on its port any more
    ask_id = close_with_callback(gateway, "refused", url)
    worker = deliverer(gateway, max_attempts=2, base_delay=0.0, max_delay=0.0)
    await worker.deliver_due()
    await worker.deliver_due()
    deliveries = [event for event in gateway.events(ask_id) if event.type is EventKind.DELIVERED]
    assert [(e.data["attempt"], e.data["status"], e.data["result"]) for e in deliveries] == [
        (1, None, "retrying"),
        (2, None, "failed"),
    ]
    assert all(e.sender is None and e.data["target"] == "callback" for e in deliveries)
