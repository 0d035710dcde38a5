"""Callback URLs parked through ``parkgate serve``: internal targets and unparsable URLs refused.

Loopback, the metadata address, private ranges, ``[::1]``,
IPv4 in other spellings (ideographic full stops too) or inside IPv6, ``localhost`` and
userinfo tricks are a 422 when the ask is parked, and so is a URL that does not parse or
whose host the client cannot encode; nothing is parked, and the asks around it are as
they were. ``PARKGATE_CALLBACK_ALLOW`` lets one internal receiver in, and its callback
arrives, also when the URL spells its host with ideographic full stops.
"""

from __future__ import annotations

from typing import Any

from attack import clean_env, serve_command, snapshot
from live_server import Receiver, messages_path, wait_until

REFUSED = [
    "http://127.0.0.1:9/hook",
    "http://169.254.169.254/latest/meta-data/",
    "http://10.0.0.7/hook",
    "http://192.168.1.1/hook",
    "http://172.16.5.4/hook",
    "http://[::1]:8080/hook",
    "http://[::ffff:127.0.0.1]/hook",
    "http://[fe80::1]/hook",
    "http://0.0.0.0/hook",
    "http://224.0.0.1/hook",
    "http://127.1/hook",
    "http://2130706433/hook",
    "http://0x7f000001/hook",
    "http://127\u30020\u30020\u30021:9/hook",  # ideographic full stops: IDNA's dots
    "http://127\uff0e0\uff0e0\uff0e1/hook",
    "http://127\uff610\uff610\uff611/hook",
    "http://127\u30021/hook",
    "http://localhost:9/hook",
    "http://api.localhost/hook",
    "http://127.0.0.1:1@example.com/hook",
    "http://user:pass@example.com/hook",
    # unparsable
    "http://[::1",
    "http://☃.com/",
    "http://\uff11\uff12\uff17.0.0.1/hook",  # fullwidth digits: a host the client cannot encode
    "http://xn--a.com/",
    "http://example.com/\r\nX-Injected: 1",
    "http://example.com:99999/",
    "http:///nohost",
    "ftp://example.com/",
]


def test_internal_and_unparsable_callbacks_are_refused_when_parked(launch: Any, database: Any) -> None:
    server = launch(database)
    with server.client() as http:
        http.post("/v1/asks", json={"conversation_id": "bystander", "prompt": "Mine?", "options": ["A", "B"]})
        before = snapshot(database)
        for url in REFUSED:
            response = http.post("/v1/asks", json={"conversation_id": "fence", "prompt": "Q?", "callback_url": url})
            assert response.status_code == 422, (url, response.text)
            body = response.json()
            assert body["error"] == "invalid_input" and "callback_url" in body["detail"], (url, body)
        assert http.post(messages_path("fence"), json={"text": "x"}).json()["kind"] == "pass"
        assert snapshot(database) == before
        # A public name is parked (its address is checked again when it is delivered).
        parked = http.post(
            "/v1/asks", json={"conversation_id": "fence-ok", "prompt": "Q?", "callback_url": "https://example.com/h"}
        )
        assert parked.status_code == 201, parked.text
        http.post(f"/v1/asks/{parked.json()['ask_id']}/cancel")


def test_an_allowed_internal_receiver_gets_its_callback(launch: Any, database: Any) -> None:
    receiver = Receiver().start()
    try:
        server = launch(database, extra_env={"PARKGATE_CALLBACK_ALLOW": f"127.0.0.1:{receiver.port}"})
        with server.client() as http:
            elsewhere = f"http://127.0.0.1:{receiver.port + 1}/"
            other = {"conversation_id": "a-1", "prompt": "Q?", "callback_url": elsewhere}
            other_port = http.post("/v1/asks", json=other)
            assert other_port.status_code == 422  # the allow-list names one port
            body = {"conversation_id": "a-2", "prompt": "Q?", "options": ["A"], "callback_url": receiver.url}
            parked = http.post("/v1/asks", json=body)
            assert parked.status_code == 201, parked.text
            http.post(messages_path("a-2"), json={"text": "1"})
        got = wait_until(receiver.got, 30, "the allowed callback")
        assert got[0].data["ask_id"] == parked.json()["ask_id"]
    finally:
        receiver.stop()


def test_a_bad_allow_list_stops_the_start(tmp_path: Any) -> None:
    done = serve_command("--db", f"sqlite:///{tmp_path / 'p.db'}", env=clean_env(PARKGATE_CALLBACK_ALLOW="10.0.0.0/33"))
    assert done.returncode == 1 and "10.0.0.0/33" in done.stderr and "Traceback" not in done.stderr


def test_a_host_spelt_with_ideographic_full_stops_is_the_address_it_spells(launch: Any, database: Any) -> None:
    """``127。0。0。1`` is 127.0.0.1 to the client: fenced as loopback, and, where the server
    allows that receiver, delivered once with ``Host: 127.0.0.1:port`` (an ASCII header),
    never failed and retried for a header that cannot be encoded."""
    receiver = Receiver().start()
    try:
        server = launch(database, extra_env={"PARKGATE_CALLBACK_ALLOW": f"127.0.0.1:{receiver.port}"})
        spelt = "http://127\u30020\uff0e0\uff611:{port}/hook"
        with server.client() as http:
            elsewhere = {"conversation_id": "d-1", "prompt": "Q?", "callback_url": spelt.format(port=receiver.port + 1)}
            other = http.post("/v1/asks", json=elsewhere)
            assert other.status_code == 422 and "(127.0.0.1)" in other.json()["detail"]  # loopback, another port
            body = {
                "conversation_id": "d-2",
                "prompt": "Q?",
                "options": ["A"],
                "callback_url": spelt.format(port=receiver.port),
            }
            parked = http.post("/v1/asks", json=body)
            assert parked.status_code == 201, parked.text
            http.post(messages_path("d-2"), json={"text": "1"})
            got = wait_until(receiver.got, 30, "the callback to the allowed receiver")
            assert got[0].headers["host"] == f"127.0.0.1:{receiver.port}"
            assert got[0].data["ask_id"] == parked.json()["ask_id"]
    finally:
        receiver.stop()
