"""Reminders and escalation through real servers on loopback, on SQLite and PostgreSQL.

An ask nobody reads sends its signed ``ask.reminder`` about its offset after parking and
its ``ask.closed`` at its TTL, each once; a person's message moves both later; an
escalation lets the responder it adds answer; two servers on one schema send each
reminder once; a server killed before a reminder's due time sends it after its restart.

Times are bounds on behaviour (not early; not by a fallback read), never speed goals:
the lateness figures live in ``bench/``.
"""

from __future__ import annotations

import base64
import time
from typing import Any

import pytest
from live_server import Receiver, Server, messages_path, wait_until

from parkgate.signal import FALLBACK_READ_SECONDS
from parkgate.webhooks import verify

SECRET = "whsec_" + base64.b64encode(b"the reminders suite's 32 byte key").decode()
#: The receivers listen on 127.0.0.1, an internal address: the servers allow it on purpose.
ENV = {"PARKGATE_CALLBACK_ALLOW": "127.0.0.1", "PARKGATE_WEBHOOK_SECRET": SECRET}


def park(server: Server, conv: str, **fields: Any) -> str:
    body = {"conversation_id": conv, "prompt": "Deploy 1.4.2?", "options": ["Deploy", "Hold"], **fields}
    with server.client() as client:
        response = client.post("/v1/asks", json=body)
    assert response.status_code == 201, response.text
    return str(response.json()["ask_id"])


def arrivals(receiver: Receiver, ask_id: str) -> list[tuple[str, float]]:
    """(type, seconds since the epoch the receiver logged it) of each event of ``ask_id``."""
    return [(hit.type, hit.at) for hit in receiver.got() if hit.data["ask_id"] == ask_id]


def test_an_unread_ask_reminds_then_expires_each_once_and_a_message_moves_both(
    database: Any, start_server: Any, receiver: Receiver, conv: str
) -> None:
    server = start_server(database, extra_env=ENV)
    schedule = {"ttl_seconds": 4, "remind_after": 1, "callback_url": receiver.url}
    parked_at = time.time()
    unread = park(server, f"{conv}-a", **schedule)
    touched = park(server, f"{conv}-b", **schedule)
    time.sleep(0.5)  # real time: the server's clock runs on before the message
    touched_at = time.time()  # the server touches the ask after this
    with server.client() as client:
        assert client.post(messages_path(f"{conv}-b"), json={"text": "what?"}).json()["kind"] == "retry"
    wait_until(lambda: len(arrivals(receiver, touched)) == 2, 30, "both asks' reminders and closes")
    wait_until(lambda: len(arrivals(receiver, unread)) == 2, 30, "the unread ask's events")
    (reminder, reminded_at), (closed, closed_at) = arrivals(receiver, unread)
    assert (reminder, closed) == ("ask.reminder", "ask.closed")
    assert 1 <= reminded_at - parked_at < 1 + FALLBACK_READ_SECONDS  # on its due time, never early
    assert 4 <= closed_at - parked_at < 4 + FALLBACK_READ_SECONDS  # the TTL is where it was
    (reminder, reminded_at), (closed, closed_at) = arrivals(receiver, touched)
    assert (reminder, closed) == ("ask.reminder", "ask.closed")
    assert reminded_at - touched_at >= 1 and closed_at - touched_at >= 4  # both moved by the message
    for hit in receiver.got():
        event = verify(hit.raw_body, hit.headers, SECRET)  # every event signed
        assert hit.headers["webhook-id"].startswith(event["data"]["ask_id"])
    reminded = [hit.data for hit in receiver.got() if hit.type == "ask.reminder"]
    # A reminder is no touch: each ask is open, reminded once, with the misses it had.
    assert sorted((data["status"], data["reminders_sent"], data["mismatches"]) for data in reminded) == [
        ("open", 1, 0),
        ("open", 1, 1),
    ]
    with server.client() as client:
        assert client.get(f"/v1/asks/{unread}").json()["status"] == "expired"


def test_an_escalation_lets_the_responder_it_adds_answer(
    database: Any, start_server: Any, receiver: Receiver, conv: str
) -> None:
    server = start_server(database, extra_env=ENV)
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
        wait_until(lambda: [hit.type for hit in receiver.got()] == ["ask.escalated"], 20, "the escalation")
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
    server = start_server(database, extra_env=ENV)
    ask_id = park(server, conv, ttl_seconds=60, remind_after=1, callback_url=receiver.url)
    server.kill()  # SIGKILL: nothing runs on the way out
    time.sleep(1.5)  # real time: the reminder falls due while no server runs
    assert arrivals(receiver, ask_id) == []
    server.start()
    wait_until(lambda: arrivals(receiver, ask_id), 20, "the reminder after the restart")
    assert [kind for kind, _ in arrivals(receiver, ask_id)] == ["ask.reminder"]


@pytest.mark.postgres
def test_two_servers_on_one_schema_send_each_reminder_once(
    store_url_factory: Any, start_server: Any, receiver: Receiver
) -> None:
    location = store_url_factory("postgres")
    first, second = (start_server(location, extra_env=ENV) for _ in range(2))
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
    server = start_server(database, extra_env={**ENV, "PARKGATE_EVENTS_URL": receiver.url})
    ask_id = park(server, conv, ttl_seconds=60, remind_after=1)  # no callback_url of its own
    wait_until(lambda: len(arrivals(receiver, ask_id)) == 2, 20, "the park and the reminder")
    with server.client() as client:
        assert client.post(messages_path(conv), json={"text": "1"}).json()["kind"] == "selected"
    wait_until(lambda: len(arrivals(receiver, ask_id)) == 3, 20, "the close")
    assert [kind for kind, _ in arrivals(receiver, ask_id)] == ["ask.opened", "ask.reminder", "ask.closed"]
    ids = [hit.headers["webhook-id"] for hit in receiver.got()]
    assert ids == [f"{ask_id}.opened", f"{ask_id}.reminder.1", f"{ask_id}.closed"]
    assert all(verify(hit.raw_body, hit.headers, SECRET)["data"]["ask_id"] == ask_id for hit in receiver.got())
