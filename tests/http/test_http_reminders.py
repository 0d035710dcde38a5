"""Reminders and escalation through real servers on loopback, on SQLite and PostgreSQL.

An ask nobody reads sends its signed ``ask.reminder`` about its offset after parking and
its ``ask.closed`` at its TTL, each once; a person's message moves both later; an
escalation lets the responder it adds answer; two servers on one schema send each
reminder once; a server killed before a reminder's due time sends it after its restart.

The servers serve from a thread and read a :class:`~parkgate.ManualClock` the test
moves, except where the process is the point (kill -9, several processes on one schema).
A move wakes the server's deliverer: what it made due arrives well before a fallback
read would come (the bound on each wait), and nothing is sent before it is due.
"""

from __future__ import annotations

import base64
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from live_server import Receiver, Server, messages_path, wait_until

from parkgate import ManualClock
from parkgate.store.signal import FALLBACK_READ_SECONDS
from parkgate.webhooks import verify

SECRET = "whsec_" + base64.b64encode(b"the reminders suite's 32 byte key").decode()
#: The receivers listen on 127.0.0.1, an internal address: the servers allow it on purpose.
ENV = {"PARKGATE_CALLBACK_ALLOW": "127.0.0.1", "PARKGATE_WEBHOOK_SECRET": SECRET}
#: A step of the manual clock just short of a due time, or just past it.
TICK = 0.001
#: The bound on a wait for what a clock move made due: well inside a fallback read.
WOKEN = FALLBACK_READ_SECONDS / 2


def park(server: Server, conv: str, **fields: Any) -> str:
    body = {"conversation_id": conv, "prompt": "Deploy 1.4.2?", "options": ["Deploy", "Hold"], **fields}
    with server.client() as client:
        response = client.post("/v1/asks", json=body)
    assert response.status_code == 201, response.text
    return str(response.json()["ask_id"])


def arrivals(receiver: Receiver, ask_id: str) -> list[tuple[str, float]]:
    """(type, seconds since the epoch the receiver logged it) of each event of ``ask_id``."""
    return [(hit.type, hit.at) for hit in receiver.got() if hit.data["ask_id"] == ask_id]


def kinds(receiver: Receiver, ask_id: str) -> list[str]:
    """The types of the events of ``ask_id`` the receiver got, in order."""
    return [kind for kind, _ in arrivals(receiver, ask_id)]


def shown(server: Server, ask_id: str) -> dict[str, Any]:
    """The ask as a read sees it (a read past the TTL would close it)."""
    with server.client() as client:
        ask: dict[str, Any] = client.get(f"/v1/asks/{ask_id}").json()
    return ask


def test_an_unread_ask_reminds_then_expires_each_once_and_a_message_moves_both(
    database: Any, start_server: Any, receiver: Receiver, conv: str
) -> None:
    clock = ManualClock(datetime.now(UTC))
    server = start_server(database, extra_env=ENV, clock=clock)
    schedule = {"ttl_seconds": 4, "remind_after": 1, "callback_url": receiver.url}
    unread = park(server, f"{conv}-a", **schedule)
    touched = park(server, f"{conv}-b", **schedule)
    clock.advance(0.5)  # on before the message
    with server.client() as client:
        assert client.post(messages_path(f"{conv}-b"), json={"text": "what?"}).json()["kind"] == "retry"
    clock.advance(0.5 - TICK)  # 1 s after parking, less a tick: no reminder is due
    assert shown(server, unread)["reminders_sent"] == 0 and receiver.got() == []
    clock.advance(2 * TICK)  # the unread ask's reminder is due on time, never early
    wait_until(lambda: kinds(receiver, unread) == ["ask.reminder"], WOKEN, "the unread ask's reminder")
    assert shown(server, touched)["reminders_sent"] == 0  # moved by the message: 1 s after it
    clock.advance(0.5)  # 1 s after the message
    wait_until(lambda: kinds(receiver, touched) == ["ask.reminder"], WOKEN, "the touched ask's reminder")
    clock.advance(2.5 - 2 * TICK)  # 4 s after parking, less a tick: the TTL is not reached
    assert shown(server, unread)["status"] == "open"
    clock.advance(2 * TICK)  # the TTL is where it was for the unread ask
    wait_until(lambda: len(kinds(receiver, unread)) == 2, WOKEN, "the unread ask's close")
    assert kinds(receiver, unread) == ["ask.reminder", "ask.closed"]
    assert shown(server, touched)["status"] == "open"  # its TTL moved by the message: 4 s after it
    clock.advance(0.5)
    wait_until(lambda: len(kinds(receiver, touched)) == 2, WOKEN, "the touched ask's close")
    assert kinds(receiver, touched) == ["ask.reminder", "ask.closed"]
    for hit in receiver.got():
        event = verify(hit.raw_body, hit.headers, SECRET)  # every event signed
        assert hit.headers["webhook-id"].startswith(event["data"]["ask_id"])
    reminded = [hit.data for hit in receiver.got() if hit.type == "ask.reminder"]
    # A reminder is no touch: each ask is open, reminded once, with the misses it had.
    assert sorted((data["status"], data["reminders_sent"], data["mismatches"]) for data in reminded) == [
        ("open", 1, 0),
        ("open", 1, 1),
    ]
    assert shown(server, unread)["status"] == "expired"


