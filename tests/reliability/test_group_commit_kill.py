"""kill -9 of ``parkgate serve`` during bursts of concurrent messages (issue 41).

On SQLite the messages that arrive while a commit is in flight share the next
transaction (group commit), and each is answered only after the COMMIT that holds it;
on PostgreSQL each message commits on its own. Either way, a SIGKILL at any moment must
leave every acknowledged message (a 200 with its reply) stored with the reply the client
saw: a burst of 12 clients sending at once is killed once a random number of its
messages has committed, then the database is read. 3 kills on each store.
"""

from __future__ import annotations

import json
import random
import threading
from pathlib import Path
from typing import Any

from ._server import Server, Unacknowledged, post_message
from ._support import Message, StoreSpec, wait_for_rows

BURSTS = 3
CLIENTS = 12
PER_CLIENT = 20
#: Conversations a client writes in: half with an ask parked (a miss writes the ask and the
#: reply), half with nothing (a ``pass`` with its stored reply).
CONVERSATIONS = 4


def burst(server: Server, tag: str, killer: threading.Thread) -> dict[str, dict[str, Any]]:
    """``CLIENTS`` clients send ``PER_CLIENT`` messages each, all at once, until the server
    dies; the reply of every acknowledged one, by ``message_id``."""
    acked: dict[str, dict[str, Any]] = {}
    start = threading.Barrier(CLIENTS + 1)

    def client(n: int) -> None:
        with server.client(timeout=30) as http:
            start.wait()
            for m in range(PER_CLIENT):
                message = Message(f"{tag}-c{n}-{m % CONVERSATIONS}", "what?", f"{tag}-{n}-{m}")
                try:
                    acked[message.message_id] = post_message(http, message)
                except Unacknowledged:
                    return

    threads = [threading.Thread(target=client, args=(n,), daemon=True) for n in range(CLIENTS)]
    for thread in threads:
        thread.start()
    start.wait()
    killer.start()
    for thread in threads:
        thread.join(120)
        assert not thread.is_alive(), "a client did not finish"
    killer.join(120)
    return acked


def test_kill_9_during_bursts_of_concurrent_messages_loses_no_acknowledged_one(spec: StoreSpec, tmp_path: Path) -> None:
    spec.store().close()
    server = Server(spec.url, tmp_path / "server.log", schema=spec.schema, via_cli=True)
    rng = random.Random(41)
    total = CLIENTS * PER_CLIENT
    try:
        for round_no in range(BURSTS):
            server.start()
            tag = f"b{round_no}"
            with server.client() as http:
                for n in range(CLIENTS):
                    for c in range(0, CONVERSATIONS, 2):
                        body = {"conversation_id": f"{tag}-c{n}-{c}", "prompt": "Deploy?", "options": ["Go", "Hold"]}
                        assert http.post("/v1/asks", json=body).status_code == 201
            threshold = spec.count("inbound_messages") + rng.randrange(total // 10, total // 2)

            def kill_mid_burst(threshold: int = threshold) -> None:
                wait_for_rows(spec, "inbound_messages", threshold)
                server.kill()

            acked = burst(server, tag, threading.Thread(target=kill_mid_burst, daemon=True))
            assert server.proc is not None and server.proc.poll() is not None, "the server was not killed"
            assert 0 < len(acked) < total, f"the kill landed outside the burst ({len(acked)} of {total} answered)"
            rows = spec.query("SELECT message_id, reply FROM inbound_messages WHERE message_id LIKE ?", (f"{tag}-%",))
            stored = {message_id: json.loads(reply) for message_id, reply in rows}
            lost = sorted(set(acked) - set(stored))
            assert not lost, f"acknowledged and not stored after kill -9: {lost[:10]} ({len(lost)} in all)"
            for message_id, reply in acked.items():
                seen = stored[message_id]
                assert (seen["kind"], seen.get("ask_id")) == (reply["kind"], reply.get("ask_id")), message_id
    finally:
        server.stop()