def test_an_escalation_lets_the_responder_it_adds_answer(
    database: Any, start_server: Any, receiver: Receiver, conv: str
) -> None:
    clock = ManualClock(datetime.now(UTC))
    server = start_server(database, extra_env=ENV, clock=clock)
    ask_id = park(
        server,
        conv,
        ttl_seconds=60,
        responders=["U_ALICE"],
        escalate_after=1,
        escalate_to=["U_CAROL"],
        callback_url=receiver.url,
    )
    with server.client() as client:
        before = client.post(messages_path(conv), json={"text": "1", "sender": "U_CAROL"}).json()
        assert before["kind"] == "not_yours"
        clock.advance(1 + TICK)
        wait_until(lambda: [hit.type for hit in receiver.got()] == ["ask.escalated"], WOKEN, "the escalation")
        shown = client.get(f"/v1/asks/{ask_id}").json()
        assert shown["responders"] == ["U_ALICE", "U_CAROL"] and shown["escalated_at"] is not None
        after = client.post(messages_path(conv), json={"text": "1", "sender": "U_CAROL"}).json()
        assert (after["kind"], after["answer"]) == ("selected", "Deploy")
        assert client.get(f"/v1/asks/{ask_id}").json()["answered_by"] == "U_CAROL"


def test_a_schedule_not_shorter_than_the_ttl_is_refused_parking_nothing(
    database: Any, start_server: Any, conv: str
) -> None:
    server = start_server(database)
    with server.client() as client:
        body = {"conversation_id": conv, "prompt": "Ok?", "ttl_seconds": 10, "remind_after": [2, 10]}
        refused = client.post("/v1/asks", json=body)
        assert refused.status_code == 422 and "remind_after" in refused.text
        assert client.post(messages_path(conv), json={"text": "hi"}).json()["kind"] == "pass"


def test_a_server_killed_before_a_reminder_sends_it_after_its_restart(
    database: Any, start_server: Any, receiver: Receiver, conv: str
) -> None:
    server = start_server(database, extra_env=ENV, in_thread=False)  # a process, to kill
    ask_id = park(server, conv, ttl_seconds=60, remind_after=1, callback_url=receiver.url)
    server.kill()  # SIGKILL: nothing runs on the way out
    assert arrivals(receiver, ask_id) == []
    # The restart finds the reminder fell due while no server ran (its clock is past it).
    start_server(database, extra_env=ENV, clock=ManualClock(datetime.now(UTC) + timedelta(seconds=1.5)))
    wait_until(lambda: arrivals(receiver, ask_id), 20, "the reminder after the restart")
    assert [kind for kind, _ in arrivals(receiver, ask_id)] == ["ask.reminder"]


@pytest.mark.postgres
def test_two_servers_on_one_schema_send_each_reminder_once(
    store_url_factory: Any, start_server: Any, receiver: Receiver
) -> None:
    location = store_url_factory("postgres")
    # Two processes: the point is deliverers in several processes on one schema.
    first, second = (start_server(location, extra_env=ENV, in_thread=False) for _ in range(2))
    asks = [
        park(first if n % 2 else second, f"c-rem-{n}", ttl_seconds=60, remind_after=1, callback_url=receiver.url)
        for n in range(20)
    ]
    wait_until(lambda: all(arrivals(receiver, ask_id) for ask_id in asks), 30, "every reminder")
    delivered = "SELECT count(*) FROM outbox WHERE delivered_at IS NOT NULL"
    wait_until(lambda: location.raw_query(delivered) == [(20,)], 30, "every outbox row marked delivered")
    assert location.raw_query("SELECT count(*) FROM outbox") == [(20,)]  # queued once each
    assert sorted(hit.data["ask_id"] for hit in receiver.got()) == sorted(asks)  # sent once each


def test_the_events_subscriber_hears_every_asks_events_from_its_park(
    database: Any, start_server: Any, receiver: Receiver, conv: str
) -> None:
    clock = ManualClock(datetime.now(UTC))
    server = start_server(database, extra_env={**ENV, "PARKGATE_EVENTS_URL": receiver.url}, clock=clock)
    ask_id = park(server, conv, ttl_seconds=60, remind_after=1)  # no callback_url of its own
    wait_until(lambda: len(arrivals(receiver, ask_id)) == 1, 20, "the park")
    clock.advance(1 + TICK)
    wait_until(lambda: len(arrivals(receiver, ask_id)) == 2, WOKEN, "the reminder")
    with server.client() as client:
        assert client.post(messages_path(conv), json={"text": "1"}).json()["kind"] == "selected"
    wait_until(lambda: len(arrivals(receiver, ask_id)) == 3, 20, "the close")
    assert [kind for kind, _ in arrivals(receiver, ask_id)] == ["ask.opened", "ask.reminder", "ask.closed"]
    ids = [hit.headers["webhook-id"] for hit in receiver.got()]
    assert ids == [f"{ask_id}.opened", f"{ask_id}.reminder.1", f"{ask_id}.closed"]
    assert all(verify(hit.raw_body, hit.headers, SECRET)["data"]["ask_id"] == ask_id for hit in receiver.got())
